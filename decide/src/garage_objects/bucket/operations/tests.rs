//! Table tests of the GarageBucket plan and its status: no API server, no Garage.

#![allow(clippy::unwrap_used)]

use garage_api_types::BucketQuotas;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};
use shared_types::garage_key::GarageKey;

use super::*;
use crate::garage_objects::access::{Change, Grants};
use crate::garage_objects::bucket::status::ready_status;
use crate::garage_objects::fixtures::{bucket as bucket_named, bucket_info, key, snapshot};

const ID: &str = "b1";
const WEB: &str = "garage-api.apps.svc:3902";

fn bucket(over: Value) -> GarageBucket {
    bucket_named("b", over)
}

fn reservation() -> String {
    reservation_alias("uid-b")
}

/// A bucket converged in an earlier pass: its ID and alias recorded.
fn settled(over: Value) -> GarageBucket {
    let mut b = bucket(over);
    let s = b.status.get_or_insert_with(Default::default);
    s.bucket_id = Some(ID.into());
    s.managed_global_alias = s.managed_global_alias.clone().or(Some("b".into()));
    s.managed_local_aliases.get_or_insert_with(Vec::new);
    s.managed_key_grants.get_or_insert_with(Vec::new);
    b
}

/// A key `apps/<name>` with access key `id` (none when `None`).
fn key_with(name: &str, id: Option<&str>) -> GarageKey {
    key(name, json!({"status": {"accessKeyId": id}}))
}

/// What a pass over `b` observes, Garage holding `info`, the snapshot holding `keys`.
fn observed(
    b: GarageBucket,
    info: BucketInfo,
    holder: Option<&str>,
    keys: Vec<GarageKey>,
) -> Observed {
    let mut me = b.clone();
    me.status.get_or_insert_with(Default::default).bucket_id = Some(info.id.clone());
    Observed {
        bucket: b,
        identity: Identity::Found(Box::new(Found {
            info,
            alias_holder: holder.map(str::to_owned),
            snapshot: snapshot(keys, vec![me], vec![], Grants::default()),
        })),
        web_endpoint: Some(WEB.into()),
        cluster: cluster(),
    }
}

fn cluster() -> ClusterRef {
    ClusterRef {
        namespace: "apps".into(),
        name: "garage".into(),
        pending_repair: None,
        resource_version: Some("3".into()),
    }
}

fn global(alias: &str) -> BucketAlias {
    BucketAlias::Global {
        bucket_id: ID.into(),
        global_alias: alias.into(),
    }
}

fn local_alias(key_id: &str, alias: &str) -> BucketAlias {
    local(ID, key_id, alias)
}

fn kinds(plan: &Plan) -> Vec<&'static str> {
    plan.steps
        .iter()
        .map(|s| match s {
            Step::Create { .. } => "create",
            Step::Record(_) => "record",
            Step::AddAlias(_) => "add alias",
            Step::RemoveAlias(_) => "remove alias",
            Step::Update { .. } => "update",
            Step::Permission(_) => "permission",
            Step::CleanupUploads { .. } => "cleanup uploads",
            Step::ReadBack(_) => "read back",
            Step::Counts(_) => "counts",
            Step::RequestRepair(_) => "request repair",
            Step::Delete { .. } => "delete",
            Step::LeaveInGarage => "leave in garage",
            Step::RemoveFinalizer => "remove finalizer",
        })
        .collect()
}

fn waiting_on(plan: &Plan) -> (&'static str, &str) {
    match &plan.outcome {
        Outcome::Waiting { reason, message } => (reason, message.as_str()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_new_bucket_is_created_under_its_reservation_its_id_recorded_then_observed_again() {
    let plan = plan(&Observed {
        bucket: bucket(json!({})),
        identity: Identity::New { alias_holder: None },
        web_endpoint: Some(WEB.into()),
        cluster: cluster(),
    });
    let [
        Step::Create {
            reservation: alias,
            record,
        },
    ] = plan.steps.as_slice()
    else {
        panic!("{:?}", plan.steps);
    };
    assert_eq!(*alias, reservation());
    assert_eq!(record.phase, Some(BucketPhase::Creating));
    assert_eq!(plan.publish, Publish::Nothing);
}

#[test]
fn a_new_bucket_whose_alias_names_another_bucket_is_not_created() {
    let plan = plan(&Observed {
        bucket: bucket(json!({})),
        identity: Identity::New {
            alias_holder: Some("other".into()),
        },
        web_endpoint: Some(WEB.into()),
        cluster: cluster(),
    });
    assert!(plan.steps.is_empty());
    let (why, message) = waiting_on(&plan);
    assert_eq!(why, reason::REASON_VALIDATION_FAILED);
    assert!(message.contains("did not create"), "{message}");
    let Publish::Status(status) = &plan.publish else {
        panic!()
    };
    assert_eq!(status.phase, Some(BucketPhase::Failed));
}

#[test]
fn a_bucket_gone_from_garage_is_not_found_with_what_to_do() {
    let missing = |b: GarageBucket| {
        plan(&Observed {
            bucket: b,
            identity: Identity::Missing(ID.into()),
            web_endpoint: Some(WEB.into()),
            cluster: cluster(),
        })
    };
    let by_spec = missing(bucket(json!({"spec": {"bucketId": ID}})));
    assert_eq!(
        waiting_on(&by_spec),
        (
            reason::REASON_NOT_FOUND,
            "spec.bucketId b1 does not exist in Garage; fix it or remove it to create a new bucket"
        )
    );
    let by_status = missing(settled(json!({})));
    assert!(
        waiting_on(&by_status)
            .1
            .contains("deleted from Garage outside the operator")
    );
    let Publish::Status(status) = &by_status.publish else {
        panic!()
    };
    assert_eq!(status.phase, Some(BucketPhase::Pending));
}

#[test]
fn a_created_bucket_gets_its_aliases_each_recorded_before_it_is_added() {
    // The second round of the pass that created it: only the reservation names it.
    let mut b = bucket(json!({"spec": {"localAliases": [{"alias": "mine", "keyRef": "k"}]}}));
    b.status = Some(GarageBucketStatus {
        bucket_id: Some(ID.into()),
        phase: Some(BucketPhase::Creating),
        ..Default::default()
    });
    let info = bucket_info(ID, &[&reservation()], json!({}));
    let plan = plan(&observed(b, info, None, vec![key_with("k", Some("GK1"))]));
    assert_eq!(
        kinds(&plan),
        ["record", "add alias", "remove alias", "record", "add alias"]
    );
    let Step::Record(pending) = &plan.steps[0] else {
        panic!()
    };
    assert_eq!(pending.pending_global_alias.as_deref(), Some("b"));
    assert_eq!(plan.steps[1], Step::AddAlias(global("b")));
    assert_eq!(plan.steps[2], Step::RemoveAlias(global(&reservation())));
    let Step::Record(locals) = &plan.steps[3] else {
        panic!()
    };
    let wanted = vec![LocalAliasStatus {
        alias: Some("mine".into()),
        key_id: Some("GK1".into()),
        key_name: Some("k".into()),
    }];
    assert_eq!(locals.managed_local_aliases.as_ref(), Some(&wanted));
    assert_eq!(locals.managed_global_alias.as_deref(), Some("b"));
    assert_eq!(locals.pending_global_alias, None);
    assert_eq!(plan.steps[4], Step::AddAlias(local_alias("GK1", "mine")));
    let Publish::Ready(Ready { status, .. }) = &plan.publish else {
        panic!()
    };
    assert_eq!(status.global_alias.as_deref(), Some("b"));
    assert_eq!(status.local_aliases.as_ref(), Some(&wanted));
    assert_eq!(plan.outcome, Outcome::Converged);
}

#[test]
fn a_converged_bucket_plans_no_operation() {
    let info = bucket_info(ID, &["b"], json!({}));
    let plan = plan(&observed(settled(json!({})), info, None, vec![]));
    assert!(plan.steps.is_empty(), "{:?}", plan.steps);
    assert_eq!(plan.outcome, Outcome::Converged);
}

#[test]
fn a_cleanup_request_aborts_old_uploads_then_reads_back_and_a_malformed_one_waits() {
    let info = bucket_info(ID, &["b"], json!({}));
    let with = |pairs: Value| settled(json!({"metadata": {"annotations": pairs}}));
    let plan = plan(&observed(
        with(json!({"garage.rajsingh.info/cleanup-mpu": "true",
                    "garage.rajsingh.info/cleanup-mpu-older-than": "2h"})),
        info.clone(),
        None,
        vec![],
    ));
    assert_eq!(kinds(&plan), ["cleanup uploads", "read back"]);
    let Step::CleanupUploads {
        id,
        older_than,
        annotations,
    } = &plan.steps[0]
    else {
        unreachable!()
    };
    assert_eq!((id.as_str(), older_than.as_secs()), (ID, 7200));
    assert_eq!(
        annotations,
        &[
            ("garage.rajsingh.info/cleanup-mpu".into(), "true".into()),
            (
                "garage.rajsingh.info/cleanup-mpu-older-than".into(),
                "2h".into()
            ),
        ]
    );
    assert_eq!(plan.outcome, Outcome::Converged);

    // The age alone asks for nothing.
    let alone = with(json!({"garage.rajsingh.info/cleanup-mpu-older-than": "2h"}));
    assert!(plan_of(alone, info.clone()).steps.is_empty());

    let malformed = plan_of(
        with(json!({"garage.rajsingh.info/cleanup-mpu": "true",
                    "garage.rajsingh.info/cleanup-mpu-older-than": "soon"})),
        info,
    );
    let (why, message) = waiting_on(&malformed);
    assert_eq!(why, reason::REASON_VALIDATION_FAILED);
    assert!(
        message.contains("cleanup-mpu-older-than] \"soon\""),
        "{message}"
    );
    assert!(malformed.steps.is_empty(), "{:?}", malformed.steps);
}

fn plan_of(b: GarageBucket, info: BucketInfo) -> Plan {
    plan(&observed(b, info, None, vec![]))
}

#[test]
fn alias_drift_is_repaired_and_only_the_operators_aliases_removed() {
    // The spec renamed the global alias; a local alias was removed in Garage; another is no
    // longer wanted; an alias someone else added stays.
    let b = settled(json!({
        "spec": {"globalAlias": "new", "localAliases": [{"alias": "mine", "keyRef": "k"}]},
        "status": {"managedGlobalAlias": "old", "managedLocalAliases": [
            {"alias": "mine", "keyId": "GK1", "keyName": "k"},
            {"alias": "gone", "keyId": "GK1", "keyName": "k"},
        ]},
    }));
    let info = bucket_info(
        ID,
        &["old", "theirs"],
        json!({"keys": [{"accessKeyId": "GK1", "name": "k", "bucketLocalAliases": ["gone"],
                         "permissions": {"read": false, "write": false, "owner": false}}]}),
    );
    let plan = plan(&observed(b, info, None, vec![key_with("k", Some("GK1"))]));
    assert_eq!(
        plan.steps[1..],
        [
            Step::AddAlias(global("new")),
            Step::RemoveAlias(global("old")),
            Step::AddAlias(local_alias("GK1", "mine")),
            Step::RemoveAlias(local_alias("GK1", "gone")),
        ]
    );
    assert!(
        matches!(&plan.steps[0], Step::Record(s) if s.pending_global_alias.as_deref() == Some("new"))
    );
}

#[test]
fn a_global_alias_another_bucket_holds_is_refused() {
    let b = settled(json!({"spec": {"globalAlias": "taken"}}));
    let info = bucket_info(ID, &["b"], json!({}));
    let plan = plan(&observed(b, info, Some("other"), vec![]));
    assert!(plan.steps.is_empty());
    assert_eq!(
        waiting_on(&plan),
        (
            reason::REASON_VALIDATION_FAILED,
            "global alias taken already names bucket other; choose another spec.globalAlias"
        )
    );
}

#[test]
fn a_local_alias_of_a_key_without_access_key_waits_after_the_global_alias() {
    let b = settled(
        json!({"spec": {"globalAlias": "new", "localAliases": [{"alias": "a", "keyRef": "k"}]}}),
    );
    let info = bucket_info(ID, &["b"], json!({}));
    let plan = plan(&observed(b, info, None, vec![key_with("k", None)]));
    assert_eq!(kinds(&plan), ["record", "add alias", "remove alias"]);
    assert_eq!(
        waiting_on(&plan),
        (
            reason::REASON_WAITING_FOR_DEPENDENCY,
            "spec.localAliases: GarageKey apps/k has no access key yet"
        )
    );
}

#[test]
fn settings_are_updated_when_they_differ_and_an_invalid_one_fails() {
    let info = || bucket_info(ID, &["b"], json!({}));
    let quota = settled(json!({"spec": {"quotas": {"maxObjects": 5}}}));
    let plan1 = plan(&observed(quota, info(), None, vec![]));
    let [Step::Update { id, update }] = plan1.steps.as_slice() else {
        panic!("{:?}", plan1.steps);
    };
    assert_eq!(id, ID);
    assert_eq!(
        update.quotas,
        Some(BucketQuotas {
            max_size: None,
            max_objects: Some(5)
        })
    );
    let invalid = settled(json!({"spec": {"quotas": {"maxObjects": -1}}}));
    let plan2 = plan(&observed(invalid, info(), None, vec![]));
    assert!(plan2.steps.is_empty());
    let (why, message) = waiting_on(&plan2);
    assert_eq!(why, reason::REASON_VALIDATION_FAILED);
    assert!(message.starts_with("spec.quotas.maxObjects: "), "{message}");
}

#[test]
fn a_declared_key_is_recorded_then_granted_and_a_withdrawn_one_revoked() {
    let perms = |read, write, owner| BucketPermissions { read, write, owner };
    let declares =
        settled(json!({"spec": {"keyPermissions": [{"keyRef": {"name": "k"}, "read": true}]}}));
    let plan1 = plan(&observed(
        declares,
        bucket_info(ID, &["b"], json!({})),
        None,
        vec![key_with("k", Some("GK1")), key_with("pending", None)],
    ));
    assert_eq!(kinds(&plan1), ["record", "permission", "read back"]);
    let Step::Record(recorded) = &plan1.steps[0] else {
        panic!()
    };
    assert_eq!(recorded.managed_key_grants, Some(vec!["GK1".into()]));
    assert_eq!(
        plan1.steps[1],
        Step::Permission(Change {
            pair: (ID.into(), "GK1".into()),
            allow: perms(true, false, false),
            deny: perms(false, false, false),
        })
    );
    // The declaration is gone: the grant the bucket made is revoked, with no new record.
    let withdrawn = settled(json!({"status": {"managedKeyGrants": ["GK1"]}}));
    let held = bucket_info(
        ID,
        &["b"],
        json!({"keys": [{"accessKeyId": "GK1", "name": "k", "bucketLocalAliases": [],
                         "permissions": {"read": true, "write": false, "owner": false}}]}),
    );
    let plan2 = plan(&observed(
        withdrawn,
        held,
        None,
        vec![key_with("k", Some("GK1"))],
    ));
    assert_eq!(kinds(&plan2), ["permission", "read back"]);
    let Publish::Ready(Ready { status, .. }) = &plan2.publish else {
        panic!()
    };
    assert_eq!(status.managed_key_grants, Some(vec![]));
}

fn deleting(over: Value) -> GarageBucket {
    let mut b = settled(over);
    b.metadata.deletion_timestamp = Some(Time("2030-01-01T00:00:00Z".parse().unwrap()));
    b
}

#[test]
fn a_deleted_bucket_that_still_holds_objects_is_kept_with_its_finalizer() {
    let plan = deletion(&ObservedDeletion {
        bucket: deleting(json!({})),
        cluster: Cleanup::Reached { granted: true },
    });
    assert_eq!(kinds(&plan), ["delete", "remove finalizer"]);
    let Step::Delete { id, not_empty } = &plan.steps[0] else {
        panic!()
    };
    assert_eq!(id, ID);
    // Garage refuses a bucket with data: the pass stops before the finalizer goes.
    assert_eq!(not_empty.status.phase, Some(BucketPhase::Deleting));
    assert_eq!(not_empty.status.observed_generation, None);
    let (why, message) = match &not_empty.outcome {
        Outcome::Waiting { reason, message } => (*reason, message.clone()),
        other => panic!("{other:?}"),
    };
    assert_eq!(why, reason::REASON_DELETING);
    assert!(message.contains(finalizers::FINALIZER_BUCKET), "{message}");
    let conditions = not_empty.status.conditions.as_ref().unwrap();
    let of = |t: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == t)
            .map(|c| (c.status.as_str(), c.reason.as_str()))
    };
    assert_eq!(of("Ready"), Some(("False", reason::REASON_DELETING)));
    assert_eq!(
        of("DeletionBlocked"),
        Some(("True", reason::REASON_DELETING))
    );
}

#[test]
fn a_retained_bucket_is_left_in_garage_with_its_objects() {
    let plan = deletion(&ObservedDeletion {
        bucket: deleting(json!({"spec": {"deletionPolicy": "Retain"}})),
        cluster: Cleanup::Reached { granted: true },
    });
    assert_eq!(kinds(&plan), ["leave in garage", "remove finalizer"]);
    let plan = deletion(&ObservedDeletion {
        bucket: deleting(json!({"spec": {"deletionPolicy": "Delete"}})),
        cluster: Cleanup::Reached { granted: true },
    });
    assert_eq!(kinds(&plan), ["delete", "remove finalizer"]);
}

#[test]
fn deletion_leaves_the_bucket_without_a_grant_and_waits_for_a_live_cluster() {
    let cases: &[(&str, Cleanup, &[&str], bool)] = &[
        (
            "grant gone",
            Cleanup::Reached { granted: false },
            &["leave in garage", "remove finalizer"],
            false,
        ),
        ("cluster gone", Cleanup::Gone, &["remove finalizer"], false),
        (
            "cluster unreachable",
            Cleanup::Unreachable {
                reason: reason::REASON_CLUSTER_NOT_READY,
                message: "no pod".into(),
                cluster_deleting: false,
            },
            &[],
            true,
        ),
        (
            "cluster going away",
            Cleanup::Unreachable {
                reason: reason::REASON_CLUSTER_DELETING,
                message: "deleting".into(),
                cluster_deleting: true,
            },
            &["remove finalizer"],
            false,
        ),
    ];
    for (what, cluster, want, waits) in cases {
        let cluster = match cluster {
            Cleanup::Reached { granted } => Cleanup::Reached { granted: *granted },
            Cleanup::Gone => Cleanup::Gone,
            Cleanup::Unreachable {
                reason,
                message,
                cluster_deleting,
            } => Cleanup::Unreachable {
                reason,
                message: message.clone(),
                cluster_deleting: *cluster_deleting,
            },
        };
        let plan = deletion(&ObservedDeletion {
            bucket: deleting(json!({})),
            cluster,
        });
        assert_eq!(kinds(&plan), *want, "{what}");
        assert_eq!(
            matches!(plan.outcome, Outcome::Waiting { .. }),
            *waits,
            "{what}"
        );
    }
    let mut gone = deleting(json!({}));
    gone.metadata.finalizers = None;
    let plan = deletion(&ObservedDeletion {
        bucket: gone,
        cluster: Cleanup::Gone,
    });
    assert!(plan.steps.is_empty());
}

#[test]
fn the_ready_status_reports_usage_website_keys_and_lifecycle() {
    let b =
        settled(json!({"spec": {"lifecycle": {"rules": [{"id": "old", "expirationDays": 3}]}}}));
    let mut decided = b.status.clone().unwrap();
    decided.global_alias = Some("b".into());
    let info = bucket_info(
        ID,
        &["b"],
        json!({
            "websiteAccess": true, "websiteConfig": {"indexDocument": "index.html"},
            "objects": 5, "bytes": 1536, "quotas": {"maxSize": null, "maxObjects": 10},
            "keys": [
                {"accessKeyId": "GK2", "name": "two", "bucketLocalAliases": [],
                 "permissions": {"read": true, "write": false, "owner": false}},
                {"accessKeyId": "GK1", "name": "one", "bucketLocalAliases": [],
                 "permissions": {"read": true, "write": true, "owner": false}},
            ],
        }),
    );
    let status = ready_status(&b, decided, Some(WEB), &info);
    assert_eq!(status.phase, Some(BucketPhase::Ready));
    assert_eq!(
        status.website_url.as_deref(),
        Some("http://b.garage-api.apps.svc:3902")
    );
    assert_eq!(status.size.as_deref(), Some("1.5 KiB"));
    assert_eq!(
        status.quota_usage.as_ref().unwrap().object_percent,
        Some(50)
    );
    let keys: Vec<_> = status
        .keys
        .unwrap()
        .into_iter()
        .map(|k| k.key_id.unwrap())
        .collect();
    assert_eq!(keys, ["GK1", "GK2"], "sorted");
    // This Garage answered without lifecycle rules: it does not keep them.
    let lifecycle = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == shared_types::conditions::bucket::CONDITION_LIFECYCLE_CONFIGURED)
        .unwrap();
    assert_eq!(lifecycle.reason, reason::REASON_APPLY_FAILED);
}

#[test]
fn a_bucket_that_cannot_be_read_is_counted_and_waits_and_a_read_clears_the_count() {
    use shared_types::conditions::bucket as bc;
    use shared_types::keys::annotation::ANNOTATION_BUCKET_DECODE_ERRORS;
    let failing =
        settled(json!({"metadata": {"annotations": {ANNOTATION_BUCKET_DECODE_ERRORS: "2"}}}));
    let failed = plan(&Observed {
        bucket: failing.clone(),
        identity: Identity::Unreadable(LookupFailure::MetadataDecode("HTTP 500".into())),
        web_endpoint: Some(WEB.into()),
        cluster: cluster(),
    });
    assert_eq!(kinds(&failed), ["counts", "request repair"]);
    assert_eq!(waiting_on(&failed).0, reason::REASON_METADATA_DECODE_ERROR);
    let Publish::Status(status) = &failed.publish else {
        panic!("{:?}", failed.publish)
    };
    let mut types: Vec<&str> = status
        .conditions
        .iter()
        .flatten()
        .map(|c| c.type_.as_str())
        .collect();
    types.sort_unstable();
    assert_eq!(types, [bc::CONDITION_BUCKET_METADATA_DEGRADED, "Ready"]);

    // Read again: the count goes first, and the published status drops the condition.
    let mut degraded = failing.clone();
    degraded.status = Some((**status).clone());
    let read = plan(&observed(
        degraded,
        bucket_info(ID, &["b"], json!({})),
        None,
        vec![],
    ));
    assert_eq!(kinds(&read).first(), Some(&"counts"));
    let Publish::Ready(ready) = &read.publish else {
        panic!("{:?}", read.publish)
    };
    let published = ready_status(
        &failing,
        (*ready.status).clone(),
        Some(WEB),
        read.garage.as_ref().unwrap(),
    );
    assert!(
        published
            .conditions
            .iter()
            .flatten()
            .all(|c| c.type_ != bc::CONDITION_BUCKET_METADATA_DEGRADED),
        "{published:?}"
    );
}

#[test]
fn a_bucket_unreadable_past_the_threshold_writes_nothing_but_its_status() {
    use shared_types::keys::annotation::ANNOTATION_BUCKET_LOOKUP_TIMEOUTS;
    let stuck =
        settled(json!({"metadata": {"annotations": {ANNOTATION_BUCKET_LOOKUP_TIMEOUTS: "3"}}}));
    let again = plan(&Observed {
        bucket: stuck,
        identity: Identity::Unreadable(LookupFailure::Timeout("no answer within 10s".into())),
        web_endpoint: Some(WEB.into()),
        cluster: cluster(),
    });
    assert!(again.steps.is_empty(), "{:?}", again.steps);
    assert_eq!(waiting_on(&again).0, reason::REASON_BUCKET_LOOKUP_STUCK);
}
