//! Table tests of UPDATE: grandfathering, immutability, live
//! volumes and VolumeAttributesClass, safe sequencing and freezes.
//! Deletion is in `tests_deletion`, the spoke and scale rules in `tests_spoke`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::tests::{base, del, name, pool, pool_base, run, set, update};

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
fn grandfathering_gc_u1_u2_u6_u7() {
    let long = set(
        set(
            del(base(), "/spec/gateway"),
            "/metadata/name",
            json!(name(51)),
        ),
        "/spec/storage/replicas",
        json!(11),
    );
    let tpl = set(
        base(),
        "/spec/storage/metadata/volumeClaimTemplateSpec",
        json!({"accessModes": ["ReadWriteOnce"]}),
    );
    let over = set(base(), "/spec/storage/replicas", json!(51));
    let both = set(
        base(),
        "/spec/connectTo",
        json!({"clusterRef": {"name": "x"}}),
    );
    let legacy_auto = set(base(), "/spec/storage", json!({"replicas": 1}));
    let legacy_manual = set(
        set(base(), "/spec/layoutPolicy", json!("Manual")),
        "/spec/storage",
        json!({"replicas": 3}),
    );
    let mut deleting = long.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    run(vec![
        (
            "invalid name, finalizer-only",
            update(
                &long,
                &set(long.clone(), "/metadata/finalizers", json!(["f"])),
            ),
            None,
        ),
        (
            "invalid name, image change",
            update(&long, &spec_of(&long, "/spec/image", json!("g:2"))),
            Some("GC-U1"),
        ),
        (
            "invalid name, scale to 10 (strict path, prepared)",
            update(
                &ready(long.clone()),
                &spec_of(&long, "/spec/storage/replicas", json!(10)),
            ),
            None,
        ),
        (
            "invalid name, scale to 10 unprepared",
            update(&long, &spec_of(&long, "/spec/storage/replicas", json!(10))),
            Some("GC-S10"),
        ),
        (
            "invalid name, scale to 12",
            update(&long, &spec_of(&long, "/spec/storage/replicas", json!(12))),
            Some("GC-U1"),
        ),
        (
            "invalid name, being deleted",
            update(&long, &deleting),
            None,
        ),
        (
            "name valid before, invalid now",
            update(
                &base(),
                &set(base(), "/spec/gateway/replicas", json!(2)).clone(),
            ),
            None,
        ),
        (
            "unchanged claim template + pull policy",
            update(
                &tpl,
                &spec_of(&tpl, "/spec/imagePullPolicy", json!("Always")),
            ),
            None,
        ),
        (
            "changed claim template",
            update(
                &tpl,
                &spec_of(
                    &tpl,
                    "/spec/storage/metadata/volumeClaimTemplateSpec/accessModes",
                    json!(["ReadWriteMany"]),
                ),
            ),
            Some("GC-U2"),
        ),
        ("removed claim template", update(&tpl, &base()), None),
        (
            "51 replicas, finalizer update",
            update(
                &over,
                &set(over.clone(), "/metadata/finalizers", json!(["f"])),
            ),
            None,
        ),
        (
            "51 -> 52 replicas",
            update(&over, &spec_of(&over, "/spec/storage/replicas", json!(52))),
            Some("GC-U6"),
        ),
        (
            "storage + connectTo, finalizer update",
            update(
                &both,
                &set(both.clone(), "/metadata/finalizers", json!(["f"])),
            ),
            None,
        ),
        (
            "storage + connectTo, image change",
            update(&both, &spec_of(&both, "/spec/image", json!("g:2"))),
            Some("GC-U7"),
        ),
        (
            "Auto replicas without volumes, finalizer update",
            update(
                &legacy_auto,
                &set(legacy_auto.clone(), "/metadata/finalizers", json!(["f"])),
            ),
            None,
        ),
        (
            "Auto replicas without volumes, image change",
            update(
                &legacy_auto,
                &spec_of(&legacy_auto, "/spec/image", json!("g:2")),
            ),
            Some("GC-U7"),
        ),
        (
            "L-11 fixed: Manual replicas without volumes, image change",
            update(
                &legacy_manual,
                &spec_of(&legacy_manual, "/spec/image", json!("g:2")),
            ),
            None,
        ),
    ]);
    let w = update(
        &tpl,
        &spec_of(&tpl, "/spec/imagePullPolicy", json!("Always")),
    );
    assert!(
        w.warnings
            .iter()
            .any(|w| w.contains("temporarily tolerated"))
    );
}

#[test]
fn immutable_identity_gc_u10_to_u14() {
    let handle = |ep: &str| json!({"metadata": {"name": "h", "namespace": "garage"}, "spec": {"connectTo": {"adminApiEndpoint": ep, "adminTokenSecretRef": {"name": "t", "key": "k"}}}});
    let rpc_handle = |s: Option<&str>| {
        let mut v = handle("http://a:3903");
        if let Some(s) = s {
            v = set(
                v,
                "/spec/connectTo/rpcSecretRef",
                json!({"name": s, "key": "mesh"}),
            );
        }
        v
    };
    let legacy_env = set(
        base(),
        "/spec/storage/env",
        json!([{"name": "GARAGE_RPC_SECRET", "value": "abc"}]),
    );
    let staged = set(
        set(
            legacy_env.clone(),
            "/metadata/annotations",
            json!({"garage.rajsingh.info/migrate-legacy-rpc-secret": "true"}),
        ),
        "/spec/network/rpcSecretRef",
        json!({"name": "imported", "key": "rpc-secret"}),
    );
    run(vec![
        (
            "admin port 3903 unchanged",
            update(
                &base(),
                &spec_of(&base(), "/spec/admin/bindPort", json!(3903)),
            ),
            None,
        ),
        (
            "admin port moved by bindPort",
            update(
                &base(),
                &spec_of(&base(), "/spec/admin/bindPort", json!(4903)),
            ),
            Some("GC-U10"),
        ),
        (
            "admin address wins over port",
            update(
                &base(),
                &spec_of(
                    &spec_of(&base(), "/spec/admin/bindPort", json!(4903)),
                    "/spec/admin/bindAddress",
                    json!("[::]:3903"),
                ),
            ),
            None,
        ),
        (
            "admin port moved by address",
            update(
                &base(),
                &spec_of(&base(), "/spec/admin/bindAddress", json!("[::]:4903")),
            ),
            Some("GC-U10"),
        ),
        (
            "rpc secret changed",
            update(
                &base(),
                &spec_of(
                    &base(),
                    "/spec/network/rpcSecretRef",
                    json!({"name": "other", "key": "rpc-secret"}),
                ),
            ),
            Some("GC-U11"),
        ),
        (
            "explicit default rpc secret",
            update(
                &base(),
                &spec_of(
                    &base(),
                    "/spec/network/rpcSecretRef",
                    json!({"name": "garage-rpc-secret", "key": ""}),
                ),
            ),
            None,
        ),
        (
            "handle first attach",
            update(&rpc_handle(None), &rpc_handle(Some("external-rpc"))),
            None,
        ),
        (
            "handle rotate",
            update(
                &rpc_handle(Some("external-rpc")),
                &rpc_handle(Some("other")),
            ),
            Some("GC-U11"),
        ),
        (
            "legacy migration staging",
            update(&legacy_env, &staged),
            None,
        ),
        (
            "migration without annotation",
            update(&legacy_env, &del(staged.clone(), "/metadata/annotations")),
            Some("GC-U11"),
        ),
        (
            "migration with image change",
            update(&legacy_env, &spec_of(&staged, "/spec/image", json!("g:2"))),
            Some("GC-U11"),
        ),
        (
            "handle endpoint normalised",
            update(&handle("http://A:3903"), &handle("HTTP://A:3903/")),
            None,
        ),
        (
            "handle retargeted",
            update(&handle("http://a:3903"), &handle("http://b:3903")),
            Some("GC-U12"),
        ),
        (
            "handle gains a gateway",
            update(
                &handle("http://a:3903"),
                &spec_of(
                    &handle("http://a:3903"),
                    "/spec/gateway",
                    json!({"replicas": 1}),
                ),
            ),
            Some("GC-U12"),
        ),
        (
            "cluster Manual -> Auto",
            update(
                &set(base(), "/spec/layoutPolicy", json!("Manual")),
                &set(base(), "/spec/layoutPolicy", json!("Auto")),
            ),
            Some("GC-U13"),
        ),
        (
            "storage Manual -> Auto",
            update(
                &set(base(), "/spec/storage/layoutPolicy", json!("Manual")),
                &set(base(), "/spec/storage/layoutPolicy", json!("Auto")),
            ),
            Some("GC-U14"),
        ),
        (
            "storage Manual override cleared",
            update(
                &set(base(), "/spec/storage/layoutPolicy", json!("Manual")),
                &base(),
            ),
            Some("GC-U14"),
        ),
        (
            "Manual -> Manual",
            update(
                &set(base(), "/spec/layoutPolicy", json!("Manual")),
                &set(
                    set(base(), "/spec/layoutPolicy", json!("Manual")),
                    "/spec/image",
                    json!("g:2"),
                ),
            ),
            None,
        ),
    ]);
    assert!(
        update(&legacy_env, &staged)
            .warnings
            .iter()
            .any(|w| w.contains("keep every managed workload frozen"))
    );
}

#[test]
fn live_volumes_gc_s5_and_vac_gc_vac_1() {
    let zero = set(base(), "/spec/storage/replicas", json!(0));
    let vac = |v: Value, c: &str| set(v, "/spec/storage/data/volumeAttributesClassName", json!(c));
    let edge = |r: i64, m: Value| json!({"metadata": {"name": "e", "namespace": "garage"}, "spec": {"gateway": {"replicas": r, "metadata": m}, "connectTo": {"clusterRef": {"name": "s"}}}});
    let paths = set(
        base(),
        "/spec/storage/data",
        json!({"paths": [{"path": "/data/a", "capacity": "1Gi", "volume": {"size": "1Gi", "volumeAttributesClassName": "fast"}}]}),
    );
    run(vec![
        (
            "0 -> 1 with selector change",
            update(
                &zero,
                &spec_of(
                    &set(base(), "/spec/storage/replicas", json!(1)),
                    "/spec/storage/metadata/selector",
                    json!({"matchLabels": {"a": "b"}}),
                ),
            ),
            Some("GC-S5"),
        ),
        (
            "0 -> 0 selector change",
            update(
                &zero,
                &spec_of(
                    &zero,
                    "/spec/storage/metadata/selector",
                    json!({"matchLabels": {"a": "b"}}),
                ),
            ),
            None,
        ),
        (
            "live data selector change",
            update(
                &base(),
                &spec_of(
                    &base(),
                    "/spec/storage/data/selector",
                    json!({"matchLabels": {"a": "b"}}),
                ),
            ),
            Some("GC-S5"),
        ),
        (
            "live class name change",
            update(
                &base(),
                &spec_of(
                    &base(),
                    "/spec/storage/data/storageClassName",
                    json!("gold"),
                ),
            ),
            Some("GC-S5"),
        ),
        (
            "live size growth",
            update(
                &base(),
                &spec_of(&base(), "/spec/storage/data/size", json!("20Gi")),
            ),
            None,
        ),
        (
            "live size shrink",
            update(
                &base(),
                &spec_of(&base(), "/spec/storage/data/size", json!("5Gi")),
            ),
            Some("GC-S5"),
        ),
        (
            "live size 10Gi -> 10240Mi",
            update(
                &base(),
                &spec_of(&base(), "/spec/storage/data/size", json!("10240Mi")),
            ),
            None,
        ),
        (
            "live volume removed",
            update(&base(), &del(base(), "/spec/storage/metadata")),
            Some("GC-S5"),
        ),
        (
            "live paths added",
            update(
                &base(),
                &spec_of(
                    &base(),
                    "/spec/storage/data/paths",
                    json!([{"path": "/data/a"}]),
                ),
            ),
            Some("GC-S5"),
        ),
        (
            "live path volume class change",
            update(
                &paths,
                &spec_of(
                    &paths,
                    "/spec/storage/data/paths/0/volume/volumeAttributesClassName",
                    json!("slow"),
                ),
            ),
            None,
        ),
        (
            "live path volume class unset",
            update(
                &paths,
                &del(
                    paths.clone(),
                    "/spec/storage/data/paths/0/volume/volumeAttributesClassName",
                ),
            ),
            Some("GC-VAC-1"),
        ),
        (
            "live path capacity shrink",
            update(
                &paths,
                &spec_of(
                    &paths,
                    "/spec/storage/data/paths/0/capacity",
                    json!("512Mi"),
                ),
            ),
            Some("GC-S5"),
        ),
        (
            "VAC set -> set while live",
            update(&vac(base(), "fast"), &vac(base(), "slow")),
            None,
        ),
        (
            "VAC unset -> set while live",
            update(&base(), &vac(base(), "fast")),
            None,
        ),
        (
            "VAC set -> unset while live",
            update(&vac(base(), "fast"), &base()),
            Some("GC-VAC-1"),
        ),
        (
            "VAC set -> unset at zero replicas",
            update(&vac(zero.clone(), "fast"), &zero),
            None,
        ),
        (
            "VAC set -> unset combined with scale to zero",
            update(&ready(vac(base(), "fast")), &zero),
            Some("GC-VAC-1"),
        ),
        (
            "VAC change with size growth",
            update(
                &vac(base(), "fast"),
                &spec_of(
                    &vac(base(), "slow"),
                    "/spec/storage/data/size",
                    json!("20Gi"),
                ),
            ),
            None,
        ),
        (
            "Manual storage: no live rule",
            update(
                &set(base(), "/spec/storage/layoutPolicy", json!("Manual")),
                &set(
                    set(base(), "/spec/storage/layoutPolicy", json!("Manual")),
                    "/spec/storage/data/storageClassName",
                    json!("gold"),
                ),
            ),
            None,
        ),
        (
            "edge size growth live",
            update(
                &edge(1, json!({"size": "1Gi"})),
                &edge(1, json!({"size": "2Gi"})),
            ),
            Some("GC-S5"),
        ),
        (
            "edge size change with scale to 0",
            update(
                &edge(1, json!({"size": "1Gi"})),
                &edge(0, json!({"size": "2Gi"})),
            ),
            Some("GC-S5"),
        ),
        (
            "edge 0 -> 0 size change",
            update(
                &edge(0, json!({"size": "1Gi"})),
                &edge(0, json!({"size": "2Gi"})),
            ),
            None,
        ),
        (
            "edge class change live (seed 002)",
            update(
                &edge(1, json!({"size": "1Gi", "volumeAttributesClassName": "a"})),
                &edge(1, json!({"size": "1Gi", "volumeAttributesClassName": "b"})),
            ),
            None,
        ),
        (
            "edge class added live",
            update(
                &edge(1, json!({"size": "1Gi"})),
                &edge(1, json!({"size": "1Gi", "volumeAttributesClassName": "b"})),
            ),
            None,
        ),
        (
            "edge class unset live",
            update(
                &edge(1, json!({"size": "1Gi", "volumeAttributesClassName": "a"})),
                &edge(1, json!({"size": "1Gi"})),
            ),
            Some("GC-VAC-1"),
        ),
        (
            "unified gateway metadata growth",
            update(
                &set(base(), "/spec/gateway/metadata", json!({"size": "1Gi"})),
                &set(base(), "/spec/gateway/metadata", json!({"size": "2Gi"})),
            ),
            None,
        ),
        (
            "unified gateway class unset",
            update(
                &set(
                    base(),
                    "/spec/gateway/metadata",
                    json!({"size": "1Gi", "volumeAttributesClassName": "a"}),
                ),
                &set(base(), "/spec/gateway/metadata", json!({"size": "1Gi"})),
            ),
            Some("GC-VAC-1"),
        ),
    ]);
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
            .warnings
            .iter()
            .any(|w| w.contains("one-node-at-a-time"))
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
