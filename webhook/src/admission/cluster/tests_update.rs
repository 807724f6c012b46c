//! Table tests of UPDATE: grandfathering, immutability, live
//! volumes and VolumeAttributesClass. Sequencing and freezes are in
//! `tests_sequencing`, deletion in `tests_deletion`, spoke and scale in `tests_spoke`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::tests::{base, del, name, run, set, update};

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
        w.warnings()
            .iter()
            .any(|w| w.contains("temporarily tolerated") && w.ends_with("[GC-W19]"))
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
            .warnings()
            .iter()
            .any(|w| w.contains("keep every managed workload frozen") && w.ends_with("[GC-W27]"))
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
            "edge class change live",
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
