//! The GarageBucket decisions: the plan of a pass ([`operations`]: the bucket created under
//! its reservation alias, its aliases, settings and key grants, with the write-ahead status
//! records they need), the settings Garage should hold ([`plan`]) and the status of a
//! converged bucket ([`status`]); here, the aliases that identify a bucket.

pub mod health;
pub mod operations;
pub mod plan;
pub mod status;

use kube::ResourceExt;
use shared_types::garage_bucket::GarageBucket;

/// The global alias that marks a bucket as created for exactly this object: found again after
/// a crash between the create and the status write, and never mistaken for someone else's.
pub fn reservation_alias(uid: &str) -> String {
    format!(
        "garage-rsv-{}",
        &crate::names::sha256_hex(uid.as_bytes())[..16]
    )
}

/// The global alias the spec asks for (the object's name when it names none).
pub fn wanted_alias(b: &GarageBucket) -> String {
    b.spec
        .global_alias
        .clone()
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| b.name_any())
}
