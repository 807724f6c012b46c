//! Table tests of GarageCluster DELETE: the deletion and drain rules (GC-D*).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::tests::{base, del, gc, run, set};
use super::validate_cluster;
use crate::admission::{Context, Review};

/// A drain-ready status at generation 1 (SH-22).
fn ready(v: Value) -> Value {
    set(
        v,
        "/status",
        json!({
            "conditions": [{"type": "StorageRolloutReady", "status": "True", "observedGeneration": 1, "reason": "Ready", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "health": {"status": "healthy", "healthy": true, "available": true, "storageNodes": 3, "storageNodesOk": 3, "partitions": 256, "partitionsQuorum": 256, "partitionsAllOk": 256}
        }),
    )
}

fn hex(c: char) -> String {
    std::iter::repeat_n(c, 64).collect()
}

#[test]
fn deletion_gc_d1_to_d10() {
    let remote =
        json!([{"name": "b", "zone": "b", "connection": {"adminApiEndpoint": "http://b:3903"}}]);
    let site = set(
        set(
            set(base(), "/spec/remoteClusters", remote),
            "/spec/deletionPolicy",
            json!("Drain"),
        ),
        "/spec/layoutManagement/drain/unverifiedPeersPolicy",
        json!("AssumeConsistent"),
    );
    let annotated = set(
        site.clone(),
        "/metadata/annotations",
        json!({"garage.rajsingh.info/drain": "true"}),
    );
    let token = json!({"actor": {"apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster", "namespace": "garage", "name": "garage", "uid": "uid-1"},
        "transactionId": "t1", "startedAt": "2026-01-01T00:00:00Z", "completedAt": "2026-01-01T01:00:00Z",
        "roleRemovalNodeIds": [hex('a')], "removedStorageNodeIds": [hex('a')], "targetHash": format!("sha256:{}", hex('0'))});
    let done = set(
        ready(annotated.clone()),
        "/status/storageDrain",
        token.clone(),
    );
    let del_ = |v: &Value| validate_cluster(Review::delete(&gc(v)), &Context::default());
    let foreground = Context {
        delete_options: serde_json::from_value(json!({"propagationPolicy": "Foreground"})).ok(),
        ..Default::default()
    };
    run(vec![
        ("standalone destroy", del_(&base()), None),
        (
            "federated without policy",
            del_(&set(
                base(),
                "/spec/remoteClusters",
                json!([{"name": "b", "zone": "b", "connection": {"adminApiEndpoint": "http://b:3903"}}]),
            )),
            Some("GC-D2"),
        ),
        (
            "Drain without annotation",
            del_(&ready(site.clone())),
            Some("GC-D5"),
        ),
        (
            "Drain owned by a GarageNode",
            del_(&set(
                annotated.clone(),
                "/status/storageDrain",
                json!({"transactionId": "t", "actor": {"kind": "GarageNode", "name": "n", "namespace": "garage"}}),
            )),
            Some("GC-D4"),
        ),
        (
            "Drain without completedAt",
            del_(&set(
                annotated.clone(),
                "/status/storageDrain",
                del(token.clone(), "/completedAt"),
            )),
            Some("GC-D6"),
        ),
        (
            "Drain with unsorted IDs",
            del_(&set(
                annotated.clone(),
                "/status/storageDrain",
                set(
                    token.clone(),
                    "/roleRemovalNodeIds",
                    json!([hex('b'), hex('a')]),
                ),
            )),
            Some("GC-D6"),
        ),
        (
            "Drain with a foreign actor uid",
            del_(&set(
                annotated.clone(),
                "/status/storageDrain",
                set(token.clone(), "/actor/uid", json!("other")),
            )),
            Some("GC-D6"),
        ),
        ("Drain completed", del_(&done), None),
        (
            "Drain completed, foreground",
            validate_cluster(Review::delete(&gc(&done)), &foreground),
            Some("GC-D7"),
        ),
        (
            "Drain completed, degraded",
            del_(&set(
                done.clone(),
                "/spec/replication/consistencyMode",
                json!("degraded"),
            )),
            Some("GC-D8"),
        ),
        (
            "Drain completed, Block peers",
            del_(&set(
                done.clone(),
                "/spec/layoutManagement/drain/unverifiedPeersPolicy",
                json!("Block"),
            )),
            Some("GC-D9"),
        ),
        (
            "Drain completed, unhealthy",
            del_(&set(done.clone(), "/status/health/healthy", json!(false))),
            Some("GC-D10"),
        ),
    ]);
}
