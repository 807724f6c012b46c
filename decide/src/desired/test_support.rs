//! Fixtures shared by the builder tests.

// Test fixtures only (built for tests, or with the `test-support` feature): a malformed
// fixture is a bug in the test, so it panics.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use shared_types::garage_cluster::common::VolumeConfig;
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterSpec, StorageSpec};

/// A v1beta2 cluster `garage` in `ns` with `replicas` Auto members on `local-sim` claims.
pub fn cluster(replicas: i32) -> GarageCluster {
    let volume = |size: &str| VolumeConfig {
        size: Some(Quantity(size.into())),
        storage_class_name: Some("local-sim".into()),
        ..Default::default()
    };
    let mut c = GarageCluster::new(
        "garage",
        GarageClusterSpec {
            storage: Some(StorageSpec {
                replicas: Some(replicas),
                metadata: Some(volume("100Mi")),
                data: Some(volume("1Gi")),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    c.metadata = ObjectMeta {
        name: Some("garage".into()),
        namespace: Some("ns".into()),
        uid: Some("uid-1".into()),
        generation: Some(1),
        ..Default::default()
    };
    c
}

/// [`cluster`] whose data volume is two directories: `/data/fast` (its own 1Gi claim of
/// attributes class `fast`, advertised at 600Mi) and `/data/slow` (a 2Gi claim of class
/// `slow`), beside a read-only `/data/old` on a 1Gi claim; the top-level volume names the
/// storage class and a class the paths do not take.
pub fn paths_cluster(replicas: i32) -> GarageCluster {
    use shared_types::garage_cluster::common::{DataPath, DataPathVolumeConfig};
    let volume = |size: &str, class: &str| {
        Some(DataPathVolumeConfig {
            size: Some(Quantity(size.into())),
            volume_attributes_class_name: Some(class.into()),
            ..Default::default()
        })
    };
    let mut c = cluster(replicas);
    let data = c.spec.storage.as_mut().and_then(|s| s.data.as_mut());
    let data = data.expect("cluster() has a data volume");
    data.size = None;
    data.volume_attributes_class_name = Some("top".into());
    data.paths = Some(vec![
        DataPath {
            path: "/data/fast".into(),
            capacity: Some(Quantity("600Mi".into())),
            read_only: None,
            volume: volume("1Gi", "fast"),
        },
        DataPath {
            path: "/data/slow".into(),
            capacity: None,
            read_only: None,
            volume: volume("2Gi", "slow"),
        },
        DataPath {
            path: "/data/old".into(),
            capacity: None,
            read_only: Some(true),
            volume: Some(DataPathVolumeConfig {
                size: Some(Quantity("1Gi".into())),
                ..Default::default()
            }),
        },
    ]);
    c
}

/// Names of the claim templates of `sts`, in order.
pub fn claim_template_names(sts: &k8s_openapi::api::apps::v1::StatefulSet) -> Vec<String> {
    sts.spec
        .iter()
        .flat_map(|s| s.volume_claim_templates.iter().flatten())
        .filter_map(|c| c.metadata.name.clone())
        .collect()
}
