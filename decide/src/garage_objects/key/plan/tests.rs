//! Table tests of the GarageKey plan: no API server, no Garage.

#![allow(clippy::unwrap_used)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::{Value, json};
use shared_types::garage_reference_grant::GarageReferenceGrant;

use super::*;
use crate::garage_objects::access::{Change, Grants};
use crate::garage_objects::fixtures::{bucket, key as key_named, key_info, listed, on, snapshot};

const ID: &str = "GK000000000000000000000001";
const SECRET: &str = "s3cr3t";

fn material() -> Material {
    Material {
        access_key_id: ID.into(),
        secret_access_key: SECRET.into(),
    }
}

fn endpoint() -> Endpoint {
    Endpoint {
        scheme: "http".into(),
        host: Some("garage-api.apps.svc:3900".into()),
        region: "garage".into(),
    }
}

fn key(over: Value) -> GarageKey {
    key_named("k", over)
}

/// A key converged in an earlier pass: its ID, Secret and grants recorded.
fn settled(over: Value) -> GarageKey {
    let base = key(json!({"status": {
        "accessKeyId": ID, "keyId": ID, "managedBucketGrants": [], "clusterWide": false,
        "secretRef": {"name": "k", "namespace": "apps"},
    }}));
    let mut v = serde_json::to_value(base).unwrap();
    if let (Value::Object(b), Value::Object(o)) = (&mut v, over) {
        for (k, x) in o {
            match (b.get_mut(&k), x) {
                (Some(Value::Object(slot)), Value::Object(x)) => slot.extend(x),
                (_, x) => {
                    b.insert(k, x);
                }
            }
        }
    }
    serde_json::from_value(v).unwrap()
}

/// The Secret the key renders, as a live object it controls.
fn rendered(key: &GarageKey) -> Secret {
    let mut s = secret::render(key, ID, SECRET, &endpoint(), None).unwrap();
    s.metadata.resource_version = Some("7".into());
    s
}

/// What a pass over `key` observes, Garage holding `in_garage`, the snapshot holding also
/// `buckets`, and the live Secret `secret`.
fn observed(
    key: GarageKey,
    in_garage: Option<KeyInfo>,
    buckets: Vec<shared_types::garage_bucket::GarageBucket>,
    grants: Grants,
    secret: Option<Secret>,
) -> Observed {
    let mut me = key.clone();
    me.status.get_or_insert_with(Default::default).access_key_id = Some(ID.into());
    Observed {
        key,
        facts: Ok(Facts {
            material: material(),
            in_garage,
            snapshot: snapshot(vec![me], buckets, vec![listed("b1", &["one"])], grants),
            endpoint: endpoint(),
            secret,
            old_secret: None,
        }),
    }
}

/// The plan of a key Garage holds as `garage`, its Secret as rendered.
fn plan_held(
    k: GarageKey,
    garage: KeyInfo,
    buckets: Vec<shared_types::garage_bucket::GarageBucket>,
    grants: Grants,
) -> Plan {
    let live = rendered(&k);
    plan(&observed(k, Some(garage), buckets, grants, Some(live))).unwrap()
}

fn in_garage(over: Value) -> KeyInfo {
    key_info(ID, "k", SECRET, over)
}

/// A GarageBucket `apps/b` with ID `b1` in Garage.
fn bucket_b1(over: Value) -> shared_types::garage_bucket::GarageBucket {
    let mut b = bucket("b", over);
    b.status.get_or_insert_with(Default::default).bucket_id = Some("b1".into());
    b
}

fn kinds(plan: &Plan) -> Vec<&'static str> {
    plan.steps
        .iter()
        .map(|s| match s {
            Step::Import { .. } => "import",
            Step::Update { .. } => "update",
            Step::Record(_) => "record",
            Step::Permission(_) => "permission",
            Step::ReadBack(_) => "read back",
            Step::Secret(SecretWrite::Create(_)) => "create secret",
            Step::Secret(SecretWrite::Replace(_)) => "replace secret",
            Step::Secret(SecretWrite::Recreate(_)) => "recreate secret",
            Step::Secret(SecretWrite::Foreign { .. }) => "foreign secret",
            Step::DeleteSecret(_) => "delete secret",
            Step::RetireKey(_) => "retire key",
            Step::Revoke(_) => "revoke",
            Step::DeleteKey(_) => "delete key",
            Step::LeaveInGarage(_) => "leave in garage",
            Step::RemoveFinalizer => "remove finalizer",
        })
        .collect()
}

fn perms(read: bool, write: bool, owner: bool) -> BucketPermissions {
    BucketPermissions { read, write, owner }
}

#[test]
fn a_fresh_key_is_imported_under_its_name_then_its_secret_written() {
    let k = key(json!({"spec": {"name": "web", "expiresAt": "2030-01-01T00:00:00Z"}}));
    let plan = plan(&observed(k, None, vec![], Grants::default(), None)).unwrap();
    assert_eq!(kinds(&plan), ["import", "update", "create secret"]);
    let Step::Import {
        name,
        material: m,
        refused,
    } = &plan.steps[0]
    else {
        panic!("{:?}", plan.steps[0]);
    };
    assert_eq!((name.as_str(), m), ("web", &material()));
    // Garage refuses an ID it once held: the key waits and says how to mint new credentials.
    let Outcome::Waiting {
        reason: why,
        message,
    } = &refused.outcome
    else {
        panic!("{:?}", refused.outcome);
    };
    assert_eq!(*why, reason::REASON_GARAGE_API_ERROR);
    assert!(message.contains(annotation::ANNOTATION_KEY_REPLACEMENT_NONCE));
    assert_eq!(refused.status.phase, Some(KeyPhase::Pending));
    // The import names the key and gives it nothing: only what the spec adds is updated.
    assert_eq!(plan.garage.as_ref().unwrap().name, "web");
    assert_eq!(plan.outcome, Outcome::Converged);
    assert_eq!(
        plan.publish,
        Publish::Ready(Ready {
            managed: vec![],
            cluster_wide: false,
            secret_name: "k".into(),
        })
    );
}

#[test]
fn a_key_whose_secret_would_name_an_unknown_endpoint_is_refused_before_garage_is_written() {
    // Behind a management handle's URL the operator knows no S3 endpoint.
    let unknown = |k: GarageKey, held: Option<KeyInfo>| {
        let mut o = observed(k, held, vec![], Grants::default(), None);
        if let Ok(f) = &mut o.facts {
            f.endpoint.host = None;
        }
        plan(&o).unwrap()
    };
    for held in [None, Some(in_garage(json!({})))] {
        let p = unknown(key(json!({})), held.clone());
        assert!(p.steps.is_empty(), "{:?}", kinds(&p));
        let Outcome::Waiting {
            reason: why,
            message,
        } = &p.outcome
        else {
            panic!("{:?}", p.outcome);
        };
        assert_eq!(*why, reason::REASON_VALIDATION_FAILED);
        assert!(
            message.starts_with("spec.secretTemplate.includeEndpoint"),
            "{message}"
        );
        let Publish::Status(status) = &p.publish else {
            panic!("{:?}", p.publish);
        };
        assert_eq!(status.phase, Some(KeyPhase::Pending));
    }
    // Without the endpoint in its Secret the key goes ahead.
    let k = key(json!({"spec": {"secretTemplate": {"includeEndpoint": false}}}));
    let p = unknown(k, None);
    assert_eq!(kinds(&p), ["import", "create secret"]);
    let Some(Step::Secret(SecretWrite::Create(secret))) = p.steps.last() else {
        panic!("{:?}", kinds(&p));
    };
    let data = secret.string_data.clone().unwrap_or_default();
    let data: Vec<&String> = data
        .keys()
        .chain(secret.data.iter().flat_map(|d| d.keys()))
        .collect();
    assert!(
        !data.iter().any(|k| *k == "endpoint" || *k == "host"),
        "{data:?}"
    );
}

#[test]
fn a_fresh_key_without_settings_needs_nothing_after_the_import() {
    let plan = plan(&observed(
        key(json!({})),
        None,
        vec![],
        Grants::default(),
        None,
    ))
    .unwrap();
    assert_eq!(kinds(&plan), ["import", "create secret"]);
}

#[test]
fn a_converged_key_plans_no_operation() {
    let k = settled(json!({}));
    let plan = plan_held(k, in_garage(json!({})), vec![], Grants::default());
    assert!(plan.steps.is_empty(), "{:?}", plan.steps);
    assert_eq!(plan.outcome, Outcome::Converged);
}

#[test]
fn an_imported_key_already_in_garage_is_not_imported_again() {
    let k = settled(json!({"spec": {"importKey": {"accessKeyId": ID, "secretAccessKey": SECRET}}}));
    let live = rendered(&k);
    let o = observed(
        k,
        Some(in_garage(json!({}))),
        vec![],
        Grants::default(),
        Some(live),
    );
    assert!(plan(&o).unwrap().steps.is_empty());
}

#[test]
fn imported_material_comes_from_the_named_secret_keys_or_says_what_is_missing() {
    let import: ImportKey =
        serde_json::from_value(json!({"secretRef": {"name": "src"}, "accessKeyIdKey": "id"}))
            .unwrap();
    let source: Secret = serde_json::from_value(json!({
        "metadata": {"name": "src"},
        "data": {"id": "R0sx", "secret-access-key": "c2VjcmV0IA=="},
    }))
    .unwrap();
    let m = imported_material(&import, "apps", "src", Some(&source)).unwrap();
    assert_eq!(
        (m.access_key_id.as_str(), m.secret_access_key.as_str()),
        ("GK1", "secret")
    );
    let mut empty = source.clone();
    empty.data = None;
    assert_eq!(
        imported_material(&import, "apps", "src", Some(&empty)).unwrap_err(),
        "spec.importKey.secretRef: Secret apps/src has no value under id"
    );
    assert_eq!(
        imported_material(&import, "apps", "src", None).unwrap_err(),
        "spec.importKey.secretRef: Secret apps/src does not exist; create it"
    );
}

#[test]
fn a_key_whose_material_is_unknown_waits_for_it() {
    let o = Observed {
        key: key(json!({})),
        facts: Err("the RPC secret is not readable yet".into()),
    };
    let plan = plan(&o).unwrap();
    assert!(plan.steps.is_empty());
    assert_eq!(
        plan.outcome,
        Outcome::waiting(
            reason::REASON_WAITING_FOR_DEPENDENCY,
            "the RPC secret is not readable yet".into()
        )
    );
    let Publish::Status(status) = &plan.publish else {
        panic!("{:?}", plan.publish);
    };
    assert_eq!(status.phase, Some(KeyPhase::Pending));
}

#[test]
fn a_key_garage_holds_with_another_secret_is_not_taken_over() {
    let o = observed(
        key(json!({})),
        Some(key_info(ID, "k", "other", json!({}))),
        vec![],
        Grants::default(),
        None,
    );
    let plan = plan(&o).unwrap();
    assert!(plan.steps.is_empty());
    let Outcome::Waiting {
        reason: why,
        message,
    } = plan.outcome
    else {
        panic!();
    };
    assert_eq!(why, reason::REASON_GARAGE_API_ERROR);
    assert!(
        message.contains("exists in Garage with another secret"),
        "{message}"
    );
}

#[test]
fn settings_change_only_where_garage_differs() {
    let at = "2030-01-01T00:00:00Z";
    let cases: &[(&str, Value, Value, Option<KeySpec>)] = &[
        ("same", json!({}), json!({}), None),
        (
            "renamed",
            json!({"name": "web"}),
            json!({}),
            Some(KeySpec {
                name: Some("web".into()),
                ..KeySpec::default()
            }),
        ),
        (
            "expiry set",
            json!({"expiresAt": at}),
            json!({}),
            Some(KeySpec {
                expiration: Some(at.into()),
                ..KeySpec::default()
            }),
        ),
        (
            "expiry same",
            json!({"expiresAt": at}),
            json!({"expiration": at}),
            None,
        ),
        (
            "expiry removed",
            json!({"neverExpires": true}),
            json!({"expiration": at}),
            Some(KeySpec {
                never_expires: true,
                ..KeySpec::default()
            }),
        ),
        (
            "may create buckets",
            json!({"permissions": {"createBucket": true}}),
            json!({}),
            Some(KeySpec {
                allow: Some(KeyPermissions {
                    create_bucket: true,
                }),
                ..KeySpec::default()
            }),
        ),
        (
            "may no longer create buckets",
            json!({}),
            json!({"permissions": {"createBucket": true}}),
            Some(KeySpec {
                deny: Some(KeyPermissions {
                    create_bucket: true,
                }),
                ..KeySpec::default()
            }),
        ),
    ];
    for (what, spec, garage, want) in cases {
        let k = key(json!({"spec": spec}));
        assert_eq!(
            settings_update(&k, &in_garage(garage.clone())),
            *want,
            "{what}"
        );
    }
}

#[test]
fn a_permission_declared_through_a_bucket_ref_is_recorded_then_granted() {
    let k = settled(json!({"spec": {"bucketPermissions": [
        {"bucketRef": {"name": "b"}, "read": true, "write": true}
    ]}}));
    let plan = plan_held(
        k,
        in_garage(json!({})),
        vec![bucket_b1(json!({}))],
        Grants::default(),
    );
    assert_eq!(kinds(&plan), ["record", "permission", "read back"]);
    let Step::Record(recorded) = &plan.steps[0] else {
        panic!()
    };
    assert_eq!(recorded.managed_bucket_grants, Some(vec!["b1".into()]));
    assert_eq!(
        plan.steps[1],
        Step::Permission(Change {
            pair: ("b1".into(), ID.into()),
            allow: perms(true, true, false),
            deny: perms(false, false, false),
        })
    );
    assert_eq!(
        plan.publish,
        Publish::Ready(Ready {
            managed: vec!["b1".into()],
            cluster_wide: false,
            secret_name: "k".into(),
        })
    );
}

#[test]
fn a_permission_no_longer_declared_is_revoked_without_a_new_record() {
    let k = settled(json!({"status": {"managedBucketGrants": ["b1"]}}));
    let garage = in_garage(json!({"buckets": [on("b1", [true, false, false])]}));
    let plan = plan_held(k, garage, vec![bucket_b1(json!({}))], Grants::default());
    assert_eq!(kinds(&plan), ["permission", "read back"]);
    assert_eq!(
        plan.steps[0],
        Step::Permission(Change {
            pair: ("b1".into(), ID.into()),
            allow: perms(false, false, false),
            deny: perms(true, false, false),
        })
    );
    let Publish::Ready(ready) = &plan.publish else {
        panic!()
    };
    assert!(ready.managed.is_empty());
}

#[test]
fn a_withdrawn_reference_grant_revokes_the_cross_namespace_permission() {
    let k = settled(json!({
        "spec": {"bucketPermissions": [{"bucketRef": {"name": "b", "namespace": "data"}, "read": true}]},
        "status": {"managedBucketGrants": ["b1"]},
    }));
    let mut b = bucket_b1(json!({"spec": {"clusterRef": {"name": "garage", "namespace": "apps"}}}));
    b.metadata.namespace = Some("data".into());
    let grant: GarageReferenceGrant = serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageReferenceGrant",
        "metadata": {"name": "g", "namespace": "data"},
        "spec": {"from": [{"kind": "GarageKey", "namespace": "apps"}],
                 "to": [{"kind": "GarageBucket"}]},
    }))
    .unwrap();
    let granted = Grants {
        grants: vec![grant],
        ..Grants::default()
    };
    let garage = || in_garage(json!({"buckets": [on("b1", [true, false, false])]}));
    let live = rendered(&k);
    let held = plan(&observed(
        k.clone(),
        Some(garage()),
        vec![b.clone()],
        granted,
        Some(live.clone()),
    ))
    .unwrap();
    assert!(held.steps.is_empty(), "granted: kept {:?}", held.steps);
    let withdrawn = plan(&observed(
        k,
        Some(garage()),
        vec![b],
        Grants::default(),
        Some(live),
    ))
    .unwrap();
    assert_eq!(kinds(&withdrawn), ["permission", "read back"]);
    assert_eq!(
        withdrawn.steps[0],
        Step::Permission(Change {
            pair: ("b1".into(), ID.into()),
            allow: perms(false, false, false),
            deny: perms(true, false, false),
        })
    );
}

#[test]
fn a_cluster_wide_baseline_is_recorded_before_it_reaches_every_bucket() {
    let k = settled(json!({"spec": {"allBuckets": {"read": true}}}));
    let plan = plan_held(k, in_garage(json!({})), vec![], Grants::default());
    assert_eq!(kinds(&plan), ["record", "permission", "read back"]);
    let Step::Record(recorded) = &plan.steps[0] else {
        panic!()
    };
    assert_eq!(recorded.cluster_wide, Some(true));
}

#[test]
fn the_secret_is_replaced_when_its_rendering_changes_and_recreated_when_its_type_does() {
    let k = settled(json!({}));
    let mut stale = rendered(&k);
    stale
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(annotation::ANNOTATION_RENDERED_HASH.into(), "old".into());
    let garage = || Some(in_garage(json!({})));
    let replaced = plan(&observed(
        k.clone(),
        garage(),
        vec![],
        Grants::default(),
        Some(stale.clone()),
    ))
    .unwrap();
    let [Step::Secret(SecretWrite::Replace(s))] = replaced.steps.as_slice() else {
        panic!("{:?}", replaced.steps);
    };
    assert_eq!(s.metadata.resource_version.as_deref(), Some("7"));
    stale.type_ = Some("kubernetes.io/basic-auth".into());
    let recreated = plan(&observed(
        k,
        garage(),
        vec![],
        Grants::default(),
        Some(stale),
    ))
    .unwrap();
    let [Step::Secret(SecretWrite::Recreate(s))] = recreated.steps.as_slice() else {
        panic!("{:?}", recreated.steps);
    };
    assert_eq!(s.metadata.resource_version, None);
}

#[test]
fn a_secret_the_key_does_not_control_is_refused_after_the_garage_steps() {
    let k = key(json!({}));
    let mut foreign = rendered(&k);
    foreign.metadata.owner_references = Some(vec![OwnerReference {
        uid: "someone".into(),
        controller: Some(true),
        ..Default::default()
    }]);
    let plan = plan(&observed(k, None, vec![], Grants::default(), Some(foreign))).unwrap();
    assert_eq!(kinds(&plan), ["import", "foreign secret"]);
}

#[test]
fn a_renamed_secret_goes_once_the_new_one_exists_and_a_replaced_key_last() {
    let k = settled(json!({
        "spec": {"secretTemplate": {"name": "renamed"}},
        "status": {"accessKeyId": "GKold"},
    }));
    let old = rendered(&key(json!({})));
    let mut o = observed(
        k,
        Some(in_garage(json!({}))),
        vec![],
        Grants::default(),
        None,
    );
    if let Ok(f) = &mut o.facts {
        f.old_secret = Some(("k".into(), Some(old)));
    }
    let plan = plan(&o).unwrap();
    assert_eq!(
        kinds(&plan),
        ["create secret", "delete secret", "retire key"]
    );
    assert_eq!(plan.steps[1], Step::DeleteSecret("k".into()));
    assert_eq!(plan.steps[2], Step::RetireKey("GKold".into()));
}

#[test]
fn the_status_follows_garage_and_says_expired_when_garage_does() {
    let k = settled(json!({}));
    let ready = Ready {
        managed: vec!["b1".into()],
        cluster_wide: false,
        secret_name: "k".into(),
    };
    let status = ready_status(
        &k,
        &ready,
        &in_garage(
            json!({"buckets": [on("b2", [true, false, false]), on("b1", [false, true, false])]}),
        ),
    );
    assert_eq!(status.phase, Some(KeyPhase::Ready));
    let ids: Vec<_> = status
        .buckets
        .unwrap()
        .into_iter()
        .map(|b| b.bucket_id.unwrap())
        .collect();
    assert_eq!(ids, ["b1", "b2"], "sorted by bucket ID");
    let c = &status.conditions.unwrap()[0];
    assert_eq!(c.reason, reason::REASON_KEY_READY);
    assert_eq!(
        c.message,
        format!("key {ID} is ready; credentials in Secret k")
    );
    let expired = ready_status(&k, &ready, &in_garage(json!({"expired": true})));
    assert_eq!(expired.phase, Some(KeyPhase::Expired));
    assert_eq!(
        expired.conditions.unwrap()[0].reason,
        reason::REASON_EXPIRED
    );
}

fn deleting(over: Value) -> GarageKey {
    let mut k = settled(over);
    k.metadata.deletion_timestamp = Some(Time("2030-01-01T00:00:00Z".parse().unwrap()));
    k
}

#[test]
fn deletion_revokes_every_grant_then_deletes_the_key_then_its_secret() {
    let k = deleting(json!({}));
    let live = rendered(&k);
    let garage = in_garage(
        json!({"buckets": [on("b1", [true, false, false]), on("b2", [false, false, true])]}),
    );
    let plan = deletion(&ObservedDeletion {
        key: k,
        cluster: Cleanup::Reached {
            id: Some(ID.into()),
            in_garage: Some(garage),
        },
        secrets: vec![("k".into(), Some(live.clone())), ("k".into(), Some(live))],
    });
    assert_eq!(
        plan.steps,
        [
            Step::Revoke(("b1".into(), ID.into())),
            Step::Revoke(("b2".into(), ID.into())),
            Step::DeleteKey(ID.into()),
            Step::DeleteSecret("k".into()),
            Step::RemoveFinalizer,
        ]
    );
    assert_eq!(plan.outcome, Outcome::Finished);
}

#[test]
fn deletion_without_the_cluster_grant_deletes_only_a_provably_own_key() {
    let k = deleting(json!({}));
    let own = Ok(material());
    let other = Ok(Material {
        access_key_id: "GKother".into(),
        secret_access_key: SECRET.into(),
    });
    assert_eq!(deletable(&k, true, None), Some(ID.into()));
    assert_eq!(deletable(&k, false, Some(&own)), Some(ID.into()));
    assert_eq!(deletable(&k, false, Some(&other)), None);
    let mut imported = k.clone();
    imported.spec.import_key = Some(Default::default());
    assert_eq!(deletable(&imported, false, Some(&own)), None);
    let plan = deletion(&ObservedDeletion {
        key: k,
        cluster: Cleanup::Reached {
            id: None,
            in_garage: None,
        },
        secrets: vec![],
    });
    assert_eq!(
        plan.steps,
        [Step::LeaveInGarage(ID.into()), Step::RemoveFinalizer]
    );
}

#[test]
fn deletion_waits_for_a_live_cluster_and_not_for_one_going_away() {
    let unreachable = |cluster_deleting| ObservedDeletion {
        key: deleting(json!({})),
        cluster: Cleanup::Unreachable {
            reason: reason::REASON_CLUSTER_NOT_READY,
            message: "no Ready storage pod".into(),
            cluster_deleting,
        },
        secrets: vec![("k".into(), None)],
    };
    let waits = deletion(&unreachable(false));
    assert!(waits.steps.is_empty());
    assert!(matches!(waits.outcome, Outcome::Waiting { .. }));
    assert_eq!(waits.publish, Publish::Nothing);
    let goes = deletion(&unreachable(true));
    assert_eq!(goes.steps, [Step::RemoveFinalizer]);
    assert_eq!(goes.outcome, Outcome::Finished);
}

#[test]
fn a_deleted_key_without_the_finalizer_is_left_alone() {
    let mut k = deleting(json!({}));
    k.metadata.finalizers = None;
    let plan = deletion(&ObservedDeletion {
        key: k,
        cluster: Cleanup::Gone,
        secrets: vec![],
    });
    assert!(plan.steps.is_empty());
    assert_eq!(plan.outcome, Outcome::Finished);
}
