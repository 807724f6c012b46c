//! Table tests of GarageCluster DELETE: the deletion and drain rules (GC-D*).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::tests::{base, del, gc, judge, run, set};
use super::{validate_cluster, validate_cluster_v1beta1};
use crate::admission::{Context, Review, Verdict};
use crate::convert::to_v1beta1;

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

/// SH-20 digests of fixed node sets, computed outside this crate (Python `hashlib.sha256`)
/// from the definition: `roles` NUL ids NUL `storage` NUL ids, and `unavailable` NUL ids only
/// when that set is non-empty. Literals, so a change of order or encoding in the code under
/// test cannot move the expectation with it.
const HASH_A: &str = "sha256:557da8946bf94cc288b028c3067853b711e0f918f0b26c8d0368ea1157f4c6bd";
/// Roles {a, b}, storage {a, b}, unavailable {b}.
const HASH_AB_LOST_B: &str =
    "sha256:1ace42f8dd1bbad8ec01ff9065333509ee022d0e42a86242edad70f03deb4f59";
/// Roles {a, b}, storage {a, b}, no unavailable section: the same sets with the lost source
/// left out of the hash.
const HASH_AB_WITHOUT_LOST: &str =
    "sha256:0e20f82b319c1ca4b15f2090589d53f7c2235a3555797a313606624db60459ec";
/// All three sets empty: the bare headers.
const HASH_EMPTY: &str = "sha256:caef2d293bbac3d3d33711edf643e687c1f52cad4c7bb1d8361cc6d16a2bd006";

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
        "roleRemovalNodeIds": [hex('a')], "removedStorageNodeIds": [hex('a')], "targetHash": HASH_A});
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

/// The federated Drain site of `deletion_gc_d1_to_d10`, annotated, drain-ready, with `token`
/// as its drain record.
fn prepared_site(token: Value) -> Value {
    let site = json!({
        "metadata": {"annotations": {"garage.rajsingh.info/drain": "true"}},
        "spec": {
            "deletionPolicy": "Drain",
            "remoteClusters": [{"name": "b", "zone": "b", "connection": {"adminApiEndpoint": "http://b:3903"}}],
            "layoutManagement": {"drain": {"unverifiedPeersPolicy": "AssumeConsistent"}}
        }
    });
    let mut v = ready(base());
    json_patch::merge(&mut v, &site);
    set(v, "/status/storageDrain", token)
}

/// A completed drain of the cluster itself (actor: this GarageCluster) over the given node
/// sets, recording `hash`.
fn site_token(roles: &[&str], removed: &[&str], unavailable: &[&str], hash: &str) -> Value {
    json!({"actor": {"apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster", "namespace": "garage", "name": "garage", "uid": "uid-1"},
        "transactionId": "t1", "startedAt": "2026-01-01T00:00:00Z", "completedAt": "2026-01-01T01:00:00Z",
        "roleRemovalNodeIds": roles, "removedStorageNodeIds": removed,
        "unavailableSourceNodeIds": unavailable, "targetHash": hash})
}

/// The hub verdict on a DELETE of `v`, and the v1beta1 verdict on its projection: both run
/// GC-D6 (the v1beta1 validator on the hub conversion), so both must judge the hash alike.
fn delete_both(v: &Value) -> [Verdict; 2] {
    let hub = gc(v);
    let spoke = to_v1beta1(hub.clone()).unwrap();
    [
        validate_cluster(Review::delete(&hub), &Context::default()),
        validate_cluster_v1beta1(Review::delete(&spoke), &Context::default()),
    ]
}

#[test]
fn gc_d6_recomputes_the_target_hash() {
    let (a, b) = (hex('a'), hex('b'));
    let (a, b) = (a.as_str(), b.as_str());
    let owned = |ids: &[&str]| ids.iter().map(|i| (*i).to_owned()).collect::<Vec<_>>();
    // What this repository's reconciler records: it hashes with the shared-types function.
    let reconciler_hash =
        shared_types::drain::target_hash(&owned(&[a, b]), &owned(&[a]), &owned(&[]));
    let zero = format!("sha256:{}", hex('0'));
    let upper = format!("sha256:{}", HASH_A["sha256:".len()..].to_uppercase());
    let node_actor = json!({"apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageNode", "namespace": "garage", "name": "garage-storage-0", "uid": "node-uid"});
    let cases: Vec<(&str, Value, Option<&str>)> = vec![
        (
            "Go record, one removed node",
            site_token(&[a], &[a], &[], HASH_A),
            None,
        ),
        (
            "Go record with a lost source",
            site_token(&[a, b], &[a, b], &[b], HASH_AB_LOST_B),
            None,
        ),
        (
            "Go record of an empty site",
            site_token(&[], &[], &[], HASH_EMPTY),
            None,
        ),
        (
            "record hashed as this repository's reconciler hashes",
            site_token(&[a, b], &[a], &[], &reconciler_hash),
            None,
        ),
        (
            "well-formed digest of other node sets",
            site_token(&[a], &[a], &[], HASH_EMPTY),
            Some("GC-D6"),
        ),
        (
            "all-zero digest",
            site_token(&[a], &[a], &[], &zero),
            Some("GC-D6"),
        ),
        (
            "lost source left out of the hash",
            site_token(&[a, b], &[a, b], &[b], HASH_AB_WITHOUT_LOST),
            Some("GC-D6"),
        ),
        (
            "digest in upper-case hex",
            site_token(&[a], &[a], &[], &upper),
            Some("GC-D6"),
        ),
        (
            "digest without the sha256: prefix",
            site_token(&[a], &[a], &[], &HASH_A["sha256:".len()..]),
            Some("GC-D6"),
        ),
        (
            "no targetHash",
            del(site_token(&[a], &[a], &[], HASH_A), "/targetHash"),
            Some("GC-D6"),
        ),
        (
            "Go zero startedAt",
            set(
                site_token(&[a], &[a], &[], HASH_A),
                "/startedAt",
                json!("0001-01-01T00:00:00Z"),
            ),
            Some("GC-D6"),
        ),
        (
            "a node drain as this repository's reconciler records it",
            set(site_token(&[a], &[a], &[], HASH_A), "/actor", node_actor),
            Some("GC-D4"),
        ),
    ];
    let mut failures = Vec::new();
    for (name, token, want) in cases {
        let [hub, spoke] = delete_both(&prepared_site(token));
        for (side, verdict) in [("v1beta2", hub), ("v1beta1", spoke)] {
            failures.extend(judge(&format!("{name} [{side}]"), &verdict, want));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gc_d6_says_what_is_wrong_without_echoing_the_record() {
    let forged = format!("sha256:{}", hex('0'));
    let [hub, _] = delete_both(&prepared_site(site_token(
        &[&hex('a')],
        &[&hex('a')],
        &[],
        &forged,
    )));
    let message = hub.message();
    assert!(message.contains("targetHash"), "{message}");
    assert!(message.contains("status.storageDrain"), "{message}");
    assert!(!message.contains(&forged), "{message}");
}
