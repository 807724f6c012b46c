//! Table tests of the node-local pool rules: GC-C20/C21 shape, the cross-cluster
//! exclusivity and limits, and retained-pool updates GC-S6..S9.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::Node;
use serde_json::{Value, json};

use super::tests::{create, create_with, gc, pool, pool_base, run, set, update, update_with};
use crate::admission::Context;
use crate::admission::testing::warned;

fn p(path: &str, value: Value) -> Value {
    set(
        pool_base(),
        &format!("/spec/storage/nodeLocalPools/0{path}"),
        value,
    )
}

fn multi(paths: Value, capacity: &str) -> Value {
    let v = set(
        super::tests::del(pool_base(), "/spec/storage/nodeLocalPools/0/data"),
        "/spec/storage/nodeLocalPools/0/dataPaths",
        paths,
    );
    set(
        v,
        "/spec/storage/nodeLocalPools/0/capacity",
        json!(capacity),
    )
}

fn disk(path: &str, host: &str, cap: Option<&str>, read_only: bool) -> Value {
    let mut d = json!({"path": path, "hostPath": host, "hostPathType": "Directory"});
    if let Some(c) = cap {
        d["capacity"] = json!(c);
    }
    if read_only {
        d["readOnly"] = json!(true);
    }
    d
}

#[test]
fn pool_shape_gc_c20_c21() {
    let two = set(
        pool_base(),
        "/spec/storage/nodeLocalPools/1",
        pool("local-700", "/mnt/other"),
    );
    run(vec![
        (
            "no admin token",
            create(&super::tests::del(pool_base(), "/spec/admin")),
            Some("GC-C20"),
        ),
        (
            "blank admin token name",
            create(&set(
                pool_base(),
                "/spec/admin/adminTokenSecretRef/name",
                json!(" "),
            )),
            Some("GC-C20"),
        ),
        (
            "zoneFrom + remote clusters",
            create(&set(
                set(pool_base(), "/spec/zoneFrom", json!({"nodeLabel": "zone"})),
                "/spec/remoteClusters",
                json!([{"name": "b", "zone": "b", "connection": {"adminApiEndpoint": "http://b:3903"}}]),
            )),
            Some("GC-C20"),
        ),
        (
            "publicEndpoint on pool-only Auto tier",
            create(&set(
                set(pool_base(), "/spec/storage/layoutPolicy", json!("Auto")),
                "/spec/publicEndpoint",
                json!({"type": "LoadBalancer"}),
            )),
            Some("GC-C20"),
        ),
        (
            "publicEndpoint on pool-only Manual tier",
            create(&set(
                pool_base(),
                "/spec/publicEndpoint",
                json!({"type": "LoadBalancer"}),
            )),
            None,
        ),
        ("empty name", create(&p("/name", json!(""))), Some("GC-C21")),
        (
            "bad name",
            create(&p("/name", json!("Local_700"))),
            Some("GC-C21"),
        ),
        ("duplicate name", create(&two), Some("GC-C21")),
        (
            "no capacity",
            create(&super::tests::del(
                pool_base(),
                "/spec/storage/nodeLocalPools/0/capacity",
            )),
            Some("GC-C21"),
        ),
        (
            "capacity 1023",
            create(&p("/capacity", json!("1023"))),
            Some("GC-C21"),
        ),
        ("capacity 1Ki", create(&p("/capacity", json!("1Ki"))), None),
        (
            "empty selector",
            create(&p("/selector", json!({}))),
            Some("GC-C21"),
        ),
        (
            "absent selector",
            create(&super::tests::del(
                pool_base(),
                "/spec/storage/nodeLocalPools/0/selector",
            )),
            Some("GC-C21"),
        ),
        (
            "invalid selector",
            create(&p(
                "/selector",
                json!({"matchExpressions": [{"key": "a", "operator": "Near"}]}),
            )),
            Some("GC-C21"),
        ),
        (
            "reserved selector key",
            create(&p(
                "/selector",
                json!({"matchLabels": {"garage.rajsingh.info/gc-abc": "true"}}),
            )),
            Some("GC-C21"),
        ),
        (
            "required node affinity",
            create(&p(
                "/podTemplate",
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}),
            )),
            Some("GC-C21"),
        ),
        (
            "preferred node affinity",
            create(&p(
                "/podTemplate",
                json!({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}}),
            )),
            None,
        ),
        (
            "relative metadata path",
            create(&p("/metadata/hostPath", json!("var/lib/garage"))),
            Some("GC-C21"),
        ),
        (
            "empty metadata path",
            create(&p("/metadata/hostPath", json!(""))),
            Some("GC-C21"),
        ),
        (
            "data at host root",
            create(&p("/data/hostPath", json!("/"))),
            Some("GC-C21"),
        ),
        (
            "unnormalized data path",
            create(&p("/data/hostPath", json!("/var/lib/garage//data"))),
            Some("GC-C21"),
        ),
        (
            "data under metadata",
            create(&p(
                "/data/hostPath",
                json!("/var/lib/garage/local-700/metadata/data"),
            )),
            Some("GC-C21"),
        ),
        (
            "no data and no dataPaths",
            create(&super::tests::del(
                pool_base(),
                "/spec/storage/nodeLocalPools/0/data",
            )),
            Some("GC-C21"),
        ),
        (
            "data and dataPaths",
            create(&p(
                "/dataPaths",
                json!([disk("/data/a", "/mnt/a", Some("1Gi"), false)]),
            )),
            Some("GC-C21"),
        ),
        (
            "reserved pod label",
            create(&p(
                "/podTemplate",
                json!({"podLabels": {"garage.rajsingh.info/kubernetes-node": "x"}}),
            )),
            Some("GC-C21"),
        ),
        (
            "invalid pod label key",
            create(&p(
                "/podTemplate",
                json!({"podLabels": {"not a label": "x"}}),
            )),
            Some("GC-C21"),
        ),
        (
            "reserved pod annotation",
            create(&p(
                "/podTemplate",
                json!({"podAnnotations": {"garage.rajsingh.info/config-hash": "x"}}),
            )),
            Some("GC-C21"),
        ),
        (
            "rpc template",
            create(&p(
                "/network",
                json!({"rpcPublicAddrTemplate": "{nodeName}.storage.example.net:3901"}),
            )),
            None,
        ),
        (
            "rpc template without nodeName",
            create(&p(
                "/network",
                json!({"rpcPublicAddrTemplate": "shared.storage.example.net:3901"}),
            )),
            Some("GC-C21"),
        ),
        (
            "rpc template with scheme",
            create(&p(
                "/network",
                json!({"rpcPublicAddrTemplate": "http://{nodeName}:3901"}),
            )),
            Some("GC-C21"),
        ),
        (
            "rpc template bad port",
            create(&p(
                "/network",
                json!({"rpcPublicAddrTemplate": "{nodeName}.example.net:70000"}),
            )),
            Some("GC-C21"),
        ),
        (
            "33 pools",
            create(&set(
                pool_base(),
                "/spec/storage/nodeLocalPools",
                Value::Array(
                    (0..33)
                        .map(|i| pool(&format!("p{i}"), &format!("/mnt/p{i}")))
                        .collect(),
                ),
            )),
            Some("GC-NLP-LIMIT"),
        ),
        (
            "32 pools",
            create(&set(
                pool_base(),
                "/spec/storage/nodeLocalPools",
                Value::Array(
                    (0..32)
                        .map(|i| pool(&format!("p{i}"), &format!("/mnt/p{i}")))
                        .collect(),
                ),
            )),
            None,
        ),
    ]);
}

#[test]
fn multi_disk_pools_gc_c21() {
    let fast = disk("/data/fast", "/mnt/fast/garage", Some("500Gi"), false);
    let archive = disk("/data/archive", "/mnt/archive/garage", Some("200Gi"), false);
    let old_ro = disk("/data/old", "/mnt/old/garage", None, true);
    let many: Vec<Value> = (0..33)
        .map(|i| {
            disk(
                &format!("/data/d{i}"),
                &format!("/mnt/d{i}"),
                Some("10Gi"),
                false,
            )
        })
        .collect();
    run(vec![
        (
            "500+200 writable + read-only, 700Gi",
            create(&multi(json!([fast, archive, old_ro]), "700Gi")),
            None,
        ),
        (
            "701Gi exceeds writable sum",
            create(&multi(json!([fast, archive]), "701Gi")),
            Some("GC-C21"),
        ),
        (
            "read-only with capacity",
            create(&multi(
                json!([fast, disk("/data/ro", "/mnt/ro", Some("1Gi"), true)]),
                "500Gi",
            )),
            Some("GC-C21"),
        ),
        (
            "writable without capacity",
            create(&multi(
                json!([fast, disk("/data/w", "/mnt/w", None, false)]),
                "500Gi",
            )),
            Some("GC-C21"),
        ),
        (
            "writable with zero capacity",
            create(&multi(
                json!([fast, disk("/data/w", "/mnt/w", Some("0"), false)]),
                "500Gi",
            )),
            Some("GC-C21"),
        ),
        (
            "only read-only paths",
            create(&multi(json!([old_ro]), "1Gi")),
            Some("GC-C21"),
        ),
        (
            "path /data/metadata/nested",
            create(&multi(
                json!([disk("/data/metadata/nested", "/mnt/x", Some("1Ti"), false)]),
                "1Gi",
            )),
            Some("GC-C21"),
        ),
        (
            "path /secrets/metrics",
            create(&multi(
                json!([disk("/secrets/metrics", "/mnt/x", Some("1Ti"), false)]),
                "1Gi",
            )),
            Some("GC-C21"),
        ),
        (
            "path /var/run/garage-volume-markers/data-0",
            create(&multi(
                json!([disk(
                    "/var/run/garage-volume-markers/data-0",
                    "/mnt/x",
                    Some("1Ti"),
                    false
                )]),
                "1Gi",
            )),
            Some("GC-C21"),
        ),
        (
            "path /data",
            create(&multi(
                json!([disk("/data", "/mnt/x", Some("1Ti"), false)]),
                "1Gi",
            )),
            Some("GC-C21"),
        ),
        (
            "overlapping container paths",
            create(&multi(
                json!([fast, disk("/data/fast/sub", "/mnt/sub", Some("1Gi"), false)]),
                "1Gi",
            )),
            Some("GC-C21"),
        ),
        (
            "overlapping host paths in the pool",
            create(&multi(
                json!([
                    fast,
                    disk("/data/b", "/mnt/fast/garage/b", Some("1Gi"), false)
                ]),
                "1Gi",
            )),
            Some("GC-C21"),
        ),
        (
            "33 data paths",
            create(&multi(Value::Array(many), "1Gi")),
            Some("GC-NLP-LIMIT"),
        ),
    ]);
}

fn node(name: &str, pool: &str) -> Node {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": {"storage.garage.example/pool": pool}}}),
    )
    .unwrap()
}

#[test]
fn seed_000_exclusive_host_paths_gc_nlp_overlap() {
    let second = |root: &str| {
        set(
            pool_base(),
            "/spec/storage/nodeLocalPools/1",
            pool("local-b", root),
        )
    };
    let mut other = pool_base();
    other["metadata"] = json!({"name": "other", "namespace": "elsewhere"});
    let ctx = Context {
        garage_clusters: vec![gc(&other)],
        ..Default::default()
    };
    let mut disjoint = pool_base();
    disjoint["spec"]["storage"]["nodeLocalPools"][0] = pool("local-700", "/mnt/mine");
    let old_overlap = second("/var/lib/garage/local-700/data/inner");
    let foreign = create_with(&pool_base(), &ctx).message();
    assert!(
        !foreign.contains("elsewhere") && !foreign.contains("\"local-700\""),
        "a denial names another namespace's cluster: {foreign}"
    );
    assert!(foreign.contains("another namespace"), "{foreign}");
    let mut neighbour = other.clone();
    neighbour["metadata"]["namespace"] = json!("garage");
    let local = Context {
        garage_clusters: vec![gc(&neighbour)],
        ..Default::default()
    };
    let same_ns = create_with(&pool_base(), &local).message();
    assert!(same_ns.contains("garage/other"), "{same_ns}");
    run(vec![
        ("two pools, disjoint paths", create(&second("/mnt/b")), None),
        (
            "second pool inside first pool's data",
            create(&second("/var/lib/garage/local-700/data/inner")),
            Some("GC-NLP-OVERLAP"),
        ),
        (
            "second pool metadata above first pool",
            create(&set(
                second("/mnt/b"),
                "/spec/storage/nodeLocalPools/1/metadata/hostPath",
                json!("/var/lib/garage"),
            )),
            Some("GC-NLP-OVERLAP"),
        ),
        (
            "same paths as a pool in another namespace",
            create_with(&pool_base(), &ctx),
            Some("GC-NLP-OVERLAP"),
        ),
        (
            "disjoint from the other cluster",
            create_with(&disjoint, &ctx),
            None,
        ),
        (
            "own stored object is not a conflict",
            update_with(
                &pool_base(),
                &set(pool_base(), "/spec/image", json!("garage:v2")),
                &Context {
                    garage_clusters: vec![gc(&pool_base())],
                    ..Default::default()
                },
            ),
            None,
        ),
        (
            "legacy overlap survives an unrelated edit",
            update(
                &old_overlap,
                &set(old_overlap.clone(), "/spec/image", json!("garage:v2")),
            ),
            None,
        ),
    ]);
}

#[test]
fn seed_000_node_and_role_limits() {
    let nodes = |n: usize| {
        (0..n)
            .map(|i| node(&format!("n{i}"), "local-700"))
            .collect::<Vec<_>>()
    };
    let ctx = |n| Context {
        nodes: nodes(n),
        ..Default::default()
    };
    let shrunk = set(
        pool_base(),
        "/spec/storage/nodeLocalPools/0/selector",
        json!({"matchLabels": {"storage.garage.example/pool": "none"}}),
    );
    let with_default = set(
        set(
            set(pool_base(), "/spec/storage/layoutPolicy", json!("Auto")),
            "/spec/storage/replicas",
            json!(3),
        ),
        "/spec/storage/metadata",
        json!({"size": "1Gi"}),
    );
    let with_default = set(with_default, "/spec/storage/data", json!({"size": "1Gi"}));
    run(vec![
        (
            "255 selected Nodes",
            create_with(&pool_base(), &ctx(255)),
            None,
        ),
        (
            "256 selected Nodes",
            create_with(&pool_base(), &ctx(256)),
            Some("GC-NLP-NODES"),
        ),
        (
            "unrelated Nodes are not counted",
            create_with(
                &pool_base(),
                &Context {
                    nodes: (0..300).map(|i| node(&format!("x{i}"), "other")).collect(),
                    ..Default::default()
                },
            ),
            None,
        ),
        (
            "an oversized selection may stay",
            update_with(
                &pool_base(),
                &set(pool_base(), "/spec/image", json!("g:2")),
                &ctx(300),
            ),
            None,
        ),
        (
            "254 pool roles + 3 default replicas",
            create_with(&with_default, &ctx(254)),
            Some("GC-NLP-ROLES"),
        ),
        (
            "253 pool roles + 3 default replicas",
            create_with(&with_default, &ctx(253)),
            None,
        ),
    ]);
    assert!(!update_with(&pool_base(), &shrunk, &ctx(300)).broke("GC-NLP-NODES"));
}

#[test]
fn retained_pool_updates_gc_s6_to_s9() {
    let old = pool_base();
    let ro = |v: Value| {
        super::tests::del(
            set(
                v,
                "/spec/storage/nodeLocalPools/0/dataPaths/0/readOnly",
                json!(true),
            ),
            "/spec/storage/nodeLocalPools/0/dataPaths/0/capacity",
        )
    };
    let multi_old = multi(
        json!([disk(
            "/data/data",
            "/var/lib/garage/local-700/data",
            Some("700Gi"),
            false
        )]),
        "700Gi",
    );
    let added = multi(
        json!([
            disk(
                "/data/data",
                "/var/lib/garage/local-700/data",
                Some("700Gi"),
                false
            ),
            disk("/data/replacement", "/mnt/new", Some("700Gi"), false)
        ]),
        "700Gi",
    );
    let retained_ro = ro(added.clone());
    let removed = multi(
        json!([disk("/data/replacement", "/mnt/new", Some("700Gi"), false)]),
        "700Gi",
    );
    let moved = multi(
        json!([disk(
            "/data/moved",
            "/var/lib/garage/local-700/data",
            Some("700Gi"),
            false
        )]),
        "700Gi",
    );
    let ro_only_old = multi(
        json!([
            disk("/data/a", "/mnt/a", Some("700Gi"), false),
            disk("/data/old", "/mnt/old", None, true)
        ]),
        "700Gi",
    );
    let ro_removed = multi(
        json!([disk("/data/a", "/mnt/a", Some("700Gi"), false)]),
        "700Gi",
    );
    run(vec![
        (
            "metadata hostPath change",
            update(
                &old,
                &set(
                    old.clone(),
                    "/spec/storage/nodeLocalPools/0/metadata/hostPath",
                    json!("/mnt/meta"),
                ),
            ),
            Some("GC-S6"),
        ),
        (
            "metadata loosened",
            update(
                &old,
                &set(
                    old.clone(),
                    "/spec/storage/nodeLocalPools/0/metadata/hostPathType",
                    json!("DirectoryOrCreate"),
                ),
            ),
            Some("GC-S7"),
        ),
        (
            "metadata tightened",
            update(
                &set(
                    old.clone(),
                    "/spec/storage/nodeLocalPools/0/metadata/hostPathType",
                    json!("DirectoryOrCreate"),
                ),
                &old,
            ),
            None,
        ),
        (
            "data loosened",
            update(
                &old,
                &set(
                    old.clone(),
                    "/spec/storage/nodeLocalPools/0/data/hostPathType",
                    json!("DirectoryOrCreate"),
                ),
            ),
            Some("GC-S7"),
        ),
        (
            "data remapped",
            update(
                &old,
                &set(
                    old.clone(),
                    "/spec/storage/nodeLocalPools/0/data/hostPath",
                    json!("/mnt/new"),
                ),
            ),
            Some("GC-S8"),
        ),
        (
            "single to multi keeping /data/data",
            update(&old, &added),
            None,
        ),
        (
            "single to multi same mapping",
            update(&old, &multi_old),
            None,
        ),
        (
            "retained path turns read-only",
            update(&added, &retained_ro),
            None,
        ),
        (
            "writable path removed",
            update(&added, &removed),
            Some("GC-S8"),
        ),
        (
            "read-only path removed",
            update(&ro_only_old, &ro_removed),
            Some("GC-S8"),
        ),
        ("host path moved", update(&multi_old, &moved), Some("GC-S8")),
        (
            "capacity change",
            update(
                &old,
                &set(
                    old.clone(),
                    "/spec/storage/nodeLocalPools/0/capacity",
                    json!("800Gi"),
                ),
            ),
            None,
        ),
    ]);
    let w = update(
        &old,
        &set(
            old.clone(),
            "/spec/storage/nodeLocalPools/0/metadata/hostPathType",
            json!("Directory"),
        ),
    );
    assert!(w.allowed());
    let tightened = update(
        &set(
            old.clone(),
            "/spec/storage/nodeLocalPools/0/metadata/hostPathType",
            json!("DirectoryOrCreate"),
        ),
        &old,
    );
    let rolls = warned(&tightened, "metadata.hostPathType", "GC-W36");
    assert!(rolls, "{:?}", tightened.warnings());
    let grown = update(&old, &added);
    let rolls = warned(&grown, "data HostPath", "GC-W36");
    assert!(rolls, "{:?}", grown.warnings());
}
