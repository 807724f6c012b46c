//! GarageBucket v1alpha1: the historical schema, served for old manifests.
//! The API server stores these objects as v1beta1 without a conversion
//! webhook, because the stored shape is shared.

mod spec;
mod status;

pub use spec::*;
pub use status::*;
