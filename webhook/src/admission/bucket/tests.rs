//! GarageBucket rules, one test per rule id (GB-C1…GB-C7, GB-AL, GB-X1, GB-X2, GB-U1, GB-U2,
//! GB-D), each a table of named cases.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use shared_types::garage_bucket::GarageBucket;

use super::aliases::alias_problem;
use super::{grant_reads, validate_bucket};
use crate::admission::defaults::default_bucket;
use crate::admission::testing::Want::{Allow, Deny, DenyWith};
use crate::admission::testing::{Subject, check, grants_in, merge};
use crate::admission::{Context, Review};

const NS: &str = "apps";
const STORAGE: &str = "storage";

fn bucket() -> Value {
    json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageBucket",
        "metadata": {"name": "my-bucket", "namespace": NS, "finalizers": ["garagebucket.garage.rajsingh.info/finalizer"]},
        "spec": {
            "clusterRef": {"name": "garage"},
            "keyPermissions": [{"keyRef": {"name": "app-key"}, "read": true}]
        }
    })
}

fn with_spec(spec: Value) -> Value {
    merge(bucket(), json!({"spec": spec}))
}

const BUCKET: Subject<GarageBucket> = Subject {
    validate: validate_bucket,
    default: default_bucket,
};

fn gb(v: &Value) -> GarageBucket {
    Subject::<GarageBucket>::decode(v)
}

#[test]
fn the_upstream_samples_shape_is_allowed() {
    BUCKET.creates(vec![
        ("minimal", bucket(), Allow),
        (
            "website and lifecycle",
            with_spec(json!({
                "quotas": {"maxSize": "10Gi", "maxObjects": 100000},
                "website": {"enabled": true, "indexDocument": "index.html"},
                "lifecycle": {"rules": [{"id": "expire", "status": "Enabled", "filter": {"prefix": "app/"}, "expirationDays": 14, "abortIncompleteMultipartUploadDays": 3}]}
            })),
            Allow,
        ),
    ]);
}

#[test]
fn gb_c1_cluster_ref_name_is_required() {
    let nameless = with_spec(json!({"clusterRef": {"name": ""}}));
    BUCKET.creates(vec![(
        "empty clusterRef.name",
        nameless.clone(),
        DenyWith("GB-C1", "clusterRef.name is required"),
    )]);
    check(
        "even for an unchanged spec",
        &BUCKET.cleanup(&nameless),
        &Deny("GB-C1"),
    );
}

#[test]
fn gb_c2_cluster_ref_is_a_plain_valid_reference() {
    let bad_name = with_spec(json!({"clusterRef": {"name": "Bad_Cluster"}}));
    BUCKET.creates(vec![
        (
            "invalid name",
            bad_name.clone(),
            DenyWith("GB-C2", "is invalid"),
        ),
        (
            "invalid namespace",
            with_spec(json!({"clusterRef": {"namespace": "Bad_Namespace"}})),
            DenyWith("GB-C2", "is invalid"),
        ),
        (
            "kubeConfigSecretRef",
            with_spec(
                json!({"clusterRef": {"kubeConfigSecretRef": {"name": "kc", "key": "config"}}}),
            ),
            DenyWith("GB-C2", "kubeConfigSecretRef is not supported"),
        ),
    ]);
    check(
        "legacy invalid name, cleanup",
        &BUCKET.cleanup(&bad_name),
        &Allow,
    );
}

#[test]
fn gb_c3_global_alias_from_spec_or_metadata_name() {
    BUCKET.creates(vec![
        (
            "uppercase alias",
            with_spec(json!({"globalAlias": "Bad-Alias"})),
            DenyWith("GB-C3", "lowercase letters"),
        ),
        (
            "IP alias",
            with_spec(json!({"globalAlias": "10.0.0.1"})),
            DenyWith("GB-C3", "IP address"),
        ),
        (
            "name that is no bucket name",
            merge(bucket(), json!({"metadata": {"name": "ab"}})),
            DenyWith("GB-C3", "the default when spec.globalAlias is omitted"),
        ),
        (
            "explicit alias rescues a short name",
            merge(
                bucket(),
                json!({"metadata": {"name": "ab"}, "spec": {"globalAlias": "abc"}}),
            ),
            Allow,
        ),
    ]);
    let legacy = with_spec(json!({"globalAlias": "Legacy_Alias"}));
    check("legacy alias, cleanup", &BUCKET.cleanup(&legacy), &Allow);
    let changed = merge(
        legacy.clone(),
        json!({"spec": {"quotas": {"maxObjects": 5}}}),
    );
    check(
        "legacy alias, spec change",
        &BUCKET.update(&legacy, &changed, &Context::default()),
        &Deny("GB-C3"),
    );
}

#[test]
fn gb_al_alias_grammar() {
    for ok in [
        "abc",
        "my-bucket",
        "logs.2026",
        &"a".repeat(63),
        "s3alias-logs",
    ] {
        assert_eq!(alias_problem(ok), None, "{ok}");
    }
    for (bad, why) in [
        ("ab", "between 3 and 63"),
        (&"a".repeat(64), "between 3 and 63"),
        ("Bad-Alias", "lowercase"),
        ("a_b_c", "lowercase"),
        ("-abc", "start and end"),
        ("abc.", "start and end"),
        ("127.0.0.1", "IP address"),
        ("xn--abc", "punycode"),
        ("logs.xn--abc", "punycode"),
        ("logs-s3alias", "-s3alias"),
    ] {
        let problem = alias_problem(bad).unwrap_or_else(|| panic!("{bad} was accepted"));
        assert!(problem.contains(why), "{bad}: {problem}");
    }
}

#[test]
fn gb_c4_local_aliases() {
    let local = |entries: Value| with_spec(json!({"localAliases": entries}));
    BUCKET.creates(vec![
        (
            "valid",
            local(json!([{"keyRef": "app-key", "alias": "mine"}, {"keyRef": "other-key", "alias": "mine"}])),
            Allow,
        ),
        (
            "invalid keyRef",
            local(json!([{"keyRef": "Bad_Key", "alias": "mine"}])),
            DenyWith("GB-C4", "localAliases[0].keyRef \"Bad_Key\" is invalid"),
        ),
        (
            "invalid alias",
            local(json!([{"keyRef": "app-key", "alias": "127.0.0.1"}])),
            DenyWith("GB-C4", "IP address"),
        ),
        (
            "duplicate pair",
            local(json!([{"keyRef": "app-key", "alias": "mine"}, {"keyRef": "app-key", "alias": "mine"}])),
            DenyWith("GB-C4", "localAliases[1] duplicates localAliases[0]"),
        ),
    ]);
}

#[test]
fn gb_c5_key_permissions() {
    let perms = |entries: Value| with_spec(json!({"keyPermissions": entries}));
    BUCKET.creates(vec![
        (
            "keyRef without name",
            perms(json!([{"keyRef": {"name": ""}, "read": true}])),
            DenyWith("GB-C5", "keyRef.name is required"),
        ),
        (
            "invalid keyRef name",
            perms(json!([{"keyRef": {"name": "Bad_Key"}, "read": true}])),
            DenyWith("GB-C5", "is invalid"),
        ),
        (
            "invalid keyRef namespace",
            perms(json!([{"keyRef": {"name": "k", "namespace": "Bad_Namespace"}, "read": true}])),
            DenyWith("GB-C5", "is invalid"),
        ),
        (
            "same key, implicit and explicit own namespace",
            perms(json!([{"keyRef": {"name": "k"}, "read": true}, {"keyRef": {"name": "k", "namespace": NS}, "write": true}])),
            DenyWith("GB-C5", "duplicate keyRef"),
        ),
        (
            "no permission",
            perms(json!([{"keyRef": {"name": "k"}, "read": false}])),
            DenyWith("GB-C5", "at least one permission"),
        ),
    ]);
    let invalid = perms(json!([{"keyRef": {"name": "Bad_Key"}, "read": true}]));
    check(
        "legacy invalid keyRef, cleanup",
        &BUCKET.cleanup(&invalid),
        &Allow,
    );
    let changed = perms(json!([{"keyRef": {"name": "Bad_Key"}, "write": true}]));
    check(
        "legacy invalid keyRef, change",
        &BUCKET.update(&invalid, &changed, &Context::default()),
        &Deny("GB-C5"),
    );
    let equivalent = perms(
        json!([{"keyRef": {"name": "k"}, "read": true}, {"keyRef": {"name": "k", "namespace": NS}, "write": true}]),
    );
    check(
        "legacy equivalent keyRefs, cleanup",
        &BUCKET.cleanup(&equivalent),
        &Allow,
    );
    let flagless = perms(json!([{"keyRef": {"name": "k"}}]));
    check(
        "no permission, even unchanged",
        &BUCKET.cleanup(&flagless),
        &Deny("GB-C5"),
    );
}

#[test]
fn gb_c6_quotas_are_not_negative() {
    let quotas = |q: Value| with_spec(json!({"quotas": q}));
    BUCKET.creates(vec![
        (
            "zero",
            quotas(json!({"maxSize": "0", "maxObjects": 0})),
            Allow,
        ),
        (
            "negative maxObjects",
            quotas(json!({"maxObjects": -1})),
            DenyWith("GB-C6", "quotas.maxObjects must be >= 0"),
        ),
        (
            "negative maxSize",
            quotas(json!({"maxSize": "-1Gi"})),
            DenyWith("GB-C6", "quotas.maxSize must be >= 0"),
        ),
        (
            "not a quantity",
            quotas(json!({"maxSize": "lots"})),
            DenyWith("GB-C6", "is not a quantity"),
        ),
    ]);
    let legacy = quotas(json!({"maxObjects": -5}));
    check(
        "legacy negative quota, finalizer removal",
        &BUCKET.cleanup(&legacy),
        &Allow,
    );
    let valid = quotas(json!({"maxObjects": 5}));
    check(
        "new negative on a valid object",
        &BUCKET.update(&valid, &legacy, &Context::default()),
        &Deny("GB-C6"),
    );
    let respelled = quotas(json!({"maxSize": "1024Mi", "maxObjects": -5}));
    let stored = quotas(json!({"maxSize": "1Gi", "maxObjects": -5}));
    check(
        "a quantity re-spelled is no spec change",
        &BUCKET.update(&stored, &respelled, &Context::default()),
        &Allow,
    );
}

#[test]
fn gb_c7_lifecycle_rules() {
    let rules = |r: Value| with_spec(json!({"lifecycle": {"rules": r}}));
    let rule = |extra: Value| merge(json!({"id": "r", "expirationDays": 1}), extra);
    BUCKET.creates(vec![
        ("valid", rules(json!([rule(json!({}))])), Allow),
        (
            "no id",
            rules(json!([rule(json!({"id": ""}))])),
            DenyWith("GB-C7", "id is required"),
        ),
        (
            "duplicate id",
            rules(json!([rule(json!({})), rule(json!({}))])),
            DenyWith("GB-C7", "duplicate id"),
        ),
        (
            "no action",
            rules(json!([{"id": "r"}])),
            DenyWith("GB-C7", "at least one of expirationDays"),
        ),
        (
            "days and date",
            rules(json!([rule(
                json!({"expirationDate": "2030-01-01T00:00:00Z"})
            )])),
            DenyWith("GB-C7", "mutually exclusive"),
        ),
        (
            "zero days",
            rules(json!([rule(json!({"expirationDays": 0}))])),
            DenyWith("GB-C7", "expirationDays must be >= 1"),
        ),
        (
            "date not at midnight",
            rules(json!([{"id": "r", "expirationDate": "2030-01-01T12:00:00Z"}])),
            DenyWith("GB-C7", "midnight UTC"),
        ),
        (
            "date at midnight",
            rules(json!([{"id": "r", "expirationDate": "2030-01-01T00:00:00Z"}])),
            Allow,
        ),
        (
            "zero abort days",
            rules(json!([{"id": "r", "abortIncompleteMultipartUploadDays": 0}])),
            DenyWith("GB-C7", "abortIncompleteMultipartUploadDays must be >= 1"),
        ),
        (
            "negative greater-than",
            rules(json!([rule(
                json!({"filter": {"objectSizeGreaterThan": -1}})
            )])),
            DenyWith("GB-C7", "objectSizeGreaterThan must be >= 0"),
        ),
        (
            "zero less-than",
            rules(json!([rule(json!({"filter": {"objectSizeLessThan": 0}}))])),
            DenyWith("GB-C7", "objectSizeLessThan must be >= 1"),
        ),
        (
            "empty size window",
            rules(json!([rule(
                json!({"filter": {"objectSizeGreaterThan": 10, "objectSizeLessThan": 10}})
            )])),
            DenyWith("GB-C7", "must be less than objectSizeLessThan"),
        ),
    ]);
    let legacy = rules(json!([{"id": "r"}]));
    check(
        "applies to an unchanged spec too",
        &BUCKET.cleanup(&legacy),
        &Deny("GB-C7"),
    );
    let unknown_status = rules(json!([rule(json!({"status": "Sometimes"}))]));
    assert!(
        serde_json::from_value::<GarageBucket>(unknown_status).is_err(),
        "a status other than Enabled or Disabled does not decode, so the review is refused"
    );
}

#[test]
fn gb_x1_cluster_in_another_namespace_needs_a_grant() {
    let remote = with_spec(json!({"clusterRef": {"name": "shared", "namespace": STORAGE}}));
    let from_apps = json!({"from": [{"kind": "GarageBucket", "namespace": NS}]});
    check(
        "no grant",
        &BUCKET.create(&remote, &Context::default()),
        &DenyWith("GB-X1", "GarageReferenceGrant"),
    );
    check(
        "grant without to",
        &BUCKET.create(&remote, &grants_in(STORAGE, vec![from_apps.clone()])),
        &Allow,
    );
    let for_keys_only = json!({"from": [{"kind": "GarageKey", "namespace": NS}]});
    check(
        "grant for keys only",
        &BUCKET.create(&remote, &grants_in(STORAGE, vec![for_keys_only])),
        &Deny("GB-X1"),
    );
    check("grant revoked, cleanup", &BUCKET.cleanup(&remote), &Allow);
    let changed = merge(
        remote.clone(),
        json!({"spec": {"quotas": {"maxObjects": 1}}}),
    );
    check(
        "grant revoked, spec change",
        &BUCKET.update(&remote, &changed, &Context::default()),
        &DenyWith("GB-X1", "GarageReferenceGrant"),
    );
}

#[test]
fn gb_x2_key_in_another_namespace_needs_an_explicit_grant() {
    let remote = with_spec(
        json!({"keyPermissions": [{"keyRef": {"name": "k", "namespace": STORAGE}, "read": true}]}),
    );
    let from = json!([{"kind": "GarageBucket", "namespace": NS}]);
    check(
        "no grant",
        &BUCKET.create(&remote, &Context::default()),
        &DenyWith("GB-X2", "spec.keyPermissions[0].keyRef"),
    );
    check(
        "grant without to covers no key",
        &BUCKET.create(&remote, &grants_in(STORAGE, vec![json!({"from": from})])),
        &Deny("GB-X2"),
    );
    check(
        "grant naming GarageKey",
        &BUCKET.create(
            &remote,
            &grants_in(
                STORAGE,
                vec![json!({"from": from, "to": [{"kind": "GarageKey"}]})],
            ),
        ),
        &Allow,
    );
}

#[test]
fn gb_u1_cluster_ref_is_immutable() {
    let renamed = with_spec(json!({"clusterRef": {"name": "other"}}));
    check(
        "another cluster",
        &BUCKET.update(&bucket(), &renamed, &Context::default()),
        &DenyWith("GB-U1", "clusterRef is immutable"),
    );
    let explicit = with_spec(json!({"clusterRef": {"namespace": NS}}));
    check(
        "own namespace spelled out",
        &BUCKET.update(&bucket(), &explicit, &Context::default()),
        &Allow,
    );
}

#[test]
fn gb_u2_bucket_id_is_immutable_once_bound() {
    let pinned = with_spec(json!({"bucketId": "aaaa"}));
    let bound = merge(pinned.clone(), json!({"status": {"bucketId": "aaaa"}}));
    let repinned = with_spec(json!({"bucketId": "bbbb"}));
    check(
        "bound, changed",
        &BUCKET.update(&bound, &repinned, &Context::default()),
        &DenyWith("GB-U2", "bucketId is immutable"),
    );
    check(
        "not bound yet",
        &BUCKET.update(&pinned, &repinned, &Context::default()),
        &Allow,
    );
}

#[test]
fn gb_d_delete_is_always_allowed() {
    let broken = with_spec(json!({"clusterRef": {"name": ""}, "quotas": {"maxObjects": -1}}));
    assert!(BUCKET.delete(&broken, &Context::default()).allowed());
}

#[test]
fn only_reviews_with_cross_namespace_references_read_grants() {
    let remote = with_spec(json!({"clusterRef": {"name": "shared", "namespace": STORAGE}}));
    let reads = grant_reads(&Review::create(&gb(&remote))).unwrap();
    assert_eq!(reads.namespaces, vec![STORAGE.to_owned()]);
    assert_eq!(reads.from_namespace, NS);
    assert_eq!(grant_reads(&Review::create(&gb(&bucket()))), None);
    let labelled = merge(remote.clone(), json!({"metadata": {"labels": {"a": "b"}}}));
    let (old, new) = (gb(&remote), default_bucket(&gb(&labelled)));
    assert_eq!(
        grant_reads(&Review::update(&old, &new)),
        None,
        "unchanged spec"
    );
    assert_eq!(grant_reads(&Review::delete(&old)), None);
}
