//! What a GarageBucket cannot change once it exists: the cluster it lives in (GB-U1) and the
//! Garage bucket it is bound to once Garage assigned one (GB-U2).

use shared_types::garage_bucket::GarageBucket;

use crate::admission::Verdict;
use crate::admission::shared::remote::cluster_ref_changed;

/// GB-U1 and GB-U2 on an UPDATE from `old` to `new`.
pub fn check(old: &GarageBucket, new: &GarageBucket, verdict: &mut Verdict) {
    let namespace = new.metadata.namespace.as_deref().unwrap_or_default();
    if cluster_ref_changed(&old.spec.cluster_ref, &new.spec.cluster_ref, namespace) {
        verdict.deny(
            "GB-U1",
            "spec.clusterRef",
            "clusterRef is immutable after creation; create a new GarageBucket to manage a bucket in another GarageCluster",
        );
    }
    let bound = old
        .status
        .as_ref()
        .and_then(|s| s.bucket_id.as_deref())
        .is_some_and(|id| !id.is_empty());
    let id = |b: &GarageBucket| b.spec.bucket_id.clone().unwrap_or_default();
    if bound && id(old) != id(new) {
        verdict.deny(
            "GB-U2",
            "spec.bucketId",
            "bucketId is immutable after the Garage bucket identity has been established; restore the previous value, or create a new GarageBucket for another bucket",
        );
    }
}
