//! Table tests of the field and shape mapping between v1beta1 and v1beta2.

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::*;
use webhook::convert::{ConvertError, to_v1beta1, to_v1beta2};

/// The ten pod fields with a sample value each.
fn pod_fields() -> Vec<(&'static str, Value)> {
    vec![
        (
            "affinity",
            json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {"matchExpressions": [{"key": "k", "operator": "Exists"}]}}]}}),
        ),
        ("containerSecurityContext", json!({"runAsNonRoot": true})),
        ("nodeSelector", json!({"disk": "ssd"})),
        ("podAnnotations", json!({"a": "1"})),
        ("podLabels", json!({"l": "2"})),
        ("priorityClassName", json!("high")),
        (
            "resources",
            json!({"requests": {"cpu": "100m", "memory": "1Gi"}}),
        ),
        ("securityContext", json!({"fsGroup": 1000})),
        (
            "tolerations",
            json!([{"key": "dedicated", "operator": "Equal", "value": "garage", "effect": "NoSchedule"}]),
        ),
        (
            "topologySpreadConstraints",
            json!([{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]),
        ),
    ]
}

fn with_pod_fields(mut base: Value) -> Value {
    for (key, value) in pod_fields() {
        base[key] = value;
    }
    base
}

fn spec_of_hub(spec: Value) -> Value {
    to_json(&to_v1beta2(spoke(spec)).expect("converts").spec)
}

fn spec_of_spoke(spec: Value) -> Value {
    to_json(&to_v1beta1(hub(spec)).expect("converts").spec)
}

#[test]
fn v1beta1_shapes_map_to_the_hub() {
    let shared = json!({
        "image": "dxflrs/garage:v2.3.0", "imageRepository": "mirror/garage", "imagePullPolicy": "Always",
        "imagePullSecrets": [{"name": "pull"}], "serviceAccountName": "garage", "zone": "dc1",
        "zoneFrom": {"nodeLabel": "topology.kubernetes.io/zone"}, "layoutPolicy": "Auto",
        "deletionPolicy": "Destroy", "defaultNodeTags": ["fast"],
        "replication": {"factor": 3, "consistencyMode": "consistent"},
        "network": {"rpcBindPort": 3901}, "s3Api": {"region": "garage"}, "k2vApi": {"bindPort": 3904},
        "webApi": {"enabled": false}, "admin": {"bindPort": 3903}, "database": {"engine": "lmdb"},
        "blocks": {"size": "1Mi"}, "discovery": {"kubernetes": {"enabled": true}},
        "security": {"allowPunycode": true}, "logging": {"level": "info"},
        "publicEndpoint": {"type": "LoadBalancer"}, "layoutManagement": {"autoApply": true},
        "monitoring": {"enabled": true, "metricRelabelings": [{"action": "drop", "sourceLabels": ["x"]}]},
        "maintenance": {"suspended": false}, "workers": {"scrubTranquility": 4},
    });
    let merge = |extra: Value| {
        let mut out = shared.clone();
        for (k, v) in extra.as_object().unwrap() {
            out[k] = v.clone();
        }
        out
    };
    let storage_block = json!({
        "metadata": volume("10Gi", "meta"), "data": volume("100Gi", "data"),
        "rpcPublicAddr": "stg-{ordinal}.example.net:3901", "layoutPolicy": "Manual",
        "metadataSnapshotsDir": "/snap", "metadataAutoSnapshotInterval": "6h",
        "metadataFsync": true, "dataFsync": false,
        "pvcRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
        "env": [{"name": "X", "value": "1"}], "envFrom": [{"prefix": "P_", "configMapRef": {"name": "cm"}}],
    });
    let pdb = json!({"enabled": true, "minAvailable": 2});

    // (case, v1beta1 spec, expected hub spec)
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "storage: every storage setting, pod field, PDB and capacity reserve moves into storage",
            merge(with_pod_fields(json!({
                "replicas": 4, "gateway": false, "storage": storage_block.clone(),
                "podDisruptionBudget": pdb.clone(), "capacityReservePercent": 10,
            }))),
            merge(json!({"storage": with_pod_fields(json!({
                "replicas": 4, "metadata": volume("10Gi", "meta"), "data": volume("100Gi", "data"),
                "rpcPublicAddr": "stg-{ordinal}.example.net:3901", "layoutPolicy": "Manual",
                "metadataSnapshotsDir": "/snap", "metadataAutoSnapshotInterval": "6h",
                "metadataFsync": true, "dataFsync": false,
                "pvcRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
                "env": [{"name": "X", "value": "1"}], "envFrom": [{"prefix": "P_", "configMapRef": {"name": "cm"}}],
                "podDisruptionBudget": pdb.clone(), "capacityReservePercent": 10,
            }))})),
        ),
        (
            "edge gateway: replicas, PDB, pod fields, metadata and PVC retention; storage-only settings dropped (CONV-12)",
            merge(with_pod_fields(json!({
                "replicas": 2, "gateway": true, "connectTo": {"clusterRef": {"name": "garage"}},
                "storage": storage_block.clone(), "podDisruptionBudget": pdb.clone(), "capacityReservePercent": 10,
            }))),
            merge(json!({
                "connectTo": {"clusterRef": {"name": "garage"}},
                "gateway": with_pod_fields(json!({
                    "replicas": 2, "podDisruptionBudget": pdb.clone(), "metadata": volume("10Gi", "meta"),
                    "pvcRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
                })),
            })),
        ),
        (
            "management handle: no tiers; pod fields, PDB and capacity reserve dropped (CONV-10)",
            merge(with_pod_fields(json!({
                "replicas": 0, "gateway": false, "connectTo": {"adminApiEndpoint": "http://g:3903"},
                "podDisruptionBudget": pdb.clone(), "capacityReservePercent": 10,
                "storage": {"rpcPublicAddr": "x:3901"},
            }))),
            merge(json!({"connectTo": {"adminApiEndpoint": "http://g:3903"}})),
        ),
        (
            "gateway false + connectTo + replicas > 0 is storage + connectTo (CONV-14)",
            json!({"replicas": 2, "connectTo": {"clusterRef": {"name": "g"}}}),
            json!({"connectTo": {"clusterRef": {"name": "g"}}, "storage": {"replicas": 2}}),
        ),
        (
            "connectTo with replicas 0 but a data volume is storage, not a handle",
            json!({"replicas": 0, "connectTo": {"clusterRef": {"name": "g"}}, "storage": {"data": {"size": "1Gi"}}}),
            json!({"connectTo": {"clusterRef": {"name": "g"}}, "storage": {"replicas": 0, "data": {"size": "1Gi"}}}),
        ),
        (
            "absent gateway is storage; empty storage.layoutPolicy is unset",
            json!({"replicas": 3, "storage": {"layoutPolicy": ""}}),
            json!({"storage": {"replicas": 3}}),
        ),
        (
            "remote clusters copy field by field",
            json!({"replicas": 1, "remoteClusters": [{"name": "b", "zone": "z2", "defaultCapacity": "1Ti",
                "connection": {"adminApiEndpoint": "https://b:3903", "gatewayRpcEndpointTemplate": "gw-{ordinal}:3901",
                    "adminTokenSecretRef": {"name": "t", "key": "k"}}}]}),
            json!({"storage": {"replicas": 1}, "remoteClusters": [{"name": "b", "zone": "z2", "defaultCapacity": "1Ti",
                "connection": {"adminApiEndpoint": "https://b:3903", "gatewayRpcEndpointTemplate": "gw-{ordinal}:3901",
                    "adminTokenSecretRef": {"name": "t", "key": "k"}}}]}),
        ),
    ];
    for (case, input, want) in cases {
        assert_eq!(spec_of_hub(input), want, "{case}");
    }
}

#[test]
fn hub_shapes_map_to_the_v1beta1_view() {
    let storage = json!({
        "replicas": 3, "metadata": volume("10Gi", "meta"), "data": volume("100Gi", "data"),
        "layoutPolicy": "Manual", "rpcPublicAddr": "stg-{ordinal}:3901", "env": [{"name": "X", "value": "1"}],
        "podDisruptionBudget": {"maxUnavailable": 1}, "capacityReservePercent": 5,
    });
    let view_storage = json!({
        "metadata": volume("10Gi", "meta"), "data": volume("100Gi", "data"),
        "layoutPolicy": "Manual", "rpcPublicAddr": "stg-{ordinal}:3901", "env": [{"name": "X", "value": "1"}],
    });
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "storage only: gateway false, replicas and pod fields from storage",
            json!({"storage": with_pod_fields(storage.clone())}),
            with_pod_fields(
                json!({"gateway": false, "replicas": 3, "storage": view_storage.clone(),
                "podDisruptionBudget": {"maxUnavailable": 1}, "capacityReservePercent": 5}),
            ),
        ),
        (
            "unified: the storage-first view (the gateway travels in an annotation)",
            json!({"storage": with_pod_fields(storage.clone()), "gateway": {"replicas": 2, "nodeSelector": {"gw": "1"}}}),
            with_pod_fields(
                json!({"gateway": false, "replicas": 3, "storage": view_storage.clone(),
                "podDisruptionBudget": {"maxUnavailable": 1}, "capacityReservePercent": 5}),
            ),
        ),
        (
            "edge gateway: gateway true, metadata and retention in storage",
            json!({"connectTo": {"clusterRef": {"name": "g"}}, "gateway": with_pod_fields(json!({
                "replicas": 2, "metadata": volume("1Gi", "gw"), "pvcRetentionPolicy": {"whenDeleted": "Retain"},
                "podDisruptionBudget": {"minAvailable": 1}}))}),
            with_pod_fields(
                json!({"gateway": true, "replicas": 2, "connectTo": {"clusterRef": {"name": "g"}},
                "storage": {"metadata": volume("1Gi", "gw"), "pvcRetentionPolicy": {"whenDeleted": "Retain"}},
                "podDisruptionBudget": {"minAvailable": 1}}),
            ),
        ),
        (
            "management handle: gateway false, replicas 0, no storage",
            json!({"connectTo": {"adminApiEndpoint": "http://g:3903"}}),
            json!({"gateway": false, "replicas": 0, "connectTo": {"adminApiEndpoint": "http://g:3903"}}),
        ),
        (
            "storageRpcEndpointTemplate has no v1beta1 field (CONV-11)",
            json!({"storage": {"replicas": 1}, "remoteClusters": [{"name": "b", "zone": "z",
                "connection": {"adminApiEndpoint": "https://b", "storageRpcEndpointTemplate": "s-{ordinal}:3901"}}]}),
            json!({"gateway": false, "replicas": 1, "remoteClusters": [{"name": "b", "zone": "z",
                "connection": {"adminApiEndpoint": "https://b"}}]}),
        ),
    ];
    for (case, input, want) in cases {
        assert_eq!(spec_of_spoke(input), want, "{case}");
    }
}

#[test]
fn volume_attributes_class_converts_on_every_carrier() {
    // The class converts on metadata, data, data.paths[].volume and gateway metadata.
    let data = json!({"paths": [{"path": "/data/a", "capacity": "1Ti",
        "volume": {"size": "1Ti", "volumeAttributesClassName": "path-gold"}}]});
    let v1 = spoke(
        json!({"replicas": 3, "storage": {"metadata": volume("1Gi", "meta-gold"), "data": data.clone()}}),
    );
    let hub = to_v1beta2(v1).unwrap();
    let storage = to_json(&hub.spec.storage);
    assert_eq!(
        storage["metadata"]["volumeAttributesClassName"],
        "meta-gold"
    );
    assert_eq!(
        storage["data"]["paths"][0]["volume"]["volumeAttributesClassName"],
        "path-gold"
    );

    let edge = spoke(
        json!({"replicas": 1, "gateway": true, "connectTo": {"clusterRef": {"name": "g"}},
        "storage": {"metadata": volume("1Gi", "gw-gold")}}),
    );
    let hub = to_v1beta2(edge).unwrap();
    assert_eq!(
        to_json(&hub.spec.gateway)["metadata"]["volumeAttributesClassName"],
        "gw-gold"
    );
    let back = to_v1beta1(hub).unwrap();
    assert_eq!(
        to_json(&back.spec.storage)["metadata"]["volumeAttributesClassName"],
        "gw-gold"
    );
    assert_eq!(
        back.metadata.annotations, None,
        "a plain edge gateway needs no payload"
    );
}

#[test]
fn unknown_v1beta1_layout_policy_is_refused_with_its_value() {
    let err = to_v1beta2(spoke(
        json!({"replicas": 1, "storage": {"layoutPolicy": "manual"}}),
    ))
    .unwrap_err();
    assert!(matches!(err, ConvertError::UnknownLayoutPolicy { .. }));
    assert!(err.to_string().contains("\"manual\""), "{err}");
    // A gateway drops storage.layoutPolicy (CONV-12), so the value cannot fail there.
    let edge = spoke(
        json!({"replicas": 1, "gateway": true, "connectTo": {"clusterRef": {"name": "g"}},
        "storage": {"layoutPolicy": "whatever"}}),
    );
    assert!(to_v1beta2(edge).is_ok());
}

#[test]
fn status_maps_and_drops_v1beta2_only_fields() {
    let mut hub = hub(json!({"storage": {"replicas": 3}}));
    hub.status = Some(serde_json::from_value(json!({
        "replicas": 5, "selector": "s", "scaleReplicas": 3, "scaleSelector": "ss", "phase": "Running",
        "storageReplicas": 3, "storageReadyReplicas": 3, "gatewayReplicas": 2, "gatewayReadyReplicas": 2,
        "gatewayNodesNotInLayout": ["g"], "pendingGatewayTombstones": ["t"], "unreachablePeers": ["p"],
        "layoutDiagnosis": "d",
        "nodes": [{"nodeId": "n1", "tier": "storage", "zone": "dc1", "capacity": "1Ti"}],
        "autoModePvcHandoffs": [{"pvcName": "p", "pvcUid": "u", "slotName": "s"}],
        "storageDrain": {"transactionId": "t", "targetHash": "h", "layoutVersion": 4, "queueLength": 0,
            "errorCount": 0, "requiresEmptyQueue": false, "startedAt": "2024-05-01T00:00:00Z"},
    })).unwrap());
    let view = to_v1beta1(hub).unwrap();
    let status = to_json(&view.status);
    assert_eq!(
        status,
        json!({
            "replicas": 5, "selector": "s", "scaleReplicas": 3, "scaleSelector": "ss", "phase": "Running",
            "nodes": [{"nodeId": "n1", "zone": "dc1", "capacity": "1Ti"}],
            "autoModePvcHandoffs": [{"pvcName": "p", "pvcUid": "u", "slotName": "s"}],
            // CONV-16: the required id lists appear even when the writer left them out.
            "storageDrain": {"transactionId": "t", "targetHash": "h", "layoutVersion": 4, "queueLength": 0,
                "errorCount": 0, "requiresEmptyQueue": false, "startedAt": "2024-05-01T00:00:00Z",
                "roleRemovalNodeIds": [], "removedStorageNodeIds": []},
        })
    );
    let back = to_v1beta2(view).unwrap();
    let status = to_json(&back.status);
    assert_eq!(status["storageDrain"]["roleRemovalNodeIds"], json!([]));
    assert!(
        status.get("storageReplicas").is_none(),
        "v1beta2-only status is left to the controller"
    );
}

#[test]
fn metadata_is_copied_verbatim() {
    let hub = hub(unified_spec());
    let meta_before = to_json(&hub.metadata);
    let view = to_v1beta1(hub).unwrap();
    let mut meta_view = to_json(&view.metadata);
    meta_view.as_object_mut().unwrap().remove("annotations");
    assert_eq!(meta_view, meta_before, "only annotations may change");
    let back = to_v1beta2(view).unwrap();
    assert_eq!(to_json(&back.metadata), meta_before);
}
