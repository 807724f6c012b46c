//! GarageAdminToken v1beta1: a Garage Admin API token written to a Secret.

mod spec;
mod status;

pub use spec::*;
pub use status::*;
