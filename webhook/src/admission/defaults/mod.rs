//! Webhook defaulting (`DEF-*`) and the JSON patch the
//! mutating webhook returns. GarageAdminToken and GarageReferenceGrant have no
//! defaulter.
//!
//! Only the defaults the CRD schema cannot express are set here; the CRD's structural
//! defaults are applied by the API server and are not repeated, so an
//! object written by a client keeps exactly the values the schema and these
//! defaulters give it.

mod bucket;
mod cluster;
pub mod key;
mod node;
mod patch;

pub use bucket::{DEFAULT_INDEX_DOCUMENT, default_bucket};
pub use cluster::{default_cluster, default_cluster_v1beta1};
pub use key::default_key;
pub use node::default_node;
pub use patch::patch;

#[cfg(test)]
mod tests;
