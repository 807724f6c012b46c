//! GarageReferenceGrant v1beta1: cross-namespace reference permission.

mod spec;
mod status;

pub use spec::*;
pub use status::*;
