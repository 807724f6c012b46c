//! GarageCluster v1beta1: the deprecated flat shape, kept so existing
//! manifests keep working. New manifests should use v1beta2.

mod federation;
mod spec;
mod status;
mod storage;

pub use federation::*;
pub use spec::*;
pub use status::*;
pub use storage::*;
