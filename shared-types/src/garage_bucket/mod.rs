//! GarageBucket v1beta1 (storage version) and its served v1alpha1 schema.

mod spec;
mod status;
pub mod v1alpha1;

pub use spec::*;
pub use status::*;
