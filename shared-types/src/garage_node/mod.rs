//! GarageNode v1beta1: one Garage node, operator-run or external.

mod spec;
mod status;

pub use spec::*;
pub use status::*;
