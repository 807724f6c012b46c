//! GarageReferenceGrant v1beta1: cross-namespace reference permission.

mod permits;
mod spec;
mod status;

pub use permits::*;
pub use spec::*;
pub use status::*;
