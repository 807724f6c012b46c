//! The GarageBucket decision: a pure function of what a pass observed ([`Observed`],
//! [`ObservedDeletion`]) giving, in order, the Garage operations of the pass — the bucket
//! created under its reservation alias, its global and local aliases added and removed, its
//! settings ([`super::plan`]) and key grants brought to the spec — with the write-ahead status
//! records the operations need (the new bucket's ID, a global alias about to be added, the
//! local aliases and key grants about to be made: each recorded before the call, so a crash
//! never loses what the operator owns), the status to publish and the [`Outcome`].
//!
//! A bucket that does not exist yet is created and its ID recorded ([`Step::Create`]); the pass
//! then observes it again and plans the rest: the other operations name its ID.

use std::collections::{BTreeMap, BTreeSet};

use garage_api_types::{BucketAlias, BucketInfo, BucketKey, BucketPermissions, BucketUpdate};
use kube::ResourceExt;
use shared_types::conditions::reason;
use shared_types::garage_bucket::{
    BucketDeletionPolicy, BucketPhase, GarageBucket, GarageBucketStatus, LocalAliasStatus,
};
use shared_types::keys::annotation::{ANNOTATION_CLEANUP_MPU, ANNOTATION_CLEANUP_MPU_OLDER_THAN};
use shared_types::keys::finalizer as finalizers;

use super::health::{self, ClusterRef, Count, LookupFailure};
use super::plan as settings;
use super::{reservation_alias, wanted_alias};
use crate::finalizers as finalizer;
use crate::garage_objects::access::{self, Pair};
use crate::garage_objects::outcome::{self, Outcome, Refused};
use crate::garage_objects::{Snapshot, pass, with_ready};

/// What a pass over a live GarageBucket observed.
pub struct Observed {
    /// The bucket, with the status the pass starts from.
    pub bucket: GarageBucket,
    /// The bucket in Garage this object owns.
    pub identity: Identity,
    /// `<api service>.<namespace>.svc:<web port>` of the cluster: where its websites are
    /// served (unknown behind a management handle's Admin API URL).
    pub web_endpoint: Option<String>,
    /// The cluster, as a pass that cannot read the bucket needs it.
    pub cluster: ClusterRef,
}

/// The bucket in Garage this object owns, as Garage reports it.
pub enum Identity {
    /// `spec.bucketId` or the status names this ID and Garage has no such bucket.
    Missing(String),
    /// No bucket is this object's yet. `alias_holder`: the bucket the wanted global alias
    /// already names.
    New {
        /// That bucket's ID.
        alias_holder: Option<String>,
    },
    /// Found, by ID or by its reservation alias.
    Found(Box<Found>),
    /// Garage did not answer the lookup in time, or could not decode the metadata it needs
    /// for it ([`super::health`]).
    Unreadable(LookupFailure),
}

/// A bucket this object owns, and what its pass decides from.
pub struct Found {
    /// The bucket as Garage reports it.
    pub info: BucketInfo,
    /// When the bucket lacks the wanted global alias: the bucket that alias names, if any.
    pub alias_holder: Option<String>,
    /// Every key, bucket and grant, with this bucket holding its ID.
    pub snapshot: Snapshot,
}

/// One operation of a pass, run in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Create the bucket under its reservation alias, then write `record` with the ID Garage
    /// gave it: from there on the object finds its bucket by ID.
    Create {
        /// The reservation alias.
        reservation: String,
        /// The status to record, without the ID.
        record: Box<GarageBucketStatus>,
    },
    /// Write this status (against the one the pass started from): a write-ahead record.
    Record(Box<GarageBucketStatus>),
    /// Add an alias.
    AddAlias(BucketAlias),
    /// Remove an alias.
    RemoveAlias(BucketAlias),
    /// Change quotas, website or lifecycle rules.
    Update {
        /// The bucket ID.
        id: String,
        /// The changes.
        update: BucketUpdate,
    },
    /// Allow and/or deny on one pair.
    Permission(access::Change),
    /// Abort the bucket's unfinished multipart uploads older than `older_than` (the
    /// `cleanup-mpu` request), then remove the request's annotations where they still hold
    /// the values read (a value changed meanwhile is a new request).
    CleanupUploads {
        /// The bucket ID.
        id: String,
        /// The minimum age of an upload to abort.
        older_than: std::time::Duration,
        /// The request's annotations and the values the pass read.
        annotations: Vec<(String, String)>,
    },
    /// Read the bucket back for the status, after permissions changed.
    ReadBack(String),
    /// Move the bucket's failure counters ([`super::health`]) from the values read to the
    /// ones given, onto the resourceVersion the pass read (a bucket changed since is counted
    /// by the next pass).
    Counts(Vec<Count>),
    /// Ask the cluster for a `Tables` repair through its `trigger-repair` annotation, onto the
    /// resourceVersion the pass read: a request that arrived there since is never
    /// overwritten.
    RequestRepair(ClusterRef),
    /// Delete the bucket from Garage (gone already is done). Garage refuses a bucket that
    /// holds data; the pass then ends as `not_empty` says.
    Delete {
        /// The bucket ID.
        id: String,
        /// How the pass ends when the bucket is not empty.
        not_empty: Box<Refused<GarageBucketStatus>>,
    },
    /// Leave the bucket in Garage: nothing proves its ID is this object's own.
    LeaveInGarage,
    /// Remove the finalizer.
    RemoveFinalizer,
}

/// What the status of a converged bucket is made from besides Garage's answer
/// ([`super::status::ready_status`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Ready {
    /// What the pass decided (aliases, managed grants).
    pub status: Box<GarageBucketStatus>,
    /// Where the cluster serves websites, when known.
    pub web_endpoint: Option<String>,
}

/// Everything one pass over a bucket does. A plan with [`Step::Create`] ends there: the pass
/// observes the new bucket again and plans the rest.
pub type Plan = pass::Plan<Step, BucketInfo, GarageBucketStatus, Ready>;

/// The status a bucket's pass publishes.
pub type Publish = pass::Publish<GarageBucketStatus, Ready>;

/// The status of a bucket that waits: `Ready=False` with the reason and message; phase Failed
/// for a spec that cannot work, else Pending.
pub fn waiting_status(
    bucket: &GarageBucket,
    reason: &'static str,
    message: String,
) -> GarageBucketStatus {
    outcome::reported(
        bucket.status.as_ref(),
        bucket.metadata.generation,
        false,
        reason,
        message,
        |s| {
            s.phase = Some(if reason == reason::REASON_VALIDATION_FAILED {
                BucketPhase::Failed
            } else {
                BucketPhase::Pending
            });
        },
    )
}

/// The plan that runs `steps` and then waits, its status saying why.
pub fn waiting(
    bucket: &GarageBucket,
    steps: Vec<Step>,
    reason: &'static str,
    message: String,
) -> Plan {
    let status = waiting_status(bucket, reason, message.clone());
    Plan::ending(
        steps,
        Publish::Status(Box::new(status)),
        Outcome::waiting(reason, message),
    )
}

/// The pass over a live bucket.
pub fn plan(o: &Observed) -> Plan {
    let bucket = &o.bucket;
    let found = match &o.identity {
        Identity::Missing(id) => {
            let message = if bucket.spec.bucket_id.is_some() {
                format!(
                    "spec.bucketId {id} does not exist in Garage; fix it or remove it to create a new bucket"
                )
            } else {
                format!(
                    "bucket {id} was deleted from Garage outside the operator; delete and recreate this GarageBucket to create a new one"
                )
            };
            return waiting(bucket, Vec::new(), reason::REASON_NOT_FOUND, message);
        }
        Identity::New {
            alias_holder: Some(other),
        } => {
            let alias = wanted_alias(bucket);
            return waiting(
                bucket,
                Vec::new(),
                reason::REASON_VALIDATION_FAILED,
                format!(
                    "global alias {alias} already names bucket {other} that this GarageBucket did not create; it is not taken over (set spec.bucketId to adopt it, or choose another spec.globalAlias)"
                ),
            );
        }
        Identity::New { alias_holder: None } => return create(bucket),
        Identity::Unreadable(failure) => return unreadable(bucket, failure, &o.cluster),
        Identity::Found(found) => found,
    };
    let mut info = found.info.clone();
    let mut status = bucket.status.clone().unwrap_or_default();
    status.bucket_id = Some(info.id.clone());
    let mut steps = Vec::new();
    let cleared = health::recovered(bucket);
    if !cleared.is_empty() {
        steps.push(Step::Counts(cleared));
    }
    let blocked = global_alias(
        bucket,
        &mut info,
        found.alias_holder.as_deref(),
        &mut status,
        &mut steps,
    )
    .and_then(|()| local_aliases(bucket, &found.snapshot, &mut info, &mut status, &mut steps));
    let wanted = match blocked {
        Ok(wanted) => wanted,
        Err((why, message)) => return waiting(bucket, steps, why, message),
    };
    status.managed_local_aliases = Some(wanted.clone());
    status.local_aliases = Some(wanted);
    status.global_alias = Some(wanted_alias(bucket));
    match settings::update(&bucket.spec, &info) {
        Err(invalid) => {
            return waiting(
                bucket,
                steps,
                reason::REASON_VALIDATION_FAILED,
                format!("{}: {}", invalid.field, invalid.message),
            );
        }
        Ok(None) => {}
        Ok(Some(update)) => steps.push(Step::Update {
            id: info.id.clone(),
            update,
        }),
    }
    grants(bucket, &found.snapshot, &info, &mut status, &mut steps);
    if let Err(message) = cleanup(bucket, &info.id, &mut steps) {
        return waiting(bucket, steps, reason::REASON_VALIDATION_FAILED, message);
    }
    Plan {
        steps,
        garage: Some(found.info.clone()),
        publish: Publish::Ready(Ready {
            status: Box::new(status),
            web_endpoint: o.web_endpoint.clone(),
        }),
        outcome: Outcome::Converged,
    }
}

/// The `cleanup-mpu` request, when there is one: its step, then a read-back so the status
/// counts the uploads that are left. A malformed request (admission refuses one; it can only
/// predate the webhook) is the message that says what to write instead.
fn cleanup(bucket: &GarageBucket, id: &str, steps: &mut Vec<Step>) -> Result<(), String> {
    let read = |key: &str| bucket.annotations().get(key).map(String::as_str);
    let (request, age) = (ANNOTATION_CLEANUP_MPU, ANNOTATION_CLEANUP_MPU_OLDER_THAN);
    match shared_types::operations::parse_cleanup(read(request), read(age)) {
        None => Ok(()),
        Some(Err((key, form))) => Err(format!(
            "metadata.annotations[{key}] {:?} is not a value the operator can run; write {form}",
            read(key).unwrap_or_default()
        )),
        Some(Ok(older_than)) => {
            let annotations = [request, age]
                .into_iter()
                .filter_map(|k| read(k).map(|v| (k.to_owned(), v.to_owned())))
                .collect();
            steps.push(Step::CleanupUploads {
                id: id.to_owned(),
                older_than,
                annotations,
            });
            steps.push(Step::ReadBack(id.to_owned()));
            Ok(())
        }
    }
}

/// A pass that could not read the bucket: one more failure counted, the health condition
/// once the streak is long enough, a repair asked for when [`health::unreadable`] says so,
/// and a look again after the waiting period.
fn unreadable(bucket: &GarageBucket, failure: &LookupFailure, cluster: &ClusterRef) -> Plan {
    let verdict = health::unreadable(bucket, failure, cluster);
    let mut status = waiting_status(bucket, verdict.reason, verdict.message.clone());
    status.conditions = Some(crate::conditions::merge(
        status.conditions.as_deref(),
        verdict.condition.as_slice(),
        &health::CONDITIONS,
        bucket.metadata.generation,
    ));
    let mut steps = Vec::new();
    if !verdict.counts.is_empty() {
        steps.push(Step::Counts(verdict.counts));
    }
    if verdict.request_repair {
        steps.push(Step::RequestRepair(cluster.clone()));
    }
    Plan::ending(
        steps,
        Publish::Status(Box::new(status)),
        Outcome::waiting(verdict.reason, verdict.message),
    )
}

/// A new bucket: created under its reservation alias, its ID recorded at once.
fn create(bucket: &GarageBucket) -> Plan {
    let mut record = bucket.status.clone().unwrap_or_default();
    record.phase = Some(BucketPhase::Creating);
    let steps = vec![Step::Create {
        reservation: reservation_alias(&bucket.uid().unwrap_or_default()),
        record: Box::new(record),
    }];
    Plan::ending(steps, Publish::Nothing, Outcome::Converged)
}

/// Why a bucket cannot be made ready now: the condition's reason and message.
type Blocked = (&'static str, String);

/// Gives the bucket its global alias (recorded as pending first, so that a crash after the add
/// still knows the alias is ours) and removes the global aliases the operator put there and no
/// longer wants.
fn global_alias(
    bucket: &GarageBucket,
    info: &mut BucketInfo,
    holder: Option<&str>,
    status: &mut GarageBucketStatus,
    steps: &mut Vec<Step>,
) -> Result<(), Blocked> {
    let alias = wanted_alias(bucket);
    let id = info.id.clone();
    if !info.global_aliases.contains(&alias) {
        match holder {
            Some(other) if other != id => {
                return Err((
                    reason::REASON_VALIDATION_FAILED,
                    format!(
                        "global alias {alias} already names bucket {other}; choose another spec.globalAlias"
                    ),
                ));
            }
            Some(_) => {}
            None => {
                status.pending_global_alias = Some(alias.clone());
                steps.push(Step::Record(Box::new(status.clone())));
                steps.push(Step::AddAlias(BucketAlias::Global {
                    bucket_id: id.clone(),
                    global_alias: alias.clone(),
                }));
                info.global_aliases.push(alias.clone());
            }
        }
    }
    let managed_before = status.managed_global_alias.clone();
    status.managed_global_alias = Some(alias.clone());
    status.pending_global_alias = None;
    // Aliases the operator put there and no longer wants: the reservation, and a previous
    // spec.globalAlias. An adopted bucket's other aliases are not the operator's.
    let mut stale: Vec<String> = vec![reservation_alias(&bucket.uid().unwrap_or_default())];
    if let Some(old) = managed_before.filter(|o| *o != alias) {
        stale.push(old);
    }
    for old in stale {
        if info.global_aliases.contains(&old) {
            info.global_aliases.retain(|a| *a != old);
            steps.push(Step::RemoveAlias(BucketAlias::Global {
                bucket_id: id.clone(),
                global_alias: old,
            }));
        }
    }
    Ok(())
}

/// True when key `key_id` has local alias `alias` for the bucket.
fn has_local(info: &BucketInfo, key_id: &str, alias: &str) -> bool {
    info.keys
        .iter()
        .any(|k| k.access_key_id == key_id && k.bucket_local_aliases.iter().any(|a| a == alias))
}

/// Gives the bucket the local aliases of `spec.localAliases` (recorded before they are added)
/// and removes those the operator added and no longer wants. Returns the wanted aliases.
fn local_aliases(
    bucket: &GarageBucket,
    snapshot: &Snapshot,
    info: &mut BucketInfo,
    status: &mut GarageBucketStatus,
    steps: &mut Vec<Step>,
) -> Result<Vec<LocalAliasStatus>, Blocked> {
    let id = info.id.clone();
    // spec.localAliases name keys of this namespace.
    let ns = bucket.namespace().unwrap_or_default();
    let mut wanted: Vec<LocalAliasStatus> = Vec::new();
    for la in bucket.spec.local_aliases.iter().flatten() {
        let key = snapshot
            .keys
            .iter()
            .find(|k| k.namespace().as_deref() == Some(ns.as_str()) && k.name_any() == la.key_ref);
        let Some(key_id) = key.and_then(|k| k.status.as_ref()?.access_key_id.clone()) else {
            return Err((
                reason::REASON_WAITING_FOR_DEPENDENCY,
                format!(
                    "spec.localAliases: GarageKey {ns}/{} has no access key yet",
                    la.key_ref
                ),
            ));
        };
        wanted.push(LocalAliasStatus {
            alias: Some(la.alias.clone()),
            key_id: Some(key_id),
            key_name: Some(la.key_ref.clone()),
        });
    }
    let before = status.managed_local_aliases.clone().unwrap_or_default();
    let mut recorded = before.clone();
    for w in &wanted {
        if !recorded.contains(w) {
            recorded.push(w.clone());
        }
    }
    if recorded != before {
        status.managed_local_aliases = Some(recorded);
        steps.push(Step::Record(Box::new(status.clone())));
    }
    for w in &wanted {
        let (Some(key_id), Some(a)) = (&w.key_id, &w.alias) else {
            continue;
        };
        if !has_local(info, key_id, a) {
            add_local(info, key_id, a);
            steps.push(Step::AddAlias(local(&id, key_id, a)));
        }
    }
    for old in before.iter().filter(|o| !wanted.contains(o)) {
        let (Some(key_id), Some(a)) = (&old.key_id, &old.alias) else {
            continue;
        };
        if has_local(info, key_id, a) {
            for k in info.keys.iter_mut().filter(|k| k.access_key_id == *key_id) {
                k.bucket_local_aliases.retain(|x| x != a);
            }
            steps.push(Step::RemoveAlias(local(&id, key_id, a)));
        }
    }
    Ok(wanted)
}

fn local(bucket_id: &str, key_id: &str, alias: &str) -> BucketAlias {
    BucketAlias::Local {
        bucket_id: bucket_id.to_owned(),
        access_key_id: key_id.to_owned(),
        local_alias: alias.to_owned(),
    }
}

/// `info` as Garage answers once key `key_id` has local alias `alias`.
fn add_local(info: &mut BucketInfo, key_id: &str, alias: &str) {
    match info.keys.iter_mut().find(|k| k.access_key_id == key_id) {
        Some(k) => k.bucket_local_aliases.push(alias.to_owned()),
        None => info.keys.push(BucketKey {
            access_key_id: key_id.to_owned(),
            name: String::new(),
            permissions: BucketPermissions::default(),
            bucket_local_aliases: vec![alias.to_owned()],
        }),
    }
}

/// The steps that bring every pair this bucket acts on to its declared permission, the keys it
/// manages recorded first when that record grows.
fn grants(
    bucket: &GarageBucket,
    snapshot: &Snapshot,
    info: &BucketInfo,
    status: &mut GarageBucketStatus,
    steps: &mut Vec<Step>,
) {
    let mut me = bucket.clone();
    me.status.get_or_insert_with(Default::default).bucket_id = Some(info.id.clone());
    let view = snapshot.view();
    let own: BTreeSet<String> = view.bucket_declares(&me).into_keys().collect();
    let was: BTreeSet<String> = status
        .managed_key_grants
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let scope: BTreeSet<Pair> = own
        .union(&was)
        .map(|k| (info.id.clone(), k.clone()))
        .collect();
    let current: BTreeMap<Pair, BucketPermissions> = info
        .keys
        .iter()
        .map(|k| ((info.id.clone(), k.access_key_id.clone()), k.permissions))
        .collect();
    // Only keys Garage has can be changed; a managed key deleted since has nothing to revoke.
    let changes: Vec<access::Change> = access::changes(&scope, &current, |p| view.declared(p))
        .into_iter()
        .filter(|c| {
            c.allow == BucketPermissions::default()
                || snapshot.keys.iter().any(|k| {
                    k.status.as_ref().and_then(|s| s.access_key_id.as_deref())
                        == Some(c.pair.1.as_str())
                })
        })
        .collect();
    let recorded: Vec<String> = was.union(&own).cloned().collect();
    if !changes.is_empty() && recorded != status.managed_key_grants.clone().unwrap_or_default() {
        status.managed_key_grants = Some(recorded);
        steps.push(Step::Record(Box::new(status.clone())));
    }
    let changed = !changes.is_empty();
    steps.extend(changes.into_iter().map(Step::Permission));
    status.managed_key_grants = Some(own.into_iter().collect());
    if changed {
        steps.push(Step::ReadBack(info.id.clone()));
    }
}

/// What a pass over a deleted GarageBucket observed.
pub struct ObservedDeletion {
    /// The bucket.
    pub bucket: GarageBucket,
    /// Its cluster.
    pub cluster: Cleanup,
}

/// The cluster of a deleted bucket, as far as cleaning up in Garage goes.
pub enum Cleanup {
    /// It answers.
    Reached {
        /// The reference to it is still granted: the bucket ID in the status is this
        /// object's own.
        granted: bool,
    },
    /// The cluster object does not exist: nothing left to clean in Garage.
    Gone,
    /// It cannot be reached now.
    Unreachable {
        /// The condition reason of why.
        reason: &'static str,
        /// Why.
        message: String,
        /// The cluster is being deleted or gone: its Garage goes with it.
        cluster_deleting: bool,
    },
}

/// Deletion: the bucket is deleted from Garage only when empty; a non-empty one keeps the
/// finalizer and says what to do (`DeletionBlocked`). `deletionPolicy: Retain` leaves it in
/// Garage. A cluster that no longer exists has nothing left to clean.
pub fn deletion(o: &ObservedDeletion) -> Plan {
    let bucket = &o.bucket;
    let mut steps = Vec::new();
    if !finalizer::has(bucket, finalizers::FINALIZER_BUCKET) {
        return Plan::ending(steps, Publish::Nothing, Outcome::Finished);
    }
    let id = bucket.status.as_ref().and_then(|s| s.bucket_id.clone());
    match &o.cluster {
        // Nothing proves a bucket ID in the status is this object's own once the grant that
        // let it in is gone; the bucket is left in Garage.
        Cleanup::Reached { granted: false } => steps.push(Step::LeaveInGarage),
        Cleanup::Reached { granted: true }
            if bucket.spec.deletion_policy == Some(BucketDeletionPolicy::Retain) =>
        {
            steps.push(Step::LeaveInGarage);
        }
        Cleanup::Reached { granted: true } => {
            if let Some(id) = id {
                steps.push(Step::Delete {
                    not_empty: Box::new(not_empty(bucket, &id)),
                    id,
                });
            }
        }
        Cleanup::Gone => {}
        Cleanup::Unreachable {
            reason,
            message,
            cluster_deleting: false,
        } => {
            return Plan::ending(
                steps,
                Publish::Nothing,
                Outcome::waiting(reason, message.clone()),
            );
        }
        Cleanup::Unreachable { .. } => {}
    }
    steps.push(Step::RemoveFinalizer);
    Plan::ending(steps, Publish::Nothing, Outcome::Finished)
}

/// A bucket that still holds data is never deleted: it keeps the finalizer, phase Deleting,
/// and says what to do.
fn not_empty(bucket: &GarageBucket, id: &str) -> Refused<GarageBucketStatus> {
    let mut status = bucket.status.clone().unwrap_or_default();
    status.phase = Some(BucketPhase::Deleting);
    let message = format!(
        "bucket {id} still holds objects or unfinished uploads and is never deleted with data in it; empty it (the object is removed once it is empty), or remove the finalizer {} to keep the bucket in Garage",
        finalizers::FINALIZER_BUCKET
    );
    let conditions = with_ready(
        status.conditions.as_deref(),
        false,
        reason::REASON_DELETING,
        message.clone(),
        bucket.metadata.generation,
    );
    status.conditions = Some(crate::conditions::merge(
        Some(&conditions),
        &[crate::conditions::Desired {
            type_: shared_types::conditions::bucket::CONDITION_DELETION_BLOCKED,
            status: true,
            reason: reason::REASON_DELETING,
            message: message.clone(),
        }],
        &[],
        bucket.metadata.generation,
    ));
    Refused {
        status,
        outcome: Outcome::waiting(reason::REASON_DELETING, message),
    }
}

#[cfg(test)]
mod tests;
