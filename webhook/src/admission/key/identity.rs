//! What a GarageKey cannot change once it exists: its cluster (GK-U1) and the credential
//! material it imported (GK-U2).

use shared_types::garage_key::GarageKey;

use crate::admission::Verdict;
use crate::admission::shared::remote::cluster_ref_changed;

/// GK-U1 and GK-U2 on an UPDATE from `old` to `new`.
pub fn check(old: &GarageKey, new: &GarageKey, verdict: &mut Verdict) {
    let namespace = new.metadata.namespace.as_deref().unwrap_or_default();
    if cluster_ref_changed(&old.spec.cluster_ref, &new.spec.cluster_ref, namespace) {
        verdict.deny(
            "GK-U1",
            "spec.clusterRef",
            "clusterRef is immutable after creation; create a new GarageKey to manage a key in another GarageCluster",
        );
    }
    if old.spec.import_key != new.spec.import_key {
        verdict.deny(
            "GK-U2",
            "spec.importKey",
            "importKey is immutable after creation; create a new GarageKey to manage different credential material",
        );
    }
}
