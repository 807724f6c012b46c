//! GarageKey v1beta1: a Garage S3 access key and its permissions.

mod spec;
mod status;

pub use spec::*;
pub use status::*;
