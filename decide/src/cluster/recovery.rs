//! Whether the user asked for Garage's explicit dead-node recovery: the GarageCluster
//! annotation `skip-dead-nodes` (with `allow-missing-data` when the user accepts losing data
//! without a surviving quorum). The operator never asks for it itself; the reconciler runs it.

use kube::ResourceExt;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::{ANNOTATION_ALLOW_MISSING_DATA, ANNOTATION_SKIP_DEAD_NODES};

/// The request on `cluster`: `Some(allow_missing_data)` when `skip-dead-nodes` is present
/// (its value is not read, as the annotation's contract says).
pub fn requested(cluster: &GarageCluster) -> Option<bool> {
    let annotations = cluster.annotations();
    annotations
        .contains_key(ANNOTATION_SKIP_DEAD_NODES)
        .then(|| {
            annotations
                .get(ANNOTATION_ALLOW_MISSING_DATA)
                .map(String::as_str)
                == Some("true")
        })
}
