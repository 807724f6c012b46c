//! Table tests of the v1beta1 (spoke) GarageCluster rules and the /scale subresource.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use shared_types::garage_cluster::v1beta1;

use super::scale::{ScaleRequest, validate_scale};
use super::tests::{base, del, gc, run, set};
use super::validate_cluster_v1beta1;
use crate::admission::{Context, Operation, Review, Verdict};

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

fn v1(v: Value) -> v1beta1::GarageCluster {
    let mut v = v;
    v["apiVersion"] = json!("garage.rajsingh.info/v1beta1");
    v["kind"] = json!("GarageCluster");
    serde_json::from_value(v).unwrap()
}

fn spoke_base() -> Value {
    json!({"metadata": {"name": "garage", "namespace": "garage", "generation": 1},
        "spec": {"replicas": 3, "storage": {"metadata": {"size": "1Gi"}, "data": {"size": "10Gi"}}}})
}

fn spoke_edge(r: i64, m: Value) -> Value {
    json!({"metadata": {"name": "e", "namespace": "garage"},
        "spec": {"gateway": true, "replicas": r, "connectTo": {"clusterRef": {"name": "s"}}, "storage": {"metadata": m}}})
}

fn s_create(v: Value) -> Verdict {
    validate_cluster_v1beta1(Review::create(&v1(v)), &Context::default())
}

fn s_update(o: Value, n: Value) -> Verdict {
    validate_cluster_v1beta1(Review::update(&v1(o), &v1(n)), &Context::default())
}

#[test]
fn spoke_validator_g1() {
    let payload = |v: Value| {
        set(
            v,
            "/metadata/annotations",
            json!({"garage.rajsingh.info/v1beta2-node-local-pools": "[]", "garage.rajsingh.info/v1beta2-only": "node-local-pools-present"}),
        )
    };
    let equivalent = Context {
        requested_version: Some("v1beta2".into()),
        ..Default::default()
    };
    run(vec![
        ("spoke base", s_create(spoke_base()), None),
        (
            "spoke replicas 51",
            s_create(set(spoke_base(), "/spec/replicas", json!(51))),
            Some("G1-C3"),
        ),
        (
            "gateway without connectTo",
            s_create(del(
                spoke_edge(1, json!({"size": "1Gi"})),
                "/spec/connectTo",
            )),
            Some("G1-C14"),
        ),
        (
            "storage + connectTo",
            s_create(set(
                spoke_base(),
                "/spec/connectTo",
                json!({"clusterRef": {"name": "s"}}),
            )),
            Some("G1-C14"),
        ),
        (
            "gateway + data",
            s_create(set(
                spoke_edge(1, json!({"size": "1Gi"})),
                "/spec/storage/data",
                json!({"size": "1Gi"}),
            )),
            Some("G1-C5"),
        ),
        (
            "gateway + capacityReservePercent",
            s_create(set(
                spoke_edge(1, json!({"size": "1Gi"})),
                "/spec/capacityReservePercent",
                json!(10),
            )),
            Some("G1-C5"),
        ),
        (
            "gateway with peers only",
            s_create(set(
                spoke_edge(1, json!({"size": "1Gi"})),
                "/spec/connectTo",
                json!({"bootstrapPeers": ["a@b:3901"]}),
            )),
            Some("G1-C14"),
        ),
        (
            "gateway with network secret + peers",
            s_create(set(
                set(
                    spoke_edge(1, json!({"size": "1Gi"})),
                    "/spec/connectTo",
                    json!({"bootstrapPeers": ["a@b:3901"]}),
                ),
                "/spec/network/rpcSecretRef",
                json!({"name": "s", "key": "k"}),
            )),
            None,
        ),
        (
            "gateway metadata EmptyDir + VAC",
            s_create(spoke_edge(
                1,
                json!({"type": "EmptyDir", "volumeAttributesClassName": "x"}),
            )),
            Some("G1-C14"),
        ),
        (
            "data {}",
            s_create(set(spoke_base(), "/spec/storage/data", json!({}))),
            Some("G1-C15"),
        ),
        (
            "no data",
            s_create(del(spoke_base(), "/spec/storage/data")),
            Some("G1-C15"),
        ),
        (
            "metadata paths",
            s_create(set(
                spoke_base(),
                "/spec/storage/metadata/paths",
                json!([{"path": "/a"}]),
            )),
            Some("G1-C15"),
        ),
        (
            "L-4 fixed: replicas 0 without data",
            s_create(set(
                set(spoke_base(), "/spec/replicas", json!(0)),
                "/spec/storage",
                json!({}),
            )),
            None,
        ),
        (
            "minNodesHealthy 4/3",
            s_create(set(
                spoke_base(),
                "/spec/layoutManagement/minNodesHealthy",
                json!(4),
            )),
            Some("G1-C17"),
        ),
        (
            "minNodesHealthy 3/3",
            s_create(set(
                spoke_base(),
                "/spec/layoutManagement/minNodesHealthy",
                json!(3),
            )),
            None,
        ),
        (
            "reserved pod label",
            s_create(set(
                spoke_base(),
                "/spec/podLabels",
                json!({"garage.rajsingh.info/tier": "x"}),
            )),
            Some("G1-C6"),
        ),
        (
            "reserved env",
            s_create(set(
                spoke_base(),
                "/spec/storage/env",
                json!([{"name": "GARAGE_CONFIG_FILE", "value": "x"}]),
            )),
            Some("G1-C7"),
        ),
        (
            "claim template",
            s_create(set(
                spoke_base(),
                "/spec/storage/data/volumeClaimTemplateSpec",
                json!({}),
            )),
            Some("G1-C10"),
        ),
        (
            "forged payload on v1beta1 create",
            s_create(payload(spoke_base())),
            Some("G1-T1"),
        ),
        (
            "payload under Equivalent dispatch",
            validate_cluster_v1beta1(Review::create(&v1(payload(spoke_base()))), &equivalent),
            None,
        ),
        (
            "payload deleted on update",
            s_update(payload(spoke_base()), spoke_base()),
            Some("G1-T2"),
        ),
        (
            "payload added on update",
            s_update(spoke_base(), payload(spoke_base())),
            Some("G1-T2"),
        ),
        (
            "gateway data unchanged",
            s_update(
                set(
                    spoke_edge(1, json!({"size": "1Gi"})),
                    "/spec/storage/data",
                    json!({"size": "1Gi"}),
                ),
                set(
                    set(
                        spoke_edge(1, json!({"size": "1Gi"})),
                        "/spec/storage/data",
                        json!({"size": "1Gi"}),
                    ),
                    "/spec/image",
                    json!("g:2"),
                ),
            ),
            None,
        ),
        (
            "gateway data mutated",
            s_update(
                set(
                    spoke_edge(1, json!({"size": "1Gi"})),
                    "/spec/storage/data",
                    json!({"size": "1Gi"}),
                ),
                set(
                    spoke_edge(1, json!({"size": "1Gi"})),
                    "/spec/storage/data",
                    json!({"size": "2Gi"}),
                ),
            ),
            Some("G1-U3"),
        ),
        (
            "edge metadata growth live",
            s_update(
                spoke_edge(1, json!({"size": "1Gi"})),
                spoke_edge(1, json!({"size": "2Gi"})),
            ),
            Some("G1-S1"),
        ),
        (
            "edge metadata 0 -> 0",
            s_update(
                spoke_edge(0, json!({"size": "1Gi"})),
                spoke_edge(0, json!({"size": "2Gi"})),
            ),
            None,
        ),
        (
            "edge class change live",
            s_update(
                spoke_edge(1, json!({"size": "1Gi", "volumeAttributesClassName": "a"})),
                spoke_edge(1, json!({"size": "1Gi", "volumeAttributesClassName": "b"})),
            ),
            None,
        ),
        (
            "edge class unset live",
            s_update(
                spoke_edge(1, json!({"size": "1Gi", "volumeAttributesClassName": "a"})),
                spoke_edge(1, json!({"size": "1Gi"})),
            ),
            Some("GC-VAC-1"),
        ),
        (
            "storage live selector change",
            s_update(
                spoke_base(),
                set(
                    spoke_base(),
                    "/spec/storage/data/selector",
                    json!({"matchLabels": {"a": "b"}}),
                ),
            ),
            Some("GC-S5"),
        ),
        (
            "Auto N -> 0 + fsync",
            s_update(
                spoke_base(),
                set(
                    set(spoke_base(), "/spec/replicas", json!(0)),
                    "/spec/storage/metadataFsync",
                    json!(true),
                ),
            ),
            Some("GC-S10"),
        ),
        (
            "Manual -> Auto",
            s_update(
                set(spoke_base(), "/spec/layoutPolicy", json!("Manual")),
                set(spoke_base(), "/spec/layoutPolicy", json!("Auto")),
            ),
            Some("GC-U13"),
        ),
        (
            "spoke replicas 51 -> 52",
            s_update(
                set(spoke_base(), "/spec/replicas", json!(51)),
                set(spoke_base(), "/spec/replicas", json!(52)),
            ),
            Some("G1-U5"),
        ),
    ]);
}

fn req<'a>(version: &'a str, replicas: i32, rv: &'a str) -> ScaleRequest<'a> {
    ScaleRequest {
        operation: Operation::Update,
        sub_resource: Some("scale"),
        version,
        replicas,
        resource_version: Some(rv),
    }
}

#[test]
fn scale_subresource_sc() {
    let ctx = Context::default();
    let live = gc(&ready(set(base(), "/spec/storage/replicas", json!(2))));
    let edge = gc(
        &json!({"metadata": {"name": "e", "namespace": "garage", "resourceVersion": "7"}, "spec": {"gateway": {"replicas": 2}, "connectTo": {"clusterRef": {"name": "s"}}}}),
    );
    let manual = gc(&set(base(), "/spec/storage/layoutPolicy", json!("Manual")));
    let draining = gc(&set(
        base(),
        "/status/storageDrain",
        json!({"transactionId": "d"}),
    ));
    let degraded = gc(&ready(set(
        set(base(), "/spec/storage/replicas", json!(2)),
        "/spec/replication/consistencyMode",
        json!("degraded"),
    )));
    let create_op = ScaleRequest {
        operation: Operation::Create,
        ..req("v1beta2", 3, "7")
    };
    run(vec![
        (
            "healthy scale up",
            validate_scale(&live, &req("v1beta2", 3, "7"), &ctx),
            None,
        ),
        (
            "stale resourceVersion",
            validate_scale(&live, &req("v1beta2", 3, "6"), &ctx),
            Some("SC-5"),
        ),
        (
            "not an UPDATE",
            validate_scale(&live, &create_op, &ctx),
            Some("SC-1"),
        ),
        (
            "v1beta2 edge",
            validate_scale(&edge, &req("v1beta2", 3, "7"), &ctx),
            Some("SC-6"),
        ),
        (
            "v1beta2 Manual",
            validate_scale(&manual, &req("v1beta2", 3, "7"), &ctx),
            Some("SC-6"),
        ),
        (
            "unknown version",
            validate_scale(&live, &req("v1", 3, "7"), &ctx),
            Some("SC-6"),
        ),
        (
            "v1beta1 edge 2 -> 5",
            validate_scale(&edge, &req("v1beta1", 5, "7"), &ctx),
            None,
        ),
        (
            "scale during drain",
            validate_scale(&draining, &req("v1beta2", 4, "7"), &ctx),
            Some("GC-S1"),
        ),
        (
            "scale down with degraded consistency",
            validate_scale(&degraded, &req("v1beta2", 1, "7"), &ctx),
            Some("GC-S10"),
        ),
    ]);
    let unified = super::scale::project(&gc(&base()), &req("v1beta1", 4, "7")).unwrap();
    assert_eq!(
        unified.spec.storage.as_ref().and_then(|s| s.replicas),
        Some(4)
    );
    assert_eq!(
        unified.spec.gateway.as_ref().and_then(|g| g.replicas),
        Some(2)
    );
    assert!(
        validate_scale(&draining, &req("v1beta2", 4, "7"), &ctx)
            .message()
            .contains("status.storageDrain")
    );
}
