//! Fixtures shared by the builder tests.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::ObjectMeta;
use shared_types::garage_cluster::common::VolumeConfig;
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterSpec, StorageSpec};

/// A v1beta2 cluster `garage` in `ns` with `replicas` Auto members on `local-sim` claims.
pub(crate) fn cluster(replicas: i32) -> GarageCluster {
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
