//! Round trips in both directions (VolumeAttributesClass differences included) and the
//! deliberate decisions recorded under "Conversion" in docs/compatibility.md.

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use shared_types::garage_cluster::{v1beta1, v1beta2};
use support::*;
use webhook::convert::annotations::{
    ANNOTATION_V1BETA2_GATEWAY_TIER as GATEWAY, ANNOTATION_V1BETA2_NODE_LOCAL_POOLS as POOLS,
    ANNOTATION_V1BETA2_ONLY as ONLY,
};
use webhook::convert::{decode_v1beta2, to_v1beta1, to_v1beta2};

fn via_hub(object: v1beta1::GarageCluster) -> v1beta1::GarageCluster {
    to_v1beta1(to_v1beta2(object).expect("to v1beta2")).expect("back to v1beta1")
}

fn via_spoke(object: v1beta2::GarageCluster) -> v1beta2::GarageCluster {
    to_v1beta2(to_v1beta1(object).expect("to v1beta1")).expect("back to v1beta2")
}

/// What a legacy client does: read the v1beta1 view as JSON, change it, send it back.
fn edit_view(hub: v1beta2::GarageCluster, edit: impl FnOnce(&mut Value)) -> v1beta2::GarageCluster {
    let mut view = to_json(&to_v1beta1(hub).unwrap());
    edit(&mut view);
    to_v1beta2(serde_json::from_value(view).unwrap()).unwrap()
}

fn assert_no_transport(hub: &v1beta2::GarageCluster) {
    let annotations = annotations_of(&hub.metadata);
    for key in [GATEWAY, POOLS, ONLY] {
        assert!(!annotations.contains_key(key), "{key} leaked into the hub");
    }
}

#[test]
fn v1beta1_storage_round_trips_losslessly() {
    let object = spoke(json!({
        "replicas": 3, "gateway": false, "zone": "dc1", "nodeSelector": {"disk": "ssd"},
        "storage": {"metadata": {"size": "10Gi"}, "data": {"size": "1Ti"},
            "rpcPublicAddr": "stg-{ordinal}.example.net:3901", "layoutPolicy": "Manual"},
        "monitoring": {"enabled": true, "metricRelabelings": [{"action": "replace", "sourceLabels": ["a"], "targetLabel": "b"}]},
        "zoneFrom": {"nodeLabel": "topology.kubernetes.io/zone"},
    }));
    let before = to_json(&object);
    let after = via_hub(object);
    assert_eq!(to_json(&after), before);
    assert_eq!(
        after.metadata.annotations, None,
        "zoneFrom needs no v1beta2-only annotation"
    );
}

#[test]
fn v1beta1_edge_gateway_maps_and_plain_edge_round_trips_without_annotations() {
    let metadata = json!({"size": "1Gi", "storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
        "selector": {"matchLabels": {"tier": "gw"}}, "labels": {"a": "b"}, "annotations": {"c": "d"}});
    let object = spoke(
        json!({"replicas": 2, "gateway": true, "connectTo": {"clusterRef": {"name": "garage"}},
        "podDisruptionBudget": {"minAvailable": 1},
        "storage": {"metadata": metadata.clone(), "pvcRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"}}}),
    );
    let converted = to_v1beta2(object.clone()).unwrap();
    assert_eq!(
        to_json(&converted.spec.gateway),
        json!({"replicas": 2, "podDisruptionBudget": {"minAvailable": 1},
        "metadata": metadata, "pvcRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Delete"}})
    );
    assert_eq!(to_json(&via_hub(object.clone())), to_json(&object));

    let edge = hub(plain_edge_spec());
    let view = to_v1beta1(edge.clone()).unwrap();
    assert_eq!(view.metadata.annotations, None);
    assert_eq!(to_json(&to_v1beta2(view).unwrap()), to_json(&edge));
}

#[test]
fn rich_edge_gateway_keeps_v1beta2_only_fields_through_v1beta1_edits() {
    let mut spec = plain_edge_spec();
    spec["gateway"]["rpcPublicAddr"] = json!("edge.example.net:3901");
    spec["gateway"]["readinessProbe"] = json!({"tcpSocket": {"port": 3900}, "periodSeconds": 5});
    spec["gateway"]["env"] = json!([{"name": "A", "value": "1"}]);
    spec["gateway"]["envFrom"] = json!([{"prefix": "P_", "secretRef": {"name": "s"}}]);
    spec["gateway"]["podAnnotations"] = json!({"x": "y"});
    let original = hub(spec);
    assert!(annotations_of(&to_v1beta1(original.clone()).unwrap().metadata).contains_key(GATEWAY));
    assert_eq!(to_json(&via_spoke(original.clone())), to_json(&original));

    let edited = edit_view(original.clone(), |view| {
        view["spec"]["replicas"] = json!(4);
        view["spec"]["nodeSelector"] = json!({"edge": "false"});
        view["spec"]["storage"]["metadata"]["selector"] = json!({"matchLabels": {"tier": "gw2"}});
        view["spec"]["podDisruptionBudget"] = json!({"minAvailable": 2});
    });
    let mut want = to_json(&original);
    want["spec"]["gateway"]["replicas"] = json!(4);
    want["spec"]["gateway"]["nodeSelector"] = json!({"edge": "false"});
    want["spec"]["gateway"]["metadata"]["selector"] = json!({"matchLabels": {"tier": "gw2"}});
    want["spec"]["gateway"]["podDisruptionBudget"] = json!({"minAvailable": 2});
    assert_eq!(to_json(&edited), want);
    assert_no_transport(&edited);
}

#[test]
fn decision_conv7_edge_edits_replace_metadata_and_retention() {
    // The Go operator merges these into the payload, so a removal through v1beta1 is ignored.
    // Here the value sent back is the value kept.
    let mut spec = plain_edge_spec();
    spec["gateway"]["env"] = json!([{"name": "A", "value": "1"}]);
    let original = hub(spec);
    let edited = edit_view(original.clone(), |view| {
        let metadata = view["spec"]["storage"]["metadata"].as_object_mut().unwrap();
        metadata.remove("selector");
        metadata.remove("labels");
        view["spec"]["storage"]
            .as_object_mut()
            .unwrap()
            .remove("pvcRetentionPolicy");
        view["spec"]
            .as_object_mut()
            .unwrap()
            .remove("podDisruptionBudget");
    });
    let gateway = to_json(&edited.spec.gateway);
    assert!(
        gateway["metadata"].get("selector").is_none(),
        "removed selector stays removed"
    );
    assert!(
        gateway["metadata"].get("labels").is_none(),
        "removed labels stay removed"
    );
    assert_eq!(gateway["metadata"]["annotations"], json!({"c": "d"}));
    assert!(gateway.get("pvcRetentionPolicy").is_none());
    assert!(
        gateway.get("podDisruptionBudget").is_none(),
        "nil PDB clears (CONV-6)"
    );
    assert_eq!(
        gateway["env"],
        json!([{"name": "A", "value": "1"}]),
        "payload-only field kept"
    );

    let cleared = edit_view(original, |view| {
        view["spec"].as_object_mut().unwrap().remove("storage");
    });
    assert_eq!(cleared.spec.gateway.unwrap().metadata, None);
}

#[test]
fn unified_cluster_round_trips_and_is_shown_storage_first() {
    let original = hub(unified_spec());
    let view = to_v1beta1(original.clone()).unwrap();
    assert_eq!(view.spec.gateway, Some(false));
    assert_eq!(view.spec.replicas, Some(3));
    assert_eq!(annotations_of(&view.metadata)[ONLY], "gateway-tier-present");
    let back = to_v1beta2(view).unwrap();
    assert_eq!(to_json(&back), to_json(&original));
    assert_no_transport(&back);
}

#[test]
fn seed_vac_only_gateway_difference_survives() {
    // Two unified clusters whose gateways differ only in volumeAttributesClassName: the payload
    // carries the difference, and each converts back to itself.
    let gold = hub(unified_spec());
    let mut silver_spec = unified_spec();
    silver_spec["gateway"]["metadata"]["volumeAttributesClassName"] = json!("gw-silver");
    let silver = hub(silver_spec);
    let gold_view = to_v1beta1(gold.clone()).unwrap();
    let silver_view = to_v1beta1(silver.clone()).unwrap();
    assert_eq!(
        to_json(&gold_view.spec),
        to_json(&silver_view.spec),
        "v1beta1 spec cannot show it"
    );
    assert_ne!(
        annotations_of(&gold_view.metadata)[GATEWAY],
        annotations_of(&silver_view.metadata)[GATEWAY]
    );
    assert!(annotations_of(&silver_view.metadata)[GATEWAY].contains("gw-silver"));
    assert_eq!(to_json(&to_v1beta2(gold_view).unwrap()), to_json(&gold));
    assert_eq!(to_json(&to_v1beta2(silver_view).unwrap()), to_json(&silver));

    // An edge gateway whose only v1beta2 setting is the class needs no payload: v1beta1 shows it.
    let mut edge_spec = plain_edge_spec();
    edge_spec["gateway"]["metadata"]["volumeAttributesClassName"] = json!("gw-gold");
    let edge = hub(edge_spec);
    let edge_view = to_v1beta1(edge.clone()).unwrap();
    assert_eq!(edge_view.metadata.annotations, None);
    assert_eq!(to_json(&to_v1beta2(edge_view).unwrap()), to_json(&edge));
}

#[test]
fn seed_vac_round_trips_from_v1beta1_and_absence_is_kept() {
    let storage = spoke(json!({"replicas": 3, "gateway": false, "storage": {
        "metadata": volume("1Gi", "meta-gold"),
        "data": {"paths": [{"path": "/d/a", "capacity": "1Ti", "volume": {"size": "1Ti", "volumeAttributesClassName": "p"}}],
                 "volumeAttributesClassName": "data-gold"}}}));
    assert_eq!(to_json(&via_hub(storage.clone())), to_json(&storage));
    let edge = spoke(
        json!({"replicas": 1, "gateway": true, "connectTo": {"clusterRef": {"name": "g"}},
        "storage": {"metadata": volume("1Gi", "gw-gold")}}),
    );
    assert_eq!(to_json(&via_hub(edge.clone())), to_json(&edge));

    let mut no_class = unified_spec();
    for path in [
        ["storage", "metadata"],
        ["storage", "data"],
        ["gateway", "metadata"],
    ] {
        no_class[path[0]][path[1]]
            .as_object_mut()
            .unwrap()
            .remove("volumeAttributesClassName");
    }
    let original = hub(no_class);
    let back = via_spoke(original.clone());
    assert_eq!(to_json(&back), to_json(&original));
    assert!(
        !to_json(&back)
            .to_string()
            .contains("volumeAttributesClassName")
    );
}

#[test]
fn manual_layout_issue_173_shape_reaches_the_storage_tier() {
    let object = spoke(json!({
        "replicas": 1, "layoutPolicy": "Manual", "podDisruptionBudget": {"enabled": false},
        "resources": {"requests": {"cpu": "1"}}, "securityContext": {"fsGroup": 1000},
        "containerSecurityContext": {"readOnlyRootFilesystem": true},
        "network": {"service": {"type": "LoadBalancer"}},
        "storage": {"metadataAutoSnapshotInterval": "6h", "metadata": {"size": "1Gi"}, "data": {"size": "10Gi"}},
    }));
    let converted = to_v1beta2(object).unwrap();
    let storage = to_json(&converted.spec.storage);
    assert_eq!(storage["replicas"], 1);
    assert_eq!(storage["metadataAutoSnapshotInterval"], "6h");
    assert_eq!(storage["podDisruptionBudget"], json!({"enabled": false}));
    assert_eq!(storage["resources"], json!({"requests": {"cpu": "1"}}));
    assert_eq!(storage["securityContext"], json!({"fsGroup": 1000}));
    assert_eq!(
        storage["containerSecurityContext"],
        json!({"readOnlyRootFilesystem": true})
    );
}

#[test]
fn management_handle_round_trips_with_no_tiers() {
    let original = hub(json!({"connectTo": {"adminApiEndpoint": "http://g:3903",
        "adminTokenSecretRef": {"name": "t", "key": "k"}}}));
    let view = to_v1beta1(original.clone()).unwrap();
    assert_eq!(
        (view.spec.gateway, view.spec.replicas),
        (Some(false), Some(0))
    );
    let back = to_v1beta2(view).unwrap();
    assert_eq!(
        (back.spec.storage.is_none(), back.spec.gateway.is_none()),
        (true, true)
    );
    assert_eq!(to_json(&back), to_json(&original));
}

fn rich_status() -> v1beta2::GarageClusterStatus {
    serde_json::from_value(json!({
        "replicas": 5, "selector": "app=garage", "scaleReplicas": 3,
        "scaleSelector": "garage.rajsingh.info/cluster=garage,tier=storage,storage-group=default",
        "autoModePvcHandoffs": [{"pvcName": "data-0", "pvcUid": "u1", "slotName": "garage-0",
            "previousGarageNodeUid": "a", "replacementGarageNodeUid": "b", "replacementReservationHash": "h"}],
        "storageRollout": {"garageNodeName": "garage-1", "garageNodeUid": "gu", "garageNodeId": "id",
            "workloadUid": "w", "previousPodUid": "p", "desiredPodSpecHash": "d", "desiredConfigHash": "c",
            "persistentVolumeClaims": [{"name": "meta-1", "uid": "m"}, {"name": "data-1", "uid": "d"}],
            "recoveryPodName": "garage-1-x", "recoveryPodUid": "r", "recoveryRequest": "n1"},
    })).unwrap()
}

#[test]
fn node_local_pools_survive_a_legacy_replicas_edit() {
    let mut spec = unified_spec();
    spec["storage"]["nodeLocalPools"] = json!([pool("fast"), pool("bulk")]);
    spec["zoneFrom"] = json!({"nodeLabel": "topology.kubernetes.io/zone"});
    spec["deletionPolicy"] = json!("Drain");
    let mut original = hub(spec);
    original.status = Some(rich_status());

    let view = to_v1beta1(original.clone()).unwrap();
    let storage = view.spec.storage.clone().unwrap();
    assert!(
        storage.metadata.is_some() && storage.data.is_some(),
        "default group stays visible"
    );
    let annotations = annotations_of(&view.metadata);
    assert_eq!(
        annotations[ONLY],
        "gateway-tier-present,node-local-pools-present"
    );
    assert!(annotations.contains_key(POOLS));
    assert!(
        !annotations.keys().any(|k| k.contains("storage-pools")),
        "no obsolete alias"
    );

    let edited = edit_view(original.clone(), |view| view["spec"]["replicas"] = json!(4));
    let mut want = to_json(&original);
    want["spec"]["storage"]["replicas"] = json!(4);
    assert_eq!(
        to_json(&edited),
        want,
        "pools, gateway, zoneFrom and status are unchanged"
    );
    assert_no_transport(&edited);
}

#[test]
fn pool_only_hub_does_not_invent_default_volumes() {
    let original = hub(json!({"storage": {"replicas": 0, "layoutPolicy": "Manual",
        "nodeLocalPools": [pool("a")]}, "admin": {"adminTokenSecretRef": {"name": "t", "key": "k"}}}));
    let view = to_v1beta1(original.clone()).unwrap();
    let storage = view.spec.storage.clone().unwrap();
    assert_eq!((storage.metadata, storage.data), (None, None));
    assert_eq!(to_json(&to_v1beta2(view).unwrap()), to_json(&original));
}

#[test]
fn storage_without_pools_gets_no_marker() {
    let view = to_v1beta1(hub(json!({"storage": {"replicas": 3}}))).unwrap();
    assert_eq!(view.metadata.annotations, None);
}

#[test]
fn decision_conv11_storage_rpc_endpoint_template_is_lost_on_a_v1beta1_write() {
    let original = hub(
        json!({"storage": {"replicas": 1}, "remoteClusters": [{"name": "b", "zone": "z",
        "connection": {"adminApiEndpoint": "https://b:3903", "storageRpcEndpointTemplate": "s-{ordinal}:3901"}}]}),
    );
    let back = via_spoke(original);
    let remote = &back.spec.remote_clusters.unwrap()[0];
    assert_eq!(remote.connection.storage_rpc_endpoint_template, None);
    assert_eq!(remote.connection.admin_api_endpoint, "https://b:3903");
}

#[test]
fn decision_leaked_v1beta1_bytes_under_v1beta2_are_honoured() {
    // CONV-15: `gateway: true` (shared-types) and a stray top-level replicas (webhook).
    let leaked = object(
        "garage.rajsingh.info/v1beta2",
        json!({"replicas": 5, "storage": {"replicas": 0, "data": {"size": "1Ti"}}}),
        None,
    );
    let decoded = decode_v1beta2(leaked).unwrap();
    assert_eq!(decoded.spec.storage.as_ref().unwrap().replicas, Some(5));
    assert_eq!(to_v1beta1(decoded).unwrap().spec.replicas, Some(5));

    let explicit_zero = object(
        "garage.rajsingh.info/v1beta2",
        json!({"storage": {"replicas": 0}}),
        None,
    );
    assert_eq!(
        decode_v1beta2(explicit_zero)
            .unwrap()
            .spec
            .storage
            .unwrap()
            .replicas,
        Some(0)
    );

    let edge = object(
        "garage.rajsingh.info/v1beta2",
        json!({"gateway": true, "connectTo": {"clusterRef": {"name": "g"}}}),
        None,
    );
    let view = to_v1beta1(decode_v1beta2(edge).unwrap()).unwrap();
    assert_eq!(view.spec.gateway, Some(true));
}
