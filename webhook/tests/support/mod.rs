//! Builders and helpers shared by the conversion tests.

// Not every test binary uses every helper.
#![allow(dead_code)]

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};
use shared_types::garage_cluster::{v1beta1, v1beta2};

/// A v1beta2 object from JSON `spec` (and optional annotations).
pub fn hub(spec: Value) -> v1beta2::GarageCluster {
    hub_with(spec, None)
}

/// A v1beta2 object with annotations.
pub fn hub_with(spec: Value, annotations: Option<Value>) -> v1beta2::GarageCluster {
    serde_json::from_value(object("garage.rajsingh.info/v1beta2", spec, annotations))
        .expect("valid v1beta2 GarageCluster")
}

/// A v1beta1 object from JSON `spec`.
pub fn spoke(spec: Value) -> v1beta1::GarageCluster {
    spoke_with(spec, None)
}

/// A v1beta1 object with annotations.
pub fn spoke_with(spec: Value, annotations: Option<Value>) -> v1beta1::GarageCluster {
    serde_json::from_value(object("garage.rajsingh.info/v1beta1", spec, annotations))
        .expect("valid v1beta1 GarageCluster")
}

/// A whole GarageCluster object as JSON.
pub fn object(api_version: &str, spec: Value, annotations: Option<Value>) -> Value {
    let mut metadata = json!({
        "name": "garage",
        "namespace": "storage",
        "uid": "0b5f6c1e-3c1f-4a55-9a53-2f4a3cf0d0aa",
        "resourceVersion": "4711",
        "generation": 3,
        "finalizers": ["garagecluster.garage.rajsingh.info/finalizer"],
        "labels": {"team": "storage"},
    });
    if let Some(annotations) = annotations {
        metadata["annotations"] = annotations;
    }
    json!({
        "apiVersion": api_version,
        "kind": "GarageCluster",
        "metadata": metadata,
        "spec": spec,
    })
}

/// JSON of anything serialisable.
pub fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serialisable")
}

/// The annotations of an object's metadata (empty when unset).
pub fn annotations_of(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> BTreeMap<String, String> {
    meta.annotations.clone().unwrap_or_default()
}

/// A volume with a size and a VolumeAttributesClass.
pub fn volume(size: &str, vac: &str) -> Value {
    json!({"size": size, "storageClassName": "fast", "volumeAttributesClassName": vac})
}

/// One node-local pool.
pub fn pool(name: &str) -> Value {
    json!({
        "name": name,
        "capacity": "1Ti",
        "metadata": {"hostPath": format!("/var/lib/garage/{name}/meta")},
        "data": {"hostPath": format!("/var/lib/garage/{name}/data"), "hostPathType": "Directory"},
        "selector": {"matchLabels": {"pool": name}},
    })
}

/// A unified storage + gateway spec.
pub fn unified_spec() -> Value {
    json!({
        "storage": {
            "replicas": 3,
            "metadata": volume("10Gi", "meta-gold"),
            "data": volume("100Gi", "data-gold"),
            "nodeSelector": {"disk": "ssd"},
        },
        "gateway": {
            "replicas": 2,
            "metadata": volume("1Gi", "gw-gold"),
            "rpcPublicAddr": "gw-{ordinal}.example.net:3901",
        },
        "zone": "dc1",
    })
}

/// A plain edge gateway spec (v1beta1-representable).
pub fn plain_edge_spec() -> Value {
    json!({
        "gateway": {
            "replicas": 2,
            "metadata": {"size": "1Gi", "storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
                          "selector": {"matchLabels": {"tier": "gw"}},
                          "labels": {"a": "b"}, "annotations": {"c": "d"}},
            "podDisruptionBudget": {"enabled": true, "maxUnavailable": "25%"},
            "pvcRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
            "nodeSelector": {"edge": "true"},
        },
        "connectTo": {"clusterRef": {"name": "garage"}},
    })
}
