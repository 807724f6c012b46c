//! Table tests of released values on UPDATE (SH-12 environment, G1-U1
//! names; GC-U5 volume fields are in `tests_legacy_volumes`, the gateway
//! tier's environment in `tests_payload_env`) through both
//! validators: the hub, and the v1beta1 validator on the projection of the
//! same write, as matchPolicy Equivalent runs them. A case holds only when both give the verdict the
//! hub rules call for.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::tests::{base, del, gc, judge, name, set};
use super::tests_legacy_volumes::empty_dir_with_fields;
use super::{validate_cluster, validate_cluster_v1beta1};
use crate::admission::testing::warned;
use crate::admission::{Context, Review, Verdict};
use crate::convert::to_v1beta1;

const FINALIZER: &str = "garage.rajsingh.info/finalizer";

/// The verdicts of the hub validator and of the v1beta1 validator on the
/// projection of the same UPDATE.
pub(super) fn equivalent(old: &Value, new: &Value) -> [Verdict; 2] {
    let (o, n) = (gc(old), gc(new));
    let hub = validate_cluster(Review::update(&o, &n), &Context::default());
    let ctx = Context {
        requested_version: Some("v1beta2".into()),
        ..Default::default()
    };
    let (so, sn) = (to_v1beta1(o).unwrap(), to_v1beta1(n).unwrap());
    let spoke = validate_cluster_v1beta1(Review::update(&so, &sn), &ctx);
    [hub, spoke]
}

/// One case: name, old, new, and the rule expected to fire (None: allowed)
/// on both validators.
pub(super) type Case<'a> = (&'a str, Value, Value, Option<&'a str>, Option<&'a str>);

/// Runs every case through both validators and reports every mismatch.
pub(super) fn run_both(cases: Vec<Case<'_>>) {
    let mut failures = Vec::new();
    for (name, old, new, hub_rule, spoke_rule) in cases {
        let [hub, spoke] = equivalent(&old, &new);
        for (side, verdict, want) in [("v1beta2", hub, hub_rule), ("v1beta1", spoke, spoke_rule)] {
            failures.extend(judge(&format!("{name} [{side}]"), &verdict, want));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The object with a finalizer set and another metadata edit.
pub(super) fn finalizer_update(v: &Value) -> Value {
    set(v.clone(), "/metadata/labels", json!({"team": "storage"}))
}

/// The object being deleted with the operator's finalizer still on it,
/// and the same object once the finalizer is removed.
pub(super) fn deleting(v: &Value) -> (Value, Value) {
    let mut old = set(v.clone(), "/metadata/finalizers", json!([FINALIZER]));
    old["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    let new = set(old.clone(), "/metadata/finalizers", json!([]));
    (old, new)
}

pub(super) fn with(v: &Value, path: &str, value: Value) -> Value {
    set(v.clone(), path, value)
}

fn env(n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"name": format!("V{i}"), "value": "x"}))
            .collect(),
    )
}

#[test]
fn sh_12_legacy_environment_on_both_versions() {
    let reserved = with(
        &base(),
        "/spec/storage/env",
        json!([{"name": "GARAGE_CONFIG_FILE", "value": "/etc/garage.toml"}]),
    );
    let from = |prefix: Option<&str>| {
        let mut source = json!({"configMapRef": {"name": "legacy"}});
        if let Some(p) = prefix {
            source["prefix"] = json!(p);
        }
        json!([source])
    };
    let no_prefix = with(&base(), "/spec/storage/envFrom", from(None));
    let unsafe_prefix = with(&base(), "/spec/storage/envFrom", from(Some("GARAGE_")));
    let long = with(&base(), "/spec/storage/env", env(258));
    let mut mutated = long.clone();
    mutated["spec"]["storage"]["env"][3]["value"] = json!("y");
    let shrunk = with(&base(), "/spec/storage/env", env(257));
    let image = |v: &Value| with(v, "/spec/image", json!("dxflrs/garage:v2.1.0"));
    let mut cases: Vec<Case<'_>> = vec![
        (
            "SH-12 GC-C8 unchanged reserved env, metadata update",
            reserved.clone(),
            finalizer_update(&reserved),
            None,
            None,
        ),
        (
            "SH-12 GC-C8 reserved env value changed",
            reserved.clone(),
            with(&reserved, "/spec/storage/env/0/value", json!("/other")),
            Some("GC-C8"),
            Some("G1-C7"),
        ),
        (
            "SH-12 GC-C8 reserved env removed",
            reserved.clone(),
            del(reserved.clone(), "/spec/storage/env"),
            None,
            None,
        ),
        (
            "SH-12 GC-C8 unchanged envFrom without prefix, metadata update",
            no_prefix.clone(),
            finalizer_update(&no_prefix),
            None,
            None,
        ),
        (
            "SH-12 GC-C8 unchanged envFrom with unsafe prefix, image change",
            unsafe_prefix.clone(),
            image(&unsafe_prefix),
            None,
            None,
        ),
        (
            "SH-12 GC-C8 envFrom prefix changed to another unsafe one",
            unsafe_prefix.clone(),
            with(&unsafe_prefix, "/spec/storage/envFrom/0/prefix", json!("G")),
            Some("GC-C8"),
            Some("G1-C7"),
        ),
        (
            "SH-12 GC-C8 unsafe envFrom introduced",
            base(),
            no_prefix.clone(),
            Some("GC-C8"),
            Some("G1-C7"),
        ),
        (
            "SH-12 GC-C8 258-entry env, metadata update",
            long.clone(),
            finalizer_update(&long),
            None,
            None,
        ),
        (
            "SH-12 GC-C8 258-entry env shrinks by one",
            long.clone(),
            shrunk,
            None,
            None,
        ),
        (
            "SH-12 GC-C8 258-entry env with one entry changed",
            long.clone(),
            mutated,
            Some("GC-C8"),
            Some("G1-C7"),
        ),
        (
            "SH-11 GC-C8 env grows past 256",
            base(),
            with(&base(), "/spec/storage/env", env(257)),
            Some("GC-C8"),
            Some("G1-C7"),
        ),
    ];
    for legacy in [&reserved, &no_prefix, &unsafe_prefix, &long] {
        let (old, new) = deleting(legacy);
        cases.push((
            "SH-12 deleting cluster's finalizer removal",
            old,
            new,
            None,
            None,
        ));
    }
    run_both(cases);
}

/// GC-W29 from both validators: a kept released entry, and an over-long env
/// that does not grow.
#[test]
fn sh_12_warnings_on_both_versions() {
    let no_prefix = with(
        &base(),
        "/spec/storage/envFrom",
        json!([{"configMapRef": {"name": "legacy"}}]),
    );
    let long = with(&base(), "/spec/storage/env", env(258));
    for (legacy, fragment) in [
        (&no_prefix, "operator ignores them"),
        (&long, "non-expanding"),
    ] {
        for verdict in equivalent(legacy, &finalizer_update(legacy)) {
            let warns = warned(&verdict, fragment, "GC-W29");
            assert!(warns, "{fragment}: {:?}", verdict.warnings());
        }
    }
}

#[test]
fn sh_12_legacy_rpc_secret_migration_passes_both_validators() {
    let legacy = with(
        &base(),
        "/spec/storage/env",
        json!([{"name": "GARAGE_RPC_SECRET", "value": "abc"}]),
    );
    let staged = with(
        &with(
            &legacy,
            "/metadata/annotations",
            json!({"garage.rajsingh.info/migrate-legacy-rpc-secret": "true"}),
        ),
        "/spec/network/rpcSecretRef",
        json!({"name": "imported", "key": "rpc-secret"}),
    );
    run_both(vec![
        (
            "SH-12 GC-U11 legacy RPC-secret migration staging",
            legacy.clone(),
            staged.clone(),
            None,
            None,
        ),
        (
            "SH-12 GC-U11 migration changing the legacy value",
            legacy.clone(),
            with(&staged, "/spec/storage/env/0/value", json!("def")),
            Some("GC-C8"),
            Some("G1-C7"),
        ),
        (
            "SH-12 GC-U11 migration without the annotation",
            legacy,
            del(staged, "/metadata/annotations"),
            Some("GC-U11"),
            Some("GC-U11"),
        ),
    ]);
}

#[test]
fn g1_u1_grandfathered_names_on_both_versions() {
    let long = with(
        &with(
            &del(base(), "/spec/gateway"),
            "/metadata/name",
            json!(name(51)),
        ),
        "/spec/storage/replicas",
        json!(11),
    );
    let unified = with(
        &with(&long, "/spec/gateway", json!({"replicas": 3})),
        "/spec/storage/replicas",
        json!(11),
    );
    let (old, new) = deleting(&long);
    run_both(vec![
        (
            "G1-U1 GC-U1 invalid name, metadata update",
            long.clone(),
            finalizer_update(&long),
            None,
            None,
        ),
        (
            "G1-U1 GC-U1 invalid name, deleting cluster's finalizer removal",
            old,
            new,
            None,
            None,
        ),
        (
            "G1-U1 GC-U1 invalid name, image change",
            long.clone(),
            with(&long, "/spec/image", json!("dxflrs/garage:v2.1.0")),
            Some("GC-U1"),
            Some("G1-U1"),
        ),
        (
            "G1-U1 GC-U1 invalid name, scale 11 -> 12",
            long.clone(),
            with(&long, "/spec/storage/replicas", json!(12)),
            Some("GC-U1"),
            Some("G1-U1"),
        ),
        (
            "G1-U1 GC-U1 name valid at 10, invalid at 11",
            with(&long, "/spec/storage/replicas", json!(10)),
            long.clone(),
            Some("GC-U1"),
            Some("G1-U1"),
        ),
        (
            "G1-U1 GC-U1 hidden gateway scaled down under a grandfathered name",
            unified.clone(),
            with(&unified, "/spec/gateway/replicas", json!(2)),
            None,
            None,
        ),
        (
            "G1-U1 GC-U1 hidden gateway scaled up under a grandfathered name",
            unified.clone(),
            with(&unified, "/spec/gateway/replicas", json!(4)),
            Some("GC-U1"),
            Some("G1-U1"),
        ),
    ]);
}

#[test]
fn released_values_on_genuine_v1beta1_writes() {
    let spoke = |v: Value| {
        let mut v = v;
        v["apiVersion"] = json!("garage.rajsingh.info/v1beta1");
        v["kind"] = json!("GarageCluster");
        serde_json::from_value::<shared_types::garage_cluster::v1beta1::GarageCluster>(v).unwrap()
    };
    let review = |old: &Value, new: &Value| {
        validate_cluster_v1beta1(
            Review::update(&spoke(old.clone()), &spoke(new.clone())),
            &Context::default(),
        )
    };
    let legacy = json!({
        "metadata": {"name": name(51), "namespace": "garage"},
        "spec": {"replicas": 11, "storage": {
            "metadata": empty_dir_with_fields(),
            "data": {"size": "10Gi"},
            "env": [{"name": "GARAGE_RPC_SECRET", "value": "abc"}],
            "envFrom": [{"configMapRef": {"name": "legacy"}}]
        }}
    });
    let (old, new) = deleting(&legacy);
    let cases = [
        (
            "G1-C7 G1-U1 GC-U5 released values, metadata update",
            review(&legacy, &finalizer_update(&legacy)),
            None,
        ),
        (
            "G1-C7 G1-U1 GC-U5 released values, deleting cluster's finalizer removal",
            review(&old, &new),
            None,
        ),
        (
            "G1-C7 SH-12 released env value changed",
            review(
                &legacy,
                &with(&legacy, "/spec/storage/env/0/value", json!("def")),
            ),
            Some("G1-C7"),
        ),
        (
            "GC-U5 released EmptyDir label changed",
            review(
                &legacy,
                &with(&legacy, "/spec/storage/metadata/labels/a", json!("9")),
            ),
            Some("GC-U5"),
        ),
        (
            "G1-U1 image change under an invalid name",
            review(&legacy, &with(&legacy, "/spec/image", json!("g:2"))),
            Some("G1-U1"),
        ),
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(n, v, w)| judge(n, v, *w))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
