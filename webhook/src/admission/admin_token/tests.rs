//! GarageAdminToken rules, one test per rule id (AT-C1…AT-C5, AT-W1, AT-U1, AT-D1…AT-D3).
//! The adapter's half of AT-D1/AT-D2 (a cluster that cannot be read refuses the deletion) is
//! in `webhook/tests/context_reads.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use shared_types::garage_admin_token::GarageAdminToken;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use super::{STATIC_MATERIAL_WARNING, cluster_read, validate_admin_token};
use crate::admission::testing::Want::{Allow, Deny, DenyWith, Warn};
use crate::admission::testing::{Subject, check, grant_in, merge};
use crate::admission::{Context, Review, Verdict};

const NS: &str = "garage";

fn token() -> Value {
    json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageAdminToken",
        "metadata": {"name": "admin-bootstrap", "namespace": NS, "finalizers": ["garageadmintoken.garage.rajsingh.info/finalizer"]},
        "spec": {
            "clusterRef": {"name": "garage"},
            "neverExpires": true,
            "secretTemplate": {"name": "garage-admin-bootstrap", "tokenKey": "admin-token", "includeEndpoint": true}
        }
    })
}

fn with_spec(spec: Value) -> Value {
    merge(token(), json!({"spec": spec}))
}

const TOKEN: Subject<GarageAdminToken> = Subject {
    validate: validate_admin_token,
    default: GarageAdminToken::clone,
};

fn gat(v: &Value) -> GarageAdminToken {
    Subject::<GarageAdminToken>::decode(v)
}

fn create(v: &Value) -> Verdict {
    TOKEN.create(v, &Context::default())
}

fn update(old: &Value, new: &Value) -> Verdict {
    TOKEN.update(old, new, &Context::default())
}

/// A GarageCluster of `namespace` whose admin token comes from `secret_ref`.
fn cluster(namespace: &str, secret_ref: Value) -> GarageCluster {
    serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2",
        "kind": "GarageCluster",
        "metadata": {"name": "garage", "namespace": namespace},
        "spec": {"storage": {"replicas": 3}, "admin": {"adminTokenSecretRef": secret_ref}}
    }))
    .unwrap()
}

fn delete(v: &Value, clusters: Vec<GarageCluster>) -> Verdict {
    let ctx = Context {
        garage_clusters: clusters,
        ..Context::default()
    };
    TOKEN.delete(v, &ctx)
}

#[test]
fn the_upstream_sample_is_allowed() {
    TOKEN.creates(vec![("sample", token(), Warn("static bootstrap material"))]);
}

#[test]
fn at_c1_cluster_ref_name_is_required() {
    let nameless = with_spec(json!({"clusterRef": {"name": ""}}));
    TOKEN.creates(vec![(
        "empty name",
        nameless.clone(),
        DenyWith("AT-C1", "clusterRef.name is required"),
    )]);
    check(
        "even for an unchanged spec",
        &TOKEN.cleanup(&nameless),
        &Deny("AT-C1"),
    );
}

#[test]
fn at_c2_cluster_ref_is_a_plain_valid_reference() {
    let bad = with_spec(json!({"clusterRef": {"name": "Bad_Cluster"}}));
    TOKEN.creates(vec![
        ("invalid name", bad.clone(), DenyWith("AT-C2", "is invalid")),
        (
            "kubeConfigSecretRef",
            with_spec(json!({"clusterRef": {"kubeConfigSecretRef": {"name": "kc", "key": "k"}}})),
            Deny("AT-C2"),
        ),
    ]);
    check("legacy Bad_Cluster, cleanup", &TOKEN.cleanup(&bad), &Allow);
    let changed = merge(
        bad.clone(),
        json!({"spec": {"secretTemplate": {"labels": {"a": "b"}}}}),
    );
    check(
        "legacy Bad_Cluster, change",
        &update(&bad, &changed),
        &Deny("AT-C2"),
    );
}

#[test]
fn at_c3_the_cluster_is_in_the_token_namespace() {
    let remote = with_spec(json!({"clusterRef": {"namespace": "storage"}}));
    check(
        "cross-namespace",
        &create(&remote),
        &DenyWith("AT-C3", "must match metadata.namespace"),
    );
    // A grant in the cluster's namespace does not help.
    let ctx = Context {
        reference_grants: vec![grant_in(
            "storage",
            json!({"from": [{"kind": "GarageAdminToken", "namespace": NS}]}),
        )],
        ..Context::default()
    };
    let v = validate_admin_token(Review::create(&gat(&remote)), &ctx);
    check("with a grant", &v, &DenyWith("AT-C3", "must match"));
    check(
        "own namespace spelled out",
        &create(&with_spec(json!({"clusterRef": {"namespace": NS}}))),
        &Allow,
    );
    check("never relaxed", &TOKEN.cleanup(&remote), &Deny("AT-C3"));
}

#[test]
fn at_c4_unsupported_dynamic_token_fields() {
    TOKEN.creates(vec![
        (
            "expiresAt and neverExpires",
            with_spec(json!({"expiresAt": "2030-01-01T00:00:00Z"})),
            DenyWith("AT-C4", "mutually exclusive"),
        ),
        (
            "expiresAt",
            with_spec(json!({"expiresAt": "2030-01-01T00:00:00Z", "neverExpires": null})),
            DenyWith("AT-C4", "expiresAt is unsupported"),
        ),
        (
            "spec.name",
            with_spec(json!({"name": "bootstrap"})),
            DenyWith("AT-C4", "spec.name is unsupported"),
        ),
    ]);
    let legacy = with_spec(json!({"name": "bootstrap"}));
    check(
        "not relaxed for an unchanged spec",
        &TOKEN.cleanup(&legacy),
        &Deny("AT-C4"),
    );
    check(
        "clearing the field is allowed",
        &update(&legacy, &token()),
        &Allow,
    );
}

#[test]
fn at_c5_generated_secret_material() {
    let template = |t: Value| with_spec(json!({"secretTemplate": t}));
    TOKEN.creates(vec![
        (
            "invalid name",
            template(json!({"name": "Bad_Secret"})),
            DenyWith("AT-C5", "secretTemplate.name \"Bad_Secret\" is invalid"),
        ),
        (
            "token key on the endpoint key",
            template(json!({"tokenKey": "admin-endpoint"})),
            DenyWith("AT-C5", "must be different"),
        ),
        (
            "endpoint key on the default token key",
            template(json!({"tokenKey": null, "endpointKey": "admin-token"})),
            DenyWith("AT-C5", "must be different"),
        ),
        (
            "invalid data key",
            template(json!({"endpointKey": "bad key"})),
            DenyWith("AT-C5", "not a valid Secret data key"),
        ),
        (
            "invalid label",
            template(json!({"labels": {"bad key": "v"}})),
            DenyWith("AT-C5", "label key \"bad key\""),
        ),
        (
            "no template",
            with_spec(json!({"secretTemplate": null})),
            Allow,
        ),
    ]);
    let legacy = template(json!({"name": "Bad_Secret"}));
    check(
        "legacy invalid name, finalizer removal",
        &TOKEN.cleanup(&legacy),
        &Allow,
    );
    check(
        "new invalid name",
        &update(&token(), &template(json!({"name": "Bad_Other"}))),
        &Deny("AT-C5"),
    );
}

#[test]
fn at_w1_every_create_and_update_warns_about_static_material() {
    let warning = format!("{STATIC_MATERIAL_WARNING} [AT-W1]");
    assert_eq!(create(&token()).warnings(), std::slice::from_ref(&warning));
    assert!(TOKEN.cleanup(&token()).warnings().contains(&warning));
    let denied = create(&with_spec(json!({"name": "x"})));
    assert!(!denied.allowed());
    assert!(denied.warnings().contains(&warning));
}

#[test]
fn at_u1_the_material_identity_is_immutable() {
    let changes: Vec<(&str, Value)> = vec![
        ("another cluster", json!({"clusterRef": {"name": "other"}})),
        (
            "own namespace spelled out",
            json!({"clusterRef": {"namespace": NS}}),
        ),
        ("template removed", json!({"secretTemplate": null})),
        (
            "secret renamed",
            json!({"secretTemplate": {"name": "renamed"}}),
        ),
        (
            "token key",
            json!({"secretTemplate": {"tokenKey": "token"}}),
        ),
        (
            "endpoint key",
            json!({"secretTemplate": {"endpointKey": "url"}}),
        ),
        (
            "endpoint switched off",
            json!({"secretTemplate": {"includeEndpoint": false}}),
        ),
    ];
    for (name, change) in changes {
        check(
            name,
            &update(&token(), &with_spec(change)),
            &DenyWith("AT-U1", "are immutable"),
        );
    }
    let relabelled = with_spec(
        json!({"secretTemplate": {"labels": {"team": "ops"}, "annotations": {"example.com/note": "x"}}}),
    );
    check(
        "labels and annotations may change",
        &update(&token(), &relabelled),
        &Allow,
    );
    let bare = with_spec(json!({"secretTemplate": null}));
    check(
        "template added",
        &update(
            &bare,
            &with_spec(json!({"secretTemplate": {"name": "garage-admin-bootstrap"}})),
        ),
        &Deny("AT-U1"),
    );
}

#[test]
fn at_d1_a_delete_without_the_stored_object_is_refused() {
    let review = Review {
        operation: crate::admission::Operation::Delete,
        old: None,
        new: None,
    };
    let v = validate_admin_token(review, &Context::default());
    check("no oldObject", &v, &DenyWith("AT-D1", "cannot prove"));
}

#[test]
fn at_d2_a_missing_cluster_allows_with_a_warning() {
    check(
        "no cluster",
        &delete(&token(), vec![]),
        &Warn("surviving Garage process"),
    );
    assert_eq!(
        cluster_read(&Review::delete(&gat(&token()))),
        Some((NS.to_owned(), "garage".to_owned())),
        "the deletion reads exactly the referenced cluster"
    );
    assert_eq!(cluster_read(&Review::create(&gat(&token()))), None);
    let invalid = with_spec(json!({"clusterRef": {"name": "Bad_Cluster"}}));
    assert_eq!(
        cluster_read(&Review::delete(&gat(&invalid))),
        None,
        "no such cluster can exist"
    );
}

#[test]
fn at_d3_a_consumed_secret_blocks_deletion() {
    let consumer = cluster(
        NS,
        json!({"name": "garage-admin-bootstrap", "key": "admin-token"}),
    );
    check(
        "still referenced",
        &delete(&token(), vec![consumer]),
        &DenyWith(
            "AT-D3",
            "still references generated Secret garage/garage-admin-bootstrap:admin-token",
        ),
    );
    let default_key = cluster(NS, json!({"name": "garage-admin-bootstrap", "key": ""}));
    check(
        "empty key is the default token key",
        &delete(&token(), vec![default_key]),
        &Deny("AT-D3"),
    );
    let repointed = cluster(NS, json!({"name": "rotated-admin", "key": "admin-token"}));
    check(
        "re-pointed",
        &delete(&token(), vec![repointed]),
        &Warn("complete credential rotation before deletion"),
    );
    let other_key = cluster(
        NS,
        json!({"name": "garage-admin-bootstrap", "key": "other"}),
    );
    check(
        "another key of the Secret",
        &delete(&token(), vec![other_key]),
        &Allow,
    );
    let by_name = with_spec(json!({"secretTemplate": null}));
    let consumer = cluster(NS, json!({"name": "admin-bootstrap", "key": "admin-token"}));
    check(
        "Secret named after the token",
        &delete(&by_name, vec![consumer]),
        &Deny("AT-D3"),
    );
    let legacy_remote = with_spec(json!({"clusterRef": {"namespace": "storage"}}));
    let elsewhere = cluster(
        "storage",
        json!({"name": "garage-admin-bootstrap", "key": "admin-token"}),
    );
    check(
        "a legacy token of another namespace's cluster",
        &delete(&legacy_remote, vec![elsewhere]),
        &Warn("complete credential rotation"),
    );
}
