//! Table tests of G1-C8: the environment of the v1beta2 tiers that a v1beta1 object carries
//! only in its conversion payloads (node-local pools, a gateway tier). Each case runs the hub
//! validator on a v1beta2 write and the v1beta1 validator on the projection of the same write,
//! as matchPolicy Equivalent runs them, and holds only when each gives the verdict expected of
//! it: the hub's GC-C8/GC-C9 and the v1beta1 side's G1-C8 must agree.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::tests::{base, gc, judge, pool_base, set};
use super::tests_legacy::{Case, deleting, finalizer_update, run_both, with};
use super::{validate_cluster, validate_cluster_v1beta1};
use crate::admission::testing::warned;
use crate::admission::{Context, Review, Verdict};
use crate::convert::annotations::ANNOTATION_V1BETA2_NODE_LOCAL_POOLS;
use crate::convert::to_v1beta1;

/// The validators' context for the v1beta1 side of a v1beta2 write.
fn equivalent_dispatch() -> Context {
    Context {
        requested_version: Some("v1beta2".into()),
        ..Default::default()
    }
}

/// The verdicts of the hub validator and of the v1beta1 validator on the projection of the
/// same CREATE.
fn create_both(v: &Value) -> [Verdict; 2] {
    let hub = gc(v);
    let spoke = to_v1beta1(hub.clone()).unwrap();
    [
        validate_cluster(Review::create(&hub), &Context::default()),
        validate_cluster_v1beta1(Review::create(&spoke), &equivalent_dispatch()),
    ]
}

/// An edge gateway (no storage tier): its whole tier travels in the gateway payload once its
/// environment is set.
fn edge() -> Value {
    json!({"metadata": {"name": "e", "namespace": "garage", "generation": 1, "uid": "uid-e"},
        "spec": {"gateway": {"replicas": 2}, "connectTo": {"clusterRef": {"name": "s"}}}})
}

fn env(name: &str) -> Value {
    json!([{"name": name, "value": "/run/x"}])
}

fn env_from(prefix: Option<&str>) -> Value {
    let mut source = json!({"configMapRef": {"name": "extra"}});
    if let Some(p) = prefix {
        source["prefix"] = json!(p);
    }
    json!([source])
}

const POOL_TEMPLATE: &str = "/spec/storage/nodeLocalPools/0/podTemplate";

#[test]
fn g1_c8_create_judges_the_preserved_environments() {
    let long: Vec<Value> = (0..257)
        .map(|i| json!({"name": format!("V{i}"), "value": "x"}))
        .collect();
    let pool =
        |field: &str, value: Value| set(pool_base(), &format!("{POOL_TEMPLATE}/{field}"), value);
    let cases: Vec<(&str, Value, Option<&str>, Option<&str>)> = vec![
        (
            "pool env GARAGE_RPC_SECRET_FILE",
            pool("env", env("GARAGE_RPC_SECRET_FILE")),
            Some("GC-C8"),
            Some("G1-C8"),
        ),
        (
            "pool envFrom prefix GARAGE_",
            pool("envFrom", env_from(Some("GARAGE_"))),
            Some("GC-C8"),
            Some("G1-C8"),
        ),
        (
            "pool envFrom without prefix",
            pool("envFrom", env_from(None)),
            Some("GC-C8"),
            Some("G1-C8"),
        ),
        (
            "pool env of 257 entries",
            pool("env", Value::Array(long)),
            Some("GC-C8"),
            Some("G1-C8"),
        ),
        (
            "pool env and envFrom prefix CUSTOM_",
            set(
                pool("env", env("CUSTOM_SETTING")),
                &format!("{POOL_TEMPLATE}/envFrom"),
                env_from(Some("CUSTOM_")),
            ),
            None,
            None,
        ),
        (
            "unified gateway envFrom prefix GARAGE_",
            set(base(), "/spec/gateway/envFrom", env_from(Some("GARAGE_"))),
            Some("GC-C9"),
            Some("G1-C8"),
        ),
        (
            "unified gateway env GARAGE_ADMIN_TOKEN",
            set(base(), "/spec/gateway/env", env("GARAGE_ADMIN_TOKEN")),
            Some("GC-C9"),
            Some("G1-C8"),
        ),
        (
            "edge gateway env GARAGE_METRICS_TOKEN_FILE",
            set(
                edge(),
                "/spec/gateway/env",
                env("GARAGE_METRICS_TOKEN_FILE"),
            ),
            Some("GC-C9"),
            Some("G1-C8"),
        ),
        (
            "unified gateway env and envFrom prefix CUSTOM_",
            set(
                set(base(), "/spec/gateway/env", env("CUSTOM_SETTING")),
                "/spec/gateway/envFrom",
                env_from(Some("CUSTOM_")),
            ),
            None,
            None,
        ),
        (
            "edge gateway safe env",
            set(edge(), "/spec/gateway/env", env("CUSTOM_SETTING")),
            None,
            None,
        ),
    ];
    let mut failures = Vec::new();
    for (name, v, hub_rule, spoke_rule) in cases {
        let [hub, spoke] = create_both(&v);
        for (side, verdict, want) in [("v1beta2", hub, hub_rule), ("v1beta1", spoke, spoke_rule)] {
            failures.extend(judge(&format!("{name} [{side}]"), &verdict, want));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn g1_c8_names_the_payload_field_and_the_api_to_use() {
    let v = set(
        pool_base(),
        &format!("{POOL_TEMPLATE}/env"),
        env("GARAGE_RPC_SECRET_FILE"),
    );
    let [_, spoke] = create_both(&v);
    let message = spoke.message();
    for part in [
        ANNOTATION_V1BETA2_NODE_LOCAL_POOLS,
        "\"local-700\"",
        "podTemplate.env[0].name",
        "operator-reserved",
        "v1beta2 API",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
    assert!(!message.contains("/run/x"), "{message}");
}

#[test]
fn g1_c8_refuses_a_payload_that_does_not_decode() {
    let mut spoke = to_v1beta1(gc(&pool_base())).unwrap();
    // A value of the wrong type: the decoder's own error would quote it.
    let forged = r#"[{"name":"local-700","podTemplate":{"env":"s3cr3t-value"}}]"#;
    spoke.metadata.annotations.as_mut().unwrap().insert(
        ANNOTATION_V1BETA2_NODE_LOCAL_POOLS.to_owned(),
        forged.into(),
    );
    let verdict = validate_cluster_v1beta1(Review::create(&spoke), &equivalent_dispatch());
    assert!(verdict.broke("G1-C8"), "{}", verdict.message());
    let message = verdict.message();
    assert!(
        message.contains(ANNOTATION_V1BETA2_NODE_LOCAL_POOLS),
        "{message}"
    );
    assert!(!message.contains("s3cr3t"), "{message}");
    let truncated = r#"[{"name":"local-700""#;
    spoke.metadata.annotations.as_mut().unwrap().insert(
        ANNOTATION_V1BETA2_NODE_LOCAL_POOLS.to_owned(),
        truncated.into(),
    );
    let verdict = validate_cluster_v1beta1(Review::create(&spoke), &equivalent_dispatch());
    assert!(verdict.broke("G1-C8"), "{}", verdict.message());
}

#[test]
fn g1_c8_update_keeps_released_gateway_environment_only() {
    let reserved = with(&base(), "/spec/gateway/env", env("GARAGE_CONFIG_FILE"));
    let unsafe_from = with(&base(), "/spec/gateway/envFrom", env_from(Some("GARAGE_")));
    let no_prefix = with(&base(), "/spec/gateway/envFrom", env_from(None));
    let edge_reserved = with(&edge(), "/spec/gateway/env", env("GARAGE_CONFIG_FILE"));
    let pool_reserved = with(
        &pool_base(),
        &format!("{POOL_TEMPLATE}/env"),
        env("GARAGE_RPC_SECRET"),
    );
    let image = |v: &Value| with(v, "/spec/image", json!("dxflrs/garage:v2.1.0"));
    let mut cases: Vec<Case<'_>> = vec![
        (
            "SH-12 unchanged reserved gateway env, metadata update",
            reserved.clone(),
            finalizer_update(&reserved),
            None,
            None,
        ),
        (
            "SH-12 unchanged reserved edge gateway env, image change",
            edge_reserved.clone(),
            image(&edge_reserved),
            None,
            None,
        ),
        (
            "SH-12 unchanged unsafe gateway envFrom, image change",
            unsafe_from.clone(),
            image(&unsafe_from),
            None,
            None,
        ),
        (
            "SH-12 unchanged gateway envFrom without prefix, image change",
            no_prefix.clone(),
            image(&no_prefix),
            None,
            None,
        ),
        (
            "SH-12 gateway envFrom source changed",
            no_prefix.clone(),
            with(
                &no_prefix,
                "/spec/gateway/envFrom/0/configMapRef/name",
                json!("other"),
            ),
            Some("GC-C9"),
            Some("G1-C8"),
        ),
        (
            "SH-12 reserved gateway env value changed",
            reserved.clone(),
            with(&reserved, "/spec/gateway/env/0/value", json!("/other")),
            Some("GC-C9"),
            Some("G1-C8"),
        ),
        (
            "SH-12 reserved edge gateway env value changed",
            edge_reserved.clone(),
            with(&edge_reserved, "/spec/gateway/env/0/value", json!("/other")),
            Some("GC-C9"),
            Some("G1-C8"),
        ),
        (
            "SH-12 reserved gateway env introduced",
            base(),
            reserved.clone(),
            Some("GC-C9"),
            Some("G1-C8"),
        ),
        (
            "SH-12 reserved gateway env removed",
            reserved.clone(),
            base(),
            None,
            None,
        ),
        (
            "pool templates have no released values",
            pool_reserved.clone(),
            finalizer_update(&pool_reserved),
            Some("GC-C8"),
            Some("G1-C8"),
        ),
    ];
    for legacy in [&reserved, &unsafe_from, &no_prefix, &edge_reserved] {
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
    let [hub, spoke] = super::tests_legacy::equivalent(&reserved, &finalizer_update(&reserved));
    for verdict in [hub, spoke] {
        let kept = warned(&verdict, "operator ignores them", "GC-W29");
        assert!(kept, "{:?}", verdict.warnings());
    }
}
