//! GarageKey rules, one test per rule id (GK-C1…GK-C5, GK-M, GK-IK, GK-ST, GK-X1, GK-X2,
//! GK-U1…GK-U3, GK-W1, GK-W2, GK-D), each a table of named cases.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use shared_types::garage_key::{GarageKey, import_snapshot_secret_name};

use super::{grant_reads, validate_key};
use crate::admission::defaults::default_key;
use crate::admission::testing::Want::{Allow, Deny, DenyWith, Warn};
use crate::admission::testing::{Subject, check, grants_in, merge};
use crate::admission::{Context, Review, Verdict};

const NS: &str = "apps";
const STORAGE: &str = "storage";

fn key() -> Value {
    json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageKey",
        "metadata": {"name": "app-key", "namespace": NS, "finalizers": ["garagekey.garage.rajsingh.info/finalizer"]},
        "spec": {
            "clusterRef": {"name": "garage"},
            "bucketPermissions": [{"bucketRef": {"name": "my-bucket"}, "read": true}]
        }
    })
}

fn with_spec(spec: Value) -> Value {
    merge(key(), json!({"spec": spec}))
}

const KEY: Subject<GarageKey> = Subject {
    validate: validate_key,
    default: default_key,
};

fn gk(v: &Value) -> GarageKey {
    Subject::<GarageKey>::decode(v)
}

/// `v` as the API server stored it: defaulted by the mutating webhook.
fn stored(v: Value) -> Value {
    serde_json::to_value(default_key(&gk(&v))).unwrap()
}

fn update(old: &Value, new: &Value) -> Verdict {
    KEY.update(old, new, &Context::default())
}

#[test]
fn gk_c1_cluster_ref_name_is_required() {
    KEY.creates(vec![(
        "empty clusterRef.name",
        with_spec(json!({"clusterRef": {"name": ""}})),
        DenyWith("GK-C1", "clusterRef.name is required"),
    )]);
}

#[test]
fn gk_c2_cluster_ref_is_a_plain_valid_reference() {
    let bad = with_spec(json!({"clusterRef": {"name": "Bad_Cluster"}}));
    KEY.creates(vec![
        ("invalid name", bad.clone(), DenyWith("GK-C2", "is invalid")),
        (
            "kubeConfigSecretRef",
            with_spec(json!({"clusterRef": {"kubeConfigSecretRef": {"name": "kc", "key": "k"}}})),
            DenyWith("GK-C2", "kubeConfigSecretRef is not supported"),
        ),
    ]);
    check("legacy invalid name, cleanup", &KEY.cleanup(&bad), &Allow);
}

#[test]
fn gk_c3_expiry_is_a_date_or_never() {
    KEY.creates(vec![
        (
            "both",
            with_spec(json!({"expiresAt": "2030-01-01T00:00:00Z", "neverExpires": true})),
            DenyWith("GK-C3", "mutually exclusive"),
        ),
        (
            "expiresAt alone",
            with_spec(json!({"expiresAt": "2030-01-01T00:00:00Z"})),
            Allow,
        ),
        (
            "expiresAt with neverExpires false",
            with_spec(json!({"expiresAt": "2030-01-01T00:00:00Z", "neverExpires": false})),
            Allow,
        ),
    ]);
}

#[test]
fn gk_c4_bucket_permissions() {
    let perms = |p: Value| with_spec(json!({"bucketPermissions": p}));
    KEY.creates(vec![
        (
            "no reference",
            perms(json!([{"read": true}])),
            DenyWith("GK-C4", "must specify bucketRef, bucketId, or globalAlias"),
        ),
        (
            "two references",
            perms(json!([{"bucketId": "aaaa", "globalAlias": "shared", "read": true}])),
            DenyWith("GK-C4", "specify only one of"),
        ),
        (
            "bucketRef without name",
            perms(json!([{"bucketRef": {"name": ""}, "read": true}])),
            DenyWith("GK-C4", "bucketRef.name is required"),
        ),
        (
            "invalid bucketRef",
            perms(json!([{"bucketRef": {"name": "Bad_Bucket"}, "read": true}])),
            DenyWith("GK-C4", "is invalid"),
        ),
        (
            "same bucket, implicit and explicit own namespace",
            perms(json!([{"bucketRef": {"name": "b"}, "read": true}, {"bucketRef": {"name": "b", "namespace": NS}, "write": true}])),
            DenyWith("GK-C4", "duplicate bucket reference"),
        ),
        (
            "same bucket id twice",
            perms(json!([{"bucketId": "aaaa", "read": true}, {"bucketId": "aaaa", "write": true}])),
            DenyWith("GK-C4", "\"id:aaaa\""),
        ),
        (
            "IP alias",
            perms(json!([{"globalAlias": "127.0.0.1", "read": true}])),
            DenyWith("GK-C4", "IP address"),
        ),
        (
            "no permission",
            perms(json!([{"globalAlias": "shared"}])),
            DenyWith("GK-C4", "at least one permission"),
        ),
        ("by id and by alias", perms(json!([{"bucketId": "aaaa", "read": true}, {"globalAlias": "shared", "owner": true}])), Allow),
    ]);
    let legacy = perms(json!([{"globalAlias": "127.0.0.1", "read": true}]));
    check("legacy IP alias, cleanup", &KEY.cleanup(&legacy), &Allow);
    let changed = perms(json!([{"globalAlias": "127.0.0.1", "write": true}]));
    check(
        "legacy IP alias, change",
        &update(&legacy, &changed),
        &DenyWith("GK-C4", "IP address"),
    );
}

#[test]
fn gk_c4_a_legacy_plain_string_bucket_ref_is_read_as_a_name() {
    let legacy =
        with_spec(json!({"bucketPermissions": [{"bucketRef": "my-bucket", "read": true}]}));
    check(
        "cleanup of a v1alpha1-era key",
        &KEY.cleanup(&legacy),
        &Allow,
    );
    check("create", &KEY.create(&legacy, &Context::default()), &Allow);
    let empty = with_spec(json!({"bucketPermissions": [{"bucketRef": "", "read": true}]}));
    check(
        "empty legacy name",
        &KEY.create(&empty, &Context::default()),
        &DenyWith("GK-C4", "bucketRef.name is required"),
    );
}

#[test]
fn gk_c5_all_buckets_grants_something() {
    KEY.creates(vec![
        (
            "empty allBuckets",
            with_spec(json!({"bucketPermissions": null, "allBuckets": {}})),
            DenyWith("GK-C5", "at least one permission"),
        ),
        (
            "read on every bucket",
            with_spec(json!({"bucketPermissions": null, "allBuckets": {"read": true}})),
            Allow,
        ),
    ]);
}

#[test]
fn gk_ik_import_key_material() {
    let import = |i: Value| with_spec(json!({"importKey": i}));
    KEY.creates(vec![
        (
            "empty importKey",
            import(json!({})),
            DenyWith(
                "GK-IK",
                "specify secretRef or both accessKeyId and secretAccessKey",
            ),
        ),
        (
            "secretRef and inline",
            import(json!({"secretRef": {"name": "creds"}, "accessKeyId": "GK1"})),
            DenyWith("GK-IK", "not both"),
        ),
        (
            "secretRef without name",
            import(json!({"secretRef": {"namespace": NS}})),
            DenyWith("GK-IK", "importKey.secretRef.name is required"),
        ),
        (
            "same data key for both halves",
            import(json!({"secretRef": {"name": "creds"}, "accessKeyIdKey": "secret-access-key"})),
            DenyWith("GK-IK", "distinct Secret data keys"),
        ),
        (
            "invalid data key",
            import(json!({"secretRef": {"name": "creds"}, "accessKeyIdKey": "bad key"})),
            DenyWith("GK-IK", "not a valid Secret data key"),
        ),
        (
            "key names without secretRef",
            import(json!({"accessKeyId": "GK1", "secretAccessKey": "s", "accessKeyIdKey": "id"})),
            DenyWith("GK-IK", "can only be used with secretRef"),
        ),
        (
            "inline without secret",
            import(json!({"accessKeyId": "GK1"})),
            DenyWith("GK-IK", "secretAccessKey is required"),
        ),
        (
            "inline without id",
            import(json!({"secretAccessKey": "s"})),
            DenyWith("GK-IK", "accessKeyId is required"),
        ),
        (
            "inline id Garage never issued",
            import(json!({"accessKeyId": "AKIA123", "secretAccessKey": "s"})),
            DenyWith("GK-IK", "start with 'GK'"),
        ),
        (
            "inline pair",
            import(json!({"accessKeyId": "GK31c2f218a2e44f485b94239e", "secretAccessKey": "s"})),
            Warn("use spec.importKey.secretRef instead"),
        ),
        (
            "secretRef in own namespace",
            import(json!({"secretRef": {"name": "creds", "namespace": NS}})),
            Allow,
        ),
    ]);
}

#[test]
fn gk_m_material_stays_in_the_namespace_and_off_the_snapshot_name() {
    KEY.creates(vec![
        (
            "cross-namespace secretRef",
            with_spec(json!({"importKey": {"secretRef": {"name": "creds", "namespace": "other"}}})),
            DenyWith("GK-M", "cross-namespace Secret reads are not permitted"),
        ),
        (
            "generated Secret named as the snapshot",
            with_spec(json!({
                "importKey": {"secretRef": {"name": "creds"}},
                "secretTemplate": {"name": import_snapshot_secret_name("app-key")}
            })),
            DenyWith(
                "GK-M",
                "collides with the controller's immutable import material snapshot",
            ),
        ),
        (
            "snapshot name without an import",
            with_spec(json!({"secretTemplate": {"name": import_snapshot_secret_name("app-key")}})),
            Allow,
        ),
    ]);
}

#[test]
fn gk_st_generated_secret_template() {
    let template = |t: Value| with_spec(json!({"secretTemplate": t}));
    KEY.creates(vec![
        (
            "invalid name",
            template(json!({"name": "Bad_Secret"})),
            DenyWith("GK-ST", "secretTemplate.name \"Bad_Secret\" is invalid"),
        ),
        (
            "profile injecting a section",
            template(json!({"credentialsFileProfile": "default]\n[other"})),
            DenyWith("GK-ST", "credentialsFileProfile"),
        ),
        (
            "invalid generated key",
            template(json!({"accessKeyIdKey": "bad key"})),
            DenyWith("GK-ST", "not a valid Secret data key"),
        ),
        (
            "invalid key of a disabled entry",
            template(json!({"includeRegion": false, "regionKey": "bad key"})),
            DenyWith("GK-ST", "secretTemplate.regionKey"),
        ),
        (
            "two generated entries on one key",
            template(json!({"endpointKey": "host"})),
            DenyWith("GK-ST", "both use Secret data key \"host\""),
        ),
        (
            "credentials file on the access key",
            template(json!({"includeCredentialsFile": true, "credentialsFileKey": "access-key-id"})),
            DenyWith("GK-ST", "both use Secret data key \"access-key-id\""),
        ),
        (
            "disabled entries may share a key",
            template(json!({"includeEndpoint": false, "endpointKey": "access-key-id", "hostKey": "access-key-id"})),
            Allow,
        ),
        (
            "additional data overwriting a generated entry",
            template(json!({"additionalData": {"access-key-id": "x"}})),
            DenyWith("GK-ST", "collides with accessKeyIdKey"),
        ),
        (
            "additional data under a disabled entry's key",
            template(json!({"additionalData": {"bucket": "x"}})),
            Allow,
        ),
        (
            "invalid additional key",
            template(json!({"additionalData": {"bad key": "x"}})),
            DenyWith("GK-ST", "additionalData key"),
        ),
        (
            "invalid label and annotation",
            template(json!({"labels": {"app": "not valid!"}, "annotations": {"bad key": ""}})),
            DenyWith("GK-ST", "annotation key \"bad key\""),
        ),
    ]);
}

#[test]
fn gk_x1_cluster_in_another_namespace_needs_a_grant() {
    let remote = with_spec(json!({"clusterRef": {"name": "shared", "namespace": STORAGE}}));
    check(
        "no grant",
        &KEY.create(&remote, &Context::default()),
        &DenyWith("GK-X1", "GarageReferenceGrant"),
    );
    let from = json!({"from": [{"kind": "GarageKey", "namespace": NS}]});
    check(
        "grant",
        &KEY.create(&remote, &grants_in(STORAGE, vec![from])),
        &Allow,
    );
    check("grant revoked, cleanup", &KEY.cleanup(&remote), &Allow);
}

#[test]
fn gk_x2_bucket_in_another_namespace_needs_a_grant() {
    let remote = with_spec(
        json!({"bucketPermissions": [{"bucketRef": {"name": "shared", "namespace": STORAGE}, "read": true}]}),
    );
    check(
        "no grant",
        &KEY.create(&remote, &Context::default()),
        &DenyWith("GK-X2", "spec.bucketPermissions[0].bucketRef"),
    );
    let named = json!({"from": [{"kind": "GarageKey", "namespace": NS}], "to": [{"kind": "GarageBucket", "name": "shared"}]});
    check(
        "grant naming the bucket",
        &KEY.create(&remote, &grants_in(STORAGE, vec![named])),
        &Allow,
    );
    let other = json!({"from": [{"kind": "GarageKey", "namespace": NS}], "to": [{"kind": "GarageBucket", "name": "private"}]});
    check(
        "grant naming another bucket",
        &KEY.create(&remote, &grants_in(STORAGE, vec![other])),
        &Deny("GK-X2"),
    );
}

#[test]
fn gk_u1_cluster_ref_is_immutable() {
    check(
        "another cluster",
        &update(&key(), &with_spec(json!({"clusterRef": {"name": "other"}}))),
        &DenyWith("GK-U1", "create a new GarageKey"),
    );
    check(
        "own namespace spelled out",
        &update(&key(), &with_spec(json!({"clusterRef": {"namespace": NS}}))),
        &Allow,
    );
}

#[test]
fn gk_u2_import_key_is_immutable() {
    let imported = with_spec(json!({"importKey": {"secretRef": {"name": "creds"}}}));
    let other = with_spec(json!({"importKey": {"secretRef": {"name": "other"}}}));
    for (name, old, new) in [
        ("mutated", &imported, &other),
        ("removed", &imported, &key()),
        ("added", &key(), &imported),
    ] {
        check(
            name,
            &update(old, new),
            &DenyWith("GK-U2", "importKey is immutable"),
        );
    }
}

#[test]
fn gk_u3_an_unchanged_legacy_snapshot_collision_is_tolerated() {
    // As stored: written through the mutating webhook, so the template carries its defaults.
    let colliding = stored(with_spec(json!({
        "importKey": {"secretRef": {"name": "creds"}},
        "secretTemplate": {"name": import_snapshot_secret_name("app-key")}
    })));
    let labelled = merge(
        colliding.clone(),
        json!({"metadata": {"labels": {"team": "a"}}}),
    );
    check(
        "unchanged, labelled",
        &update(&colliding, &labelled),
        &Warn("temporarily tolerated"),
    );
    let renamed = merge(
        colliding.clone(),
        json!({"spec": {"secretTemplate": {"name": "creds-out"}}}),
    );
    let v = update(&colliding, &renamed);
    check("renamed away", &v, &Allow);
    assert!(
        !v.warnings().iter().any(|w| w.contains("[GK-U3]")),
        "{:?}",
        v.warnings()
    );
    let relabelled = merge(
        colliding.clone(),
        json!({"spec": {"secretTemplate": {"labels": {"a": "b"}}}}),
    );
    check(
        "template changed, still colliding",
        &update(&colliding, &relabelled),
        &Deny("GK-M"),
    );
}

#[test]
fn gk_w1_a_key_without_any_permission_warns() {
    let v = KEY.create(
        &with_spec(json!({"bucketPermissions": null})),
        &Context::default(),
    );
    check("no permissions", &v, &Warn("No bucket permissions defined"));
    let v = KEY.create(&key(), &Context::default());
    assert!(v.warnings().is_empty(), "{:?}", v.warnings());
}

#[test]
fn gk_w2_all_buckets_and_bucket_permissions_together_warn() {
    let both = with_spec(json!({"allBuckets": {"read": true}}));
    check(
        "both",
        &KEY.create(&both, &Context::default()),
        &Warn("Both allBuckets and bucketPermissions are set"),
    );
}

#[test]
fn gk_d_delete_is_always_allowed() {
    let broken = with_spec(json!({"clusterRef": {"name": ""}, "importKey": {}}));
    assert!(KEY.delete(&broken, &Context::default()).allowed());
}

#[test]
fn only_reviews_with_cross_namespace_references_read_grants() {
    let remote = with_spec(json!({"bucketPermissions": [
        {"bucketRef": {"name": "a", "namespace": STORAGE}, "read": true},
        {"bucketRef": {"name": "b", "namespace": "archive"}, "read": true},
        {"bucketRef": {"name": "c"}, "read": true}
    ]}));
    let reads = grant_reads(&Review::create(&gk(&remote))).unwrap();
    assert_eq!(
        reads.namespaces,
        vec!["archive".to_owned(), STORAGE.to_owned()]
    );
    assert_eq!(grant_reads(&Review::create(&gk(&key()))), None);
    let (old, new) = (gk(&remote), default_key(&gk(&remote)));
    assert_eq!(
        grant_reads(&Review::update(&old, &new)),
        None,
        "unchanged spec"
    );
}
