//! Table tests of the create-time GarageCluster rules for federation, layout,
//! zones and network, volumes, connectTo, and warnings.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::tests::{base, create, del, pool_base, run, set};

#[test]
fn federation_gc_c16_c17() {
    let remote = |n: &str, z: &str| json!({"name": n, "zone": z, "connection": {"adminApiEndpoint": "http://r:3903"}});
    let fed = |r: Value| {
        set(
            set(base(), "/spec/remoteClusters", r),
            "/spec/deletionPolicy",
            json!("Destroy"),
        )
    };
    let drain = |v: Value| set(v, "/spec/deletionPolicy", json!("Drain"));
    run(vec![
        (
            "two remotes",
            create(&fed(json!([remote("a", "za"), remote("b", "zb")]))),
            None,
        ),
        (
            "duplicate name",
            create(&fed(json!([remote("a", "za"), remote("a", "zb")]))),
            Some("GC-C16"),
        ),
        (
            "duplicate zone",
            create(&fed(json!([remote("a", "za"), remote("b", "za")]))),
            Some("GC-C16"),
        ),
        (
            "default capacity",
            create(&fed(json!([set(
                remote("a", "za"),
                "/defaultCapacity",
                json!("1Ti")
            )]))),
            Some("GC-C16"),
        ),
        (
            "bad endpoint",
            create(&fed(json!([set(
                remote("a", "za"),
                "/connection/adminApiEndpoint",
                json!("garage:3903")
            )]))),
            Some("GC-C16"),
        ),
        ("Drain standalone", create(&drain(base())), Some("GC-C17")),
        (
            "Drain degraded",
            create(&set(
                drain(fed(json!([remote("a", "za")]))),
                "/spec/replication/consistencyMode",
                json!("degraded"),
            )),
            Some("GC-C17"),
        ),
        (
            "Drain with Block peers",
            create(&drain(fed(json!([remote("a", "za")])))),
            Some("GC-C17"),
        ),
        (
            "Drain complete",
            create(&set(
                drain(fed(json!([remote("a", "za")]))),
                "/spec/layoutManagement/drain/unverifiedPeersPolicy",
                json!("AssumeConsistent"),
            )),
            None,
        ),
    ]);
}

#[test]
fn layout_zone_and_network_rules() {
    run(vec![
        (
            "AtLeast 4 of 3",
            create(&set(
                base(),
                "/spec/replication",
                json!({"factor": 3, "zoneRedundancyMode": "AtLeast", "zoneRedundancyMinZones": 4}),
            )),
            Some("GC-C18"),
        ),
        (
            "AtLeast 2 of 3",
            create(&set(
                base(),
                "/spec/replication",
                json!({"factor": 3, "zoneRedundancyMode": "AtLeast", "zoneRedundancyMinZones": 2}),
            )),
            None,
        ),
        (
            "bad zoneFrom label",
            create(&set(
                base(),
                "/spec/zoneFrom",
                json!({"nodeLabel": "not a valid key!"}),
            )),
            Some("GC-C19"),
        ),
        (
            "zoneFrom ok",
            create(&set(
                base(),
                "/spec/zoneFrom",
                json!({"nodeLabel": "topology.kubernetes.io/zone"}),
            )),
            None,
        ),
        (
            "ExternalIP endpoint",
            create(&set(
                base(),
                "/spec/publicEndpoint",
                json!({"type": "ExternalIP"}),
            )),
            Some("GC-C1"),
        ),
        (
            "ClusterIP with source ranges",
            create(&set(
                base(),
                "/spec/network/service",
                json!({"loadBalancerSourceRanges": ["10.0.0.0/8"]}),
            )),
            Some("GC-C2"),
        ),
        (
            "bad subnet",
            create(&set(
                base(),
                "/spec/network/rpcPublicAddrSubnet",
                json!("10.0.0.0"),
            )),
            Some("GC-C25"),
        ),
        (
            "good subnet",
            create(&set(
                base(),
                "/spec/network/rpcPublicAddrSubnet",
                json!("10.0.0.0/8"),
            )),
            None,
        ),
        (
            "listener conflict",
            create(&set(base(), "/spec/network/rpcBindPort", json!(3900))),
            Some("GC-C25"),
        ),
        (
            "ping timeout too short",
            create(&set(base(), "/spec/network/rpcPingTimeout", json!("500us"))),
            Some("GC-C26"),
        ),
        (
            "negative ram buffer",
            create(&set(base(), "/spec/blocks/ramBufferMax", json!("-1Mi"))),
            Some("GC-C26"),
        ),
        (
            "valid config values",
            create(&set(
                set(
                    set(
                        base(),
                        "/spec/blocks",
                        json!({"size": "1Mi", "compressionLevel": "0"}),
                    ),
                    "/spec/database",
                    json!({"fjallBlockCacheSize": "1Mi"}),
                ),
                "/spec/storage/metadataAutoSnapshotInterval",
                json!("600s"),
            )),
            None,
        ),
        (
            "short snapshot interval",
            create(&set(
                base(),
                "/spec/storage/metadataAutoSnapshotInterval",
                json!("5m"),
            )),
            Some("GC-C26"),
        ),
        (
            "minNodesHealthy over replicas",
            create(&set(
                set(base(), "/spec/storage/replicas", json!(0)),
                "/spec/layoutManagement/minNodesHealthy",
                json!(3),
            )),
            Some("GC-C27"),
        ),
        (
            "minNodesHealthy within total",
            create(&set(
                base(),
                "/spec/layoutManagement/minNodesHealthy",
                json!(5),
            )),
            None,
        ),
        (
            "minNodesHealthy with pools unbounded",
            create(&set(
                pool_base(),
                "/spec/layoutManagement/minNodesHealthy",
                json!(9),
            )),
            None,
        ),
    ]);
}

#[test]
fn default_group_volumes_gc_c22_and_gateway_metadata_gc_c23() {
    let gw_meta = |m: Value| set(base(), "/spec/gateway/metadata", m);
    run(vec![
        (
            "replicas 1 without metadata",
            create(&del(base(), "/spec/storage/metadata")),
            Some("GC-C22"),
        ),
        (
            "replicas 1 without data",
            create(&del(base(), "/spec/storage/data")),
            Some("GC-C22"),
        ),
        (
            "explicit replicas 0 without volumes",
            create(&set(base(), "/spec/storage", json!({"replicas": 0}))),
            None,
        ),
        (
            "replicas 0, metadata {} and EmptyDir data",
            create(&set(
                base(),
                "/spec/storage",
                json!({"replicas": 0, "metadata": {}, "data": {"type": "EmptyDir"}}),
            )),
            None,
        ),
        (
            "metadata paths",
            create(&set(
                base(),
                "/spec/storage/metadata/paths",
                json!([{"path": "/a"}]),
            )),
            Some("GC-C22"),
        ),
        (
            "EmptyDir data with paths",
            create(&set(
                base(),
                "/spec/storage/data",
                json!({"type": "EmptyDir", "paths": [{"path": "/a"}]}),
            )),
            Some("GC-C22"),
        ),
        (
            "PVC data without size",
            create(&set(base(), "/spec/storage/data", json!({}))),
            Some("GC-C22"),
        ),
        (
            "EmptyDir with class name",
            create(&set(
                base(),
                "/spec/storage/data",
                json!({"type": "EmptyDir", "storageClassName": "x"}),
            )),
            Some("GC-C22"),
        ),
        (
            "EmptyDir with VAC",
            create(&set(
                base(),
                "/spec/storage/data",
                json!({"type": "EmptyDir", "volumeAttributesClassName": "fast"}),
            )),
            Some("GC-C22"),
        ),
        (
            "path volume EmptyDir with VAC",
            create(&set(
                base(),
                "/spec/storage/data",
                json!({"paths": [{"path": "/data/a", "volume": {"type": "EmptyDir", "volumeAttributesClassName": "fast"}}]}),
            )),
            Some("GC-C22"),
        ),
        (
            "PVC metadata and data with VAC",
            create(&set(
                set(
                    base(),
                    "/spec/storage/metadata/volumeAttributesClassName",
                    json!("fast-pool-3"),
                ),
                "/spec/storage/data/volumeAttributesClassName",
                json!("fast-pool-3"),
            )),
            None,
        ),
        (
            "invalid PV selector",
            create(&set(
                base(),
                "/spec/storage/data/selector",
                json!({"matchExpressions": [{"key": "a", "operator": "Near"}]}),
            )),
            Some("GC-C22"),
        ),
        (
            "Manual without volumes",
            create(&set(
                set(base(), "/spec/layoutPolicy", json!("Manual")),
                "/spec/storage",
                json!({"replicas": 3}),
            )),
            None,
        ),
        (
            "gateway metadata EmptyDir with class",
            create(&gw_meta(
                json!({"type": "EmptyDir", "storageClassName": "x"}),
            )),
            Some("GC-C23"),
        ),
        (
            "gateway metadata paths",
            create(&gw_meta(json!({"paths": [{"path": "/a"}]}))),
            Some("GC-C23"),
        ),
        (
            "gateway metadata claim template",
            create(&gw_meta(json!({"volumeClaimTemplateSpec": {}}))),
            Some("GC-C23"),
        ),
        (
            "gateway metadata under Manual",
            create(&set(
                gw_meta(json!({"size": "1Gi"})),
                "/spec/layoutPolicy",
                json!("Manual"),
            )),
            Some("GC-C23"),
        ),
        (
            "gateway metadata selector",
            create(&gw_meta(
                json!({"size": "1Gi", "selector": {"matchLabels": {"a": "b"}}}),
            )),
            None,
        ),
        (
            "gateway metadata bad selector",
            create(&gw_meta(
                json!({"selector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}),
            )),
            Some("GC-C23"),
        ),
        (
            "gateway metadata VAC",
            create(&gw_meta(
                json!({"size": "1Gi", "volumeAttributesClassName": "fast"}),
            )),
            None,
        ),
    ]);
}

#[test]
fn connect_to_gc_c24() {
    let handle = |c: Value| json!({"metadata": {"name": "h", "namespace": "garage"}, "spec": {"connectTo": c}});
    let edge = |c: Value| json!({"metadata": {"name": "e", "namespace": "garage"}, "spec": {"gateway": {"replicas": 1}, "connectTo": c}});
    let token = json!({"name": "t", "key": "k"});
    run(vec![
        (
            "handle endpoint + token",
            create(&handle(
                json!({"adminApiEndpoint": "http://g:3903", "adminTokenSecretRef": token}),
            )),
            None,
        ),
        (
            "handle clusterRef",
            create(&handle(json!({"clusterRef": {"name": "store"}}))),
            None,
        ),
        (
            "handle rpc + peers only",
            create(&handle(
                json!({"rpcSecretRef": {"name": "s", "key": "k"}, "bootstrapPeers": ["a@b:3901"]}),
            )),
            Some("GC-C24"),
        ),
        (
            "handle endpoint without token",
            create(&handle(json!({"adminApiEndpoint": "http://g:3903"}))),
            Some("GC-C24"),
        ),
        (
            "bad endpoint",
            create(&handle(
                json!({"adminApiEndpoint": "garage:3903", "adminTokenSecretRef": token}),
            )),
            Some("GC-C24"),
        ),
        (
            "empty connectTo",
            create(&handle(json!({}))),
            Some("GC-C24"),
        ),
        (
            "cross-namespace clusterRef",
            create(&handle(
                json!({"clusterRef": {"name": "s", "namespace": "other"}}),
            )),
            Some("GC-C24"),
        ),
        (
            "kubeconfig ref",
            create(&handle(
                json!({"clusterRef": {"name": "s", "kubeConfigSecretRef": {"name": "k", "key": "k"}}}),
            )),
            Some("GC-C24"),
        ),
        (
            "edge with peers only",
            create(&edge(json!({"bootstrapPeers": ["a@b:3901"]}))),
            Some("GC-C24"),
        ),
        (
            "edge with rpc secret",
            create(&edge(json!({"rpcSecretRef": {"name": "s", "key": "k"}}))),
            None,
        ),
    ]);
}

#[test]
fn warnings_do_not_deny_and_are_emitted() {
    // (case, object, a fragment of the warning, the rule ID it must end with)
    let cases: Vec<(&str, Value, &str, &str)> = vec![
        (
            "EmptyDir metadata",
            set(base(), "/spec/storage/metadata/type", json!("EmptyDir")),
            "Node identity will be lost",
            "GC-W8",
        ),
        (
            "dangerous mode",
            set(
                base(),
                "/spec/replication/consistencyMode",
                json!("dangerous"),
            ),
            "may lead to data loss",
            "GC-W9",
        ),
        (
            "federated without policy",
            set(
                base(),
                "/spec/remoteClusters",
                json!([{"name": "a", "zone": "a", "connection": {"adminApiEndpoint": "http://a:3903"}}]),
            ),
            "deletion is refused",
            "GC-W1",
        ),
        (
            "shared storage rpc address",
            set(
                base(),
                "/spec/storage/rpcPublicAddr",
                json!("storage.example.ts.net:3901"),
            ),
            "single address shared by all storage pods",
            "GC-W14",
        ),
        (
            "VAC with selector",
            set(
                set(
                    base(),
                    "/spec/storage/data/volumeAttributesClassName",
                    json!("fast"),
                ),
                "/spec/storage/data/selector",
                json!({"matchLabels": {"a": "b"}}),
            ),
            "statically provisioned",
            "GC-W32",
        ),
        (
            "top-level data class beside paths",
            set(
                base(),
                "/spec/storage/data",
                json!({"volumeAttributesClassName": "fast", "paths": [{"path": "/data/a", "capacity": "1Gi", "volume": {"size": "1Gi"}}]}),
            ),
            "not inherited",
            "GC-W33",
        ),
        (
            "zoneFrom without storage",
            json!({"metadata": {"name": "e", "namespace": "n"}, "spec": {"gateway": {"replicas": 1}, "connectTo": {"clusterRef": {"name": "s"}}, "zoneFrom": {"nodeLabel": "zone"}}}),
            "no effect without a storage tier",
            "GC-W6",
        ),
    ];
    for (name, v, fragment, id) in cases {
        let verdict = create(&v);
        assert!(verdict.allowed(), "{name}: {}", verdict.message());
        let tag = format!("[{id}]");
        assert!(
            verdict
                .warnings()
                .iter()
                .any(|w| w.contains(fragment) && w.ends_with(&tag)),
            "{name}: {:?}",
            verdict.warnings()
        );
    }
    let plain = create(&base());
    assert!(
        plain
            .warnings()
            .iter()
            .all(|w| !w.contains("statically provisioned"))
    );
}
