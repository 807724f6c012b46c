//! GarageCluster: v1beta2 is the storage version; v1beta1 is served,
//! deprecated, and converted by the webhook. `common` holds the types both
//! versions share.

pub mod common;
pub mod v1beta1;
pub mod v1beta2;
