//! Table tests of UPDATE sequencing: positive-capacity removal on a prepared
//! generation (GC-S10), freezes (GC-S1 to GC-S4) and replication-factor changes (GC-S11).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::tests::{base, del, pool, pool_base, run, set, update};

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

fn spec_of(v: &Value, path: &str, value: Value) -> Value {
    set(v.clone(), path, value)
}

#[test]
fn positive_capacity_removal_gc_s10() {
    let two = set(
        pool_base(),
        "/spec/storage/nodeLocalPools/1",
        pool("local-b", "/mnt/b"),
    );
    let fed = |v: Value| {
        set(
            v,
            "/spec/remoteClusters",
            json!([{"name": "b", "zone": "b", "connection": {"adminApiEndpoint": "http://b:3903"}}]),
        )
    };
    let assume = |v: Value| {
        set(
            v,
            "/spec/layoutManagement/drain/unverifiedPeersPolicy",
            json!("AssumeConsistent"),
        )
    };
    let sel = |v: Value| {
        set(
            v,
            "/spec/storage/nodeLocalPools/0/selector/matchLabels/storage.garage.example~1pool",
            json!("x"),
        )
    };
    let fed_two = assume(set(
        fed(two.clone()),
        "/spec/deletionPolicy",
        json!("Destroy"),
    ));
    let degraded = set(
        base(),
        "/spec/replication/consistencyMode",
        json!("degraded"),
    );
    let manual = set(base(), "/spec/storage/layoutPolicy", json!("Manual"));
    let mut unready = ready(two.clone());
    unready["status"]["health"]["storageNodesOk"] = json!(2);
    run(vec![
        (
            "remove one pool, ready",
            update(&ready(two.clone()), &pool_base()),
            None,
        ),
        (
            "remove one pool + image",
            update(
                &ready(two.clone()),
                &spec_of(&pool_base(), "/spec/image", json!("g:2")),
            ),
            Some("GC-S10"),
        ),
        (
            "remove one pool, not ready",
            update(&two, &pool_base()),
            Some("GC-S10"),
        ),
        (
            "remove one pool, unhealthy",
            update(&unready, &pool_base()),
            Some("GC-S10"),
        ),
        (
            "selector change + podTemplate",
            update(
                &ready(pool_base()),
                &spec_of(
                    &sel(pool_base()),
                    "/spec/storage/nodeLocalPools/0/podTemplate",
                    json!({"priorityClassName": "p"}),
                ),
            ),
            Some("GC-S10"),
        ),
        (
            "selector change, ready",
            update(&ready(pool_base()), &sel(pool_base())),
            None,
        ),
        (
            "Auto scale down + fsync",
            update(
                &ready(base()),
                &spec_of(
                    &set(base(), "/spec/storage/replicas", json!(2)),
                    "/spec/storage/metadataFsync",
                    json!(true),
                ),
            ),
            Some("GC-S10"),
        ),
        (
            "Auto N -> 0 + fsync",
            update(
                &ready(base()),
                &spec_of(
                    &set(base(), "/spec/storage/replicas", json!(0)),
                    "/spec/storage/metadataFsync",
                    json!(true),
                ),
            ),
            Some("GC-S10"),
        ),
        (
            "Auto scale down, ready",
            update(
                &ready(base()),
                &set(base(), "/spec/storage/replicas", json!(2)),
            ),
            None,
        ),
        (
            "Manual replicas -> 0, volumes removed, fsync",
            update(
                &manual,
                &spec_of(
                    &set(
                        manual.clone(),
                        "/spec/storage",
                        json!({"layoutPolicy": "Manual", "replicas": 0}),
                    ),
                    "/spec/storage/metadataFsync",
                    json!(true),
                ),
            ),
            None,
        ),
        (
            "scale down with degraded consistency",
            update(
                &ready(degraded.clone()),
                &set(degraded, "/spec/storage/replicas", json!(2)),
            ),
            Some("GC-S10"),
        ),
        (
            "federated without AssumeConsistent",
            update(
                &ready(set(
                    fed(two.clone()),
                    "/spec/deletionPolicy",
                    json!("Destroy"),
                )),
                &set(fed(pool_base()), "/spec/deletionPolicy", json!("Destroy")),
            ),
            Some("GC-S10"),
        ),
        (
            "federated with AssumeConsistent",
            update(
                &ready(fed_two.clone()),
                &assume(set(
                    fed(pool_base()),
                    "/spec/deletionPolicy",
                    json!("Destroy"),
                )),
            ),
            None,
        ),
        (
            "remove storage tier with live capacity",
            update(
                &ready(base()),
                &set(
                    del(base(), "/spec/storage"),
                    "/spec/connectTo",
                    json!({"clusterRef": {"name": "x"}}),
                ),
            ),
            Some("GC-S10"),
        ),
        (
            "pool addition is not a removal",
            update(&pool_base(), &two),
            None,
        ),
    ]);
    assert!(
        update(&ready(two), &pool_base())
            .warnings()
            .iter()
            .any(|w| w.contains("one-node-at-a-time") && w.ends_with("[GC-W39]"))
    );
}

#[test]
fn freezes_gc_s1_to_s4_and_factor_gc_s11() {
    let drain = set(
        base(),
        "/status/storageDrain",
        json!({"transactionId": "drain-1"}),
    );
    let rollout = |v: Value| {
        set(
            v,
            "/status/storageRollout",
            json!({"garageNodeName": "auto-cluster-storage-1", "desiredConfigHash": "h", "desiredPodSpecHash": "h", "garageNodeId": "x", "garageNodeUid": "u", "previousPodUid": "p", "workloadUid": "w"}),
        )
    };
    let recover = |v: Value, n: &str| {
        set(
            v,
            "/metadata/annotations/garage.rajsingh.info~1recover-storage-rollout",
            json!(n),
        )
    };
    let factor = |f: i64| set(base(), "/spec/replication/factor", json!(f));
    let purge = |v: Value, a: &str| {
        set(
            v,
            "/metadata/annotations/garage.rajsingh.info~1purge-cluster-layout",
            json!(a),
        )
    };
    run(vec![
        (
            "spec change during drain",
            update(&drain, &set(base(), "/spec/storage/replicas", json!(4))),
            Some("GC-S1"),
        ),
        (
            "label change during drain",
            update(&drain, &set(base(), "/metadata/labels", json!({"a": "b"}))),
            None,
        ),
        (
            "drain annotation change during drain",
            update(
                &drain,
                &set(
                    base(),
                    "/metadata/annotations",
                    json!({"garage.rajsingh.info/drain": "true"}),
                ),
            ),
            Some("GC-S2"),
        ),
        (
            "scale up during rollout",
            update(
                &rollout(base()),
                &set(base(), "/spec/storage/replicas", json!(4)),
            ),
            Some("GC-S4"),
        ),
        (
            "image change during rollout",
            update(&rollout(base()), &set(base(), "/spec/image", json!("g:2"))),
            None,
        ),
        (
            "pool podTemplate during rollout",
            update(
                &rollout(pool_base()),
                &set(
                    pool_base(),
                    "/spec/storage/nodeLocalPools/0/podTemplate",
                    json!({"priorityClassName": "x"}),
                ),
            ),
            None,
        ),
        (
            "recover annotation removed",
            update(&recover(rollout(base()), "n1"), &base()),
            Some("GC-S3"),
        ),
        (
            "recover annotation nonce changed",
            update(&recover(rollout(base()), "n1"), &recover(base(), "n2")),
            None,
        ),
        (
            "condition False without record",
            update(
                &set(
                    base(),
                    "/status/conditions",
                    json!([{"type": "StorageRolloutReady", "status": "False", "reason": "Waiting", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
                ),
                &set(base(), "/spec/storage/replicas", json!(4)),
            ),
            None,
        ),
        (
            "factor change without purge",
            update(&factor(1), &factor(2)),
            Some("GC-S11"),
        ),
        (
            "factor change, wrong purge",
            update(&factor(1), &purge(factor(2), "factor=3")),
            Some("GC-S11"),
        ),
        (
            "factor change with purge",
            update(&factor(1), &purge(factor(2), "factor=2")),
            None,
        ),
        (
            "factor change with force",
            update(&factor(1), &purge(factor(2), "force, factor=2")),
            None,
        ),
    ]);
    let denied = update(
        &rollout(base()),
        &set(base(), "/spec/storage/replicas", json!(2)),
    );
    assert!(
        denied.message().contains("auto-cluster-storage-1")
            && !denied.message().contains("recover-storage-rollout")
    );
}
