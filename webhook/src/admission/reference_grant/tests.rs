//! RG-C1, RG-C2, RG-W1, RG-W2 on the grant itself, and RG-CHK, the authorisation the bucket
//! and key rules apply with the grants of the namespace they reference into.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::Namespace;
use serde_json::{Value, json};
use shared_types::garage_reference_grant::{GarageReferenceGrant, GrantFromKind, GrantToKind};

use super::authorise::{Checked, GrantReads, Source, authorise};
use super::validate_reference_grant;
use crate::admission::testing::Want::{self, Allow, DenyWith, Warn};
use crate::admission::testing::{check, grant_in};
use crate::admission::{Context, Review, Verdict};

/// The grant's own namespace (where the referenced objects live).
const TARGET: &str = "storage";
/// The referring namespace.
const SOURCE: &str = "team-b";

fn grant(spec: Value) -> GarageReferenceGrant {
    grant_in(TARGET, spec)
}

fn create(spec: Value) -> Verdict {
    validate_reference_grant(Review::create(&grant(spec)), &Context::default())
}

fn table(cases: Vec<(&str, Value, Want)>) {
    for (name, spec, want) in cases {
        check(name, &create(spec), &want);
    }
}

#[test]
fn rg_c1_from_needs_an_entry() {
    table(vec![
        (
            "empty from",
            json!({"from": []}),
            DenyWith("RG-C1", "at least one entry"),
        ),
        (
            "valid exact grant",
            json!({"from": [{"kind": "GarageBucket", "namespace": SOURCE}], "to": [{"kind": "GarageCluster", "name": "garage"}]}),
            Allow,
        ),
    ]);
}

#[test]
fn rg_c2_exactly_one_source_and_a_valid_selector() {
    table(vec![
        (
            "missing namespace and selector",
            json!({"from": [{"kind": "GarageKey"}]}),
            DenyWith("RG-C2", "exactly one of namespace or namespaceSelector"),
        ),
        (
            "both namespace and selector",
            json!({"from": [{"kind": "GarageKey", "namespace": SOURCE, "namespaceSelector": {"matchLabels": {"team": "b"}}}]}),
            DenyWith("RG-C2", "exactly one of namespace or namespaceSelector"),
        ),
        (
            "invalid entry after a valid one",
            json!({"from": [{"kind": "GarageKey", "namespace": SOURCE}, {"kind": "GarageBucket"}]}),
            DenyWith("RG-C2", "spec.from[1]"),
        ),
        (
            "invalid operator",
            json!({"from": [{"kind": "GarageKey", "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "Near", "values": ["prod"]}]}}]}),
            DenyWith("RG-C2", "namespaceSelector is invalid"),
        ),
        (
            "valid selector",
            json!({"from": [{"kind": "GarageKey", "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dr"]}]}}]}),
            Allow,
        ),
    ]);
}

#[test]
fn rg_w1_same_namespace_entries_warn_once_each() {
    let v = create(json!({"from": [
        {"kind": "GarageKey", "namespace": TARGET},
        {"kind": "GarageBucket", "namespace": TARGET},
    ]}));
    check(
        "same namespace",
        &v,
        &Warn("same-namespace references are always permitted"),
    );
    assert_eq!(v.warnings().len(), 2, "{:?}", v.warnings());
    assert!(v.warnings().iter().all(|w| w.ends_with("[RG-W1]")));
}

#[test]
fn rg_w2_an_empty_selector_warns_once() {
    let v = create(json!({"from": [{"kind": "GarageKey", "namespaceSelector": {}}]}));
    check("empty selector", &v, &Warn("matches every namespace"));
    assert_eq!(v.warnings().len(), 1, "{:?}", v.warnings());
}

#[test]
fn rg_updates_revalidate_the_new_object_and_deletes_pass() {
    let good = grant(json!({"from": [{"kind": "GarageKey", "namespace": SOURCE}]}));
    let bad = grant(json!({"from": []}));
    let ctx = Context::default();
    assert!(validate_reference_grant(Review::update(&good, &bad), &ctx).broke("RG-C1"));
    assert!(validate_reference_grant(Review::update(&bad, &good), &ctx).allowed());
    assert!(validate_reference_grant(Review::delete(&bad), &ctx).allowed());
}

// RG-CHK

fn namespace(name: &str, labels: Value) -> Namespace {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

fn ctx(grants: Vec<GarageReferenceGrant>, namespaces: Vec<Namespace>) -> Context {
    Context {
        reference_grants: grants,
        namespaces,
        ..Context::default()
    }
}

fn source(kind: GrantFromKind) -> Source<'static> {
    Source {
        kind,
        namespace: SOURCE,
        name: "team-b-data",
    }
}

fn target(kind: GrantToKind, namespace: &'static str, name: &'static str) -> Checked<'static> {
    Checked {
        rule: "TEST",
        field: "spec.ref".into(),
        kind,
        namespace,
        name,
    }
}

fn bucket_to_cluster(c: &Context) -> Result<(), String> {
    authorise(
        c,
        &source(GrantFromKind::GarageBucket),
        &target(GrantToKind::GarageCluster, TARGET, "garage"),
    )
}

#[test]
fn rg_chk_same_namespace_needs_no_grant() {
    let same = target(GrantToKind::GarageKey, SOURCE, "k");
    assert!(
        authorise(
            &Context::default(),
            &source(GrantFromKind::GarageBucket),
            &same
        )
        .is_ok()
    );
}

#[test]
fn rg_chk_exact_grants() {
    let from = |kind: &str, ns: &str| json!([{"kind": kind, "namespace": ns}]);
    let key = |name: &'static str| target(GrantToKind::GarageKey, TARGET, name);
    let bucket_source = source(GrantFromKind::GarageBucket);

    let none = bucket_to_cluster(&Context::default()).unwrap_err();
    assert!(none.contains("is not permitted"), "{none}");
    assert!(
        none.contains("create a GarageReferenceGrant in namespace \"storage\""),
        "{none}"
    );

    let matching = ctx(
        vec![grant(json!({"from": from("GarageBucket", SOURCE)}))],
        vec![],
    );
    assert!(bucket_to_cluster(&matching).is_ok());
    // An omitted `to` covers clusters and buckets, never keys.
    let denied = authorise(&matching, &bucket_source, &key("k")).unwrap_err();
    assert!(
        denied.contains("listing GarageKey in its spec.to"),
        "{denied}"
    );
    let to_keys = ctx(
        vec![grant(
            json!({"from": from("GarageBucket", SOURCE), "to": [{"kind": "GarageKey"}]}),
        )],
        vec![],
    );
    assert!(
        authorise(&to_keys, &bucket_source, &key("k")).is_ok(),
        "a `to` without name covers every key"
    );
    let named = ctx(
        vec![grant(
            json!({"from": from("GarageBucket", SOURCE), "to": [{"kind": "GarageKey", "name": "k"}]}),
        )],
        vec![],
    );
    assert!(authorise(&named, &bucket_source, &key("k")).is_ok());
    assert!(
        authorise(&named, &bucket_source, &key("other")).is_err(),
        "wrong to name"
    );

    for (case, g) in [
        (
            "wrong from kind",
            grant(json!({"from": from("GarageKey", SOURCE)})),
        ),
        (
            "wrong from namespace",
            grant(json!({"from": from("GarageBucket", "team-c")})),
        ),
        (
            "grant in another namespace",
            grant_in("elsewhere", json!({"from": from("GarageBucket", SOURCE)})),
        ),
    ] {
        assert!(bucket_to_cluster(&ctx(vec![g], vec![])).is_err(), "{case}");
    }
}

#[test]
fn rg_chk_selector_grants_read_the_source_namespace_labels() {
    let selector =
        |s: Value| grant(json!({"from": [{"kind": "GarageBucket", "namespaceSelector": s}]}));
    let prod = namespace(SOURCE, json!({"env": "prod"}));
    let dev = namespace(SOURCE, json!({"env": "dev"}));
    let by_label = selector(json!({"matchLabels": {"env": "prod"}}));
    assert!(bucket_to_cluster(&ctx(vec![by_label.clone()], vec![prod.clone()])).is_ok());
    assert!(
        bucket_to_cluster(&ctx(vec![by_label.clone()], vec![dev.clone()])).is_err(),
        "labels do not match"
    );
    assert!(
        bucket_to_cluster(&ctx(vec![by_label], vec![])).is_err(),
        "missing Namespace"
    );

    let expression = selector(
        json!({"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "dr"]}]}),
    );
    assert!(bucket_to_cluster(&ctx(vec![expression.clone()], vec![prod.clone()])).is_ok());
    assert!(bucket_to_cluster(&ctx(vec![expression], vec![dev])).is_err());

    let persisted_invalid = selector(
        json!({"matchExpressions": [{"key": "env", "operator": "Near", "values": ["prod"]}]}),
    );
    let err = bucket_to_cluster(&ctx(vec![persisted_invalid], vec![prod.clone()])).unwrap_err();
    assert!(err.contains("not permitted"), "{err}");

    let everyone = selector(json!({}));
    assert!(
        bucket_to_cluster(&ctx(vec![everyone], vec![prod])).is_ok(),
        "{{}} matches every namespace"
    );
}

#[test]
fn rg_chk_reads_only_namespaces_references_cross_into() {
    let src = source(GrantFromKind::GarageKey);
    let refs = vec![
        target(GrantToKind::GarageCluster, TARGET, "garage"),
        target(GrantToKind::GarageBucket, TARGET, "b"),
        target(GrantToKind::GarageBucket, "apps", "b"),
        target(GrantToKind::GarageBucket, SOURCE, "own"),
        target(GrantToKind::GarageBucket, "Bad_Namespace", "b"),
    ];
    assert_eq!(
        GrantReads::of(&src, &refs),
        Some(GrantReads {
            namespaces: vec!["apps".into(), TARGET.into()],
            from_namespace: SOURCE.into(),
        })
    );
    assert_eq!(
        GrantReads::of(&src, &refs[3..4]),
        None,
        "same-namespace references read nothing"
    );
}
