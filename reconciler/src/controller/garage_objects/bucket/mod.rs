//! The GarageBucket controller: the bucket in Garage, found or created
//! crash-safely through a reservation alias bound to the object's UID, its global and local
//! aliases, quotas, website and lifecycle rules, and the key grants it declares (see
//! [`super::access`]). A bucket is deleted with its object only when it is empty.

pub mod plan;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::conditions::common::CONDITION_READY;
use shared_types::conditions::{bucket as bucket_conditions, reason};
use shared_types::garage_bucket::{
    BucketKeyStatus, BucketPhase, GarageBucket, GarageBucketStatus, KeyPermissions,
    LifecycleRuleState, LifecycleRuleStatus, LocalAliasStatus, QuotaUsage, WebsiteStatus,
};
use shared_types::garage_reference_grant::GrantFromKind;
use shared_types::keys::finalizer as finalizers;

use super::access::{self, Pair};
use super::reach::{Reach, Target, reach};
use super::{Stores, WAITING, patch_status_if_changed, timestamp};
use crate::controller::conditions::{self, Desired};
use crate::controller::{Context, Error, finalizer};
use crate::garage::{
    BucketAlias, BucketInfo, BucketLookup, BucketPermissions, CreateBucket, GarageError,
};

/// Controller name (metrics, logs).
pub const CONTROLLER: &str = "garagebucket";

/// The global alias that marks a bucket as created for exactly this object: found again after
/// a crash between the create and the status write, and never mistaken for someone else's.
pub fn reservation_alias(uid: &str) -> String {
    format!(
        "garage-rsv-{}",
        &crate::names::sha256_hex(uid.as_bytes())[..16]
    )
}

/// The global alias the spec asks for (the object's name when it names none).
pub fn wanted_alias(b: &GarageBucket) -> String {
    b.spec
        .global_alias
        .clone()
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| b.name_any())
}

/// Why a bucket cannot be made ready now.
struct Blocked {
    reason: &'static str,
    message: String,
}

fn blocked(reason: &'static str, message: String) -> Blocked {
    Blocked { reason, message }
}

/// One pass over a GarageBucket.
pub async fn reconcile(
    bucket: Arc<GarageBucket>,
    ctx: Arc<Context>,
    stores: Arc<Stores>,
) -> Result<Action, Error> {
    stores.ready().await;
    let ns = bucket.namespace().unwrap_or_default();
    let api: Api<GarageBucket> = Api::namespaced(ctx.client.clone(), &ns);
    if bucket.metadata.deletion_timestamp.is_some() {
        return finalize(&bucket, &ctx, &api).await;
    }
    let target = match reach(
        &ctx,
        GrantFromKind::GarageBucket,
        &ns,
        &bucket.spec.cluster_ref,
        false,
    )
    .await?
    {
        Reach::Ready(t) => t,
        Reach::HandsOff(action) => return Ok(action),
        Reach::Gone => {
            let message = format!(
                "GarageCluster {} does not exist; create it or fix spec.clusterRef",
                bucket.spec.cluster_ref.name
            );
            return waiting(
                &api,
                &ctx,
                &bucket,
                reason::REASON_CLUSTER_NOT_READY,
                message,
            )
            .await;
        }
        Reach::Waiting { reason, message } => {
            return waiting(&api, &ctx, &bucket, reason, message).await;
        }
    };
    // Only now, with the cluster reached and managed by this install: a foreign install adds
    // nothing to an object whose clean-up is another install's.
    finalizer::set(
        &api,
        &ctx.metrics,
        &bucket,
        finalizers::FINALIZER_BUCKET,
        true,
    )
    .await?;
    match converge(&api, &ctx, &stores, &bucket, &target).await? {
        Ok(()) => Ok(Action::requeue(super::drift_check(
            ctx.config.drift_resync,
            bucket.metadata.uid.as_deref(),
        ))),
        Err(b) => waiting(&api, &ctx, &bucket, b.reason, b.message).await,
    }
}

async fn converge(
    api: &Api<GarageBucket>,
    ctx: &Context,
    stores: &Stores,
    bucket: &GarageBucket,
    target: &Target,
) -> Result<Result<(), Blocked>, Error> {
    let info = match identity(api, ctx, bucket, target).await? {
        Ok(info) => info,
        Err(b) => return Ok(Err(b)),
    };
    let id = info.id.clone();
    let mut status = bucket.status.clone().unwrap_or_default();
    status.bucket_id = Some(id.clone());
    let info = match aliases(api, ctx, stores, bucket, target, info, &mut status).await? {
        Ok(info) => info,
        Err(b) => return Ok(Err(b)),
    };
    let info = match plan::update(&bucket.spec, &info) {
        Err(invalid) => {
            return Ok(Err(blocked(
                reason::REASON_VALIDATION_FAILED,
                format!("{}: {}", invalid.field, invalid.message),
            )));
        }
        Ok(None) => info,
        Ok(Some(update)) => {
            ctx.metrics.wrote();
            target.admin.update_bucket(&id, &update).await?
        }
    };
    let info = grants(api, ctx, stores, bucket, target, info, &mut status).await?;
    finish(api, ctx, bucket, target, &info, status).await?;
    Ok(Ok(()))
}

/// Finds the bucket this object owns, or creates it; the error text says why neither is
/// possible.
async fn identity(
    api: &Api<GarageBucket>,
    ctx: &Context,
    bucket: &GarageBucket,
    target: &Target,
) -> Result<Result<BucketInfo, Blocked>, Error> {
    let admin = &target.admin;
    let known = bucket
        .spec
        .bucket_id
        .clone()
        .filter(|s| !s.is_empty())
        .or_else(|| bucket.status.as_ref().and_then(|s| s.bucket_id.clone()));
    if let Some(id) = known {
        return Ok(match admin.bucket_info(BucketLookup::Id(&id)).await {
            Ok(info) => Ok(info),
            Err(e) if e.is_not_found() => Err(blocked(
                reason::REASON_NOT_FOUND,
                if bucket.spec.bucket_id.is_some() {
                    format!(
                        "spec.bucketId {id} does not exist in Garage; fix it or remove it to create a new bucket"
                    )
                } else {
                    format!(
                        "bucket {id} was deleted from Garage outside the operator; delete and recreate this GarageBucket to create a new one"
                    )
                },
            )),
            Err(e) => return Err(e.into()),
        });
    }
    let uid = bucket.uid().unwrap_or_default();
    let reservation = reservation_alias(&uid);
    match admin
        .bucket_info(BucketLookup::GlobalAlias(&reservation))
        .await
    {
        Ok(info) => return Ok(Ok(info)),
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e.into()),
    }
    let alias = wanted_alias(bucket);
    match admin.bucket_info(BucketLookup::GlobalAlias(&alias)).await {
        Ok(other) => {
            return Ok(Err(blocked(
                reason::REASON_VALIDATION_FAILED,
                format!(
                    "global alias {alias} already names bucket {} that this GarageBucket did not create; it is not taken over (set spec.bucketId to adopt it, or choose another spec.globalAlias)",
                    other.id
                ),
            )));
        }
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e.into()),
    }
    ctx.metrics.wrote();
    let created = admin
        .create_bucket(&CreateBucket {
            global_alias: Some(reservation.clone()),
            local_alias: None,
        })
        .await?;
    tracing::info!(bucket = %bucket.name_any(), id = %created.id, "bucket created in Garage");
    // The ID is recorded at once: from here on the object finds its bucket by ID.
    let mut status = bucket.status.clone().unwrap_or_default();
    status.bucket_id = Some(created.id.clone());
    status.phase = Some(BucketPhase::Creating);
    patch_status_if_changed(api, ctx, bucket, bucket.status.as_ref(), &status).await?;
    Ok(Ok(created))
}

/// Global and local aliases: the wanted ones added, the ones the operator added before and no
/// longer wants removed, the reservation dropped once a real alias names the bucket.
async fn aliases(
    api: &Api<GarageBucket>,
    ctx: &Context,
    stores: &Stores,
    bucket: &GarageBucket,
    target: &Target,
    info: BucketInfo,
    status: &mut GarageBucketStatus,
) -> Result<Result<BucketInfo, Blocked>, Error> {
    let alias = wanted_alias(bucket);
    let info = match global_alias(api, ctx, bucket, target, info, &alias, status).await? {
        Ok(info) => info,
        Err(blocked) => return Ok(Err(blocked)),
    };
    let (info, wanted) = match local_aliases(api, ctx, stores, bucket, target, info, status).await?
    {
        Ok(done) => done,
        Err(blocked) => return Ok(Err(blocked)),
    };
    status.managed_local_aliases = Some(wanted.clone());
    status.local_aliases = Some(wanted);
    status.global_alias = Some(alias);
    Ok(Ok(info))
}

/// Gives the bucket its global alias `alias` (recorded as pending first) and removes the
/// global aliases the operator put there and no longer wants.
async fn global_alias(
    api: &Api<GarageBucket>,
    ctx: &Context,
    bucket: &GarageBucket,
    target: &Target,
    mut info: BucketInfo,
    alias: &str,
    status: &mut GarageBucketStatus,
) -> Result<Result<BucketInfo, Blocked>, Error> {
    let admin = &target.admin;
    let id = info.id.clone();
    if !info.global_aliases.iter().any(|a| a == alias) {
        match admin.bucket_info(BucketLookup::GlobalAlias(alias)).await {
            Ok(other) if other.id != id => {
                return Ok(Err(blocked(
                    reason::REASON_VALIDATION_FAILED,
                    format!(
                        "global alias {alias} already names bucket {}; choose another spec.globalAlias",
                        other.id
                    ),
                )));
            }
            Ok(_) => {}
            Err(e) if e.is_not_found() => {
                // Recorded first, so that a crash after the add still knows the alias is ours.
                status.pending_global_alias = Some(alias.to_owned());
                patch_status_if_changed(api, ctx, bucket, bucket.status.as_ref(), status).await?;
                ctx.metrics.wrote();
                info = admin
                    .add_bucket_alias(&BucketAlias::Global {
                        bucket_id: id.clone(),
                        global_alias: alias.to_owned(),
                    })
                    .await?;
            }
            Err(e) => return Err(e.into()),
        }
    }
    let managed_before = status.managed_global_alias.clone();
    status.managed_global_alias = Some(alias.to_owned());
    status.pending_global_alias = None;
    // Aliases the operator put there and no longer wants: the reservation, and a previous
    // spec.globalAlias. An adopted bucket's other aliases are not the operator's.
    let reservation = reservation_alias(&bucket.uid().unwrap_or_default());
    let mut stale: Vec<String> = vec![reservation];
    if let Some(old) = managed_before.filter(|o| o != alias) {
        stale.push(old);
    }
    for old in stale {
        if info.global_aliases.contains(&old) {
            ctx.metrics.wrote();
            info = admin
                .remove_bucket_alias(&BucketAlias::Global {
                    bucket_id: id.clone(),
                    global_alias: old,
                })
                .await?;
        }
    }
    Ok(Ok(info))
}

/// Gives the bucket the local aliases of `spec.localAliases` (recorded before they are
/// added) and removes those the operator added and no longer wants. Returns the bucket and
/// the aliases it now has.
async fn local_aliases(
    api: &Api<GarageBucket>,
    ctx: &Context,
    stores: &Stores,
    bucket: &GarageBucket,
    target: &Target,
    mut info: BucketInfo,
    status: &mut GarageBucketStatus,
) -> Result<Result<(BucketInfo, Vec<LocalAliasStatus>), Blocked>, Error> {
    let admin = &target.admin;
    let id = info.id.clone();
    // spec.localAliases name keys of this namespace.
    let ns = bucket.namespace().unwrap_or_default();
    let keys = stores.all_keys();
    let mut wanted: Vec<LocalAliasStatus> = Vec::new();
    for la in bucket.spec.local_aliases.iter().flatten() {
        let key = keys
            .iter()
            .find(|k| k.namespace().as_deref() == Some(ns.as_str()) && k.name_any() == la.key_ref);
        let Some(key_id) = key.and_then(|k| k.status.as_ref()?.access_key_id.clone()) else {
            return Ok(Err(blocked(
                reason::REASON_WAITING_FOR_DEPENDENCY,
                format!(
                    "spec.localAliases: GarageKey {ns}/{} has no access key yet",
                    la.key_ref
                ),
            )));
        };
        wanted.push(LocalAliasStatus {
            alias: Some(la.alias.clone()),
            key_id: Some(key_id),
            key_name: Some(la.key_ref.clone()),
        });
    }
    let has_local = |info: &BucketInfo, key_id: &str, alias: &str| {
        info.keys
            .iter()
            .any(|k| k.access_key_id == key_id && k.bucket_local_aliases.iter().any(|a| a == alias))
    };
    let before = status.managed_local_aliases.clone().unwrap_or_default();
    let mut recorded = before.clone();
    for w in &wanted {
        if !recorded.contains(w) {
            recorded.push(w.clone());
        }
    }
    if recorded != before {
        status.managed_local_aliases = Some(recorded);
        patch_status_if_changed(api, ctx, bucket, bucket.status.as_ref(), status).await?;
    }
    for w in &wanted {
        let (Some(key_id), Some(a)) = (&w.key_id, &w.alias) else {
            continue;
        };
        if !has_local(&info, key_id, a) {
            ctx.metrics.wrote();
            info = admin
                .add_bucket_alias(&BucketAlias::Local {
                    bucket_id: id.clone(),
                    access_key_id: key_id.clone(),
                    local_alias: a.clone(),
                })
                .await?;
        }
    }
    for old in before.iter().filter(|o| !wanted.contains(o)) {
        let (Some(key_id), Some(a)) = (&old.key_id, &old.alias) else {
            continue;
        };
        if has_local(&info, key_id, a) {
            ctx.metrics.wrote();
            info = admin
                .remove_bucket_alias(&BucketAlias::Local {
                    bucket_id: id.clone(),
                    access_key_id: key_id.clone(),
                    local_alias: a.clone(),
                })
                .await?;
        }
    }
    Ok(Ok((info, wanted)))
}

/// Brings every pair this bucket acts on to its declared permission.
async fn grants(
    api: &Api<GarageBucket>,
    ctx: &Context,
    stores: &Stores,
    bucket: &GarageBucket,
    target: &Target,
    info: BucketInfo,
    status: &mut GarageBucketStatus,
) -> Result<BucketInfo, Error> {
    let mut me = bucket.clone();
    me.status.get_or_insert_with(Default::default).bucket_id = Some(info.id.clone());
    let snapshot = stores
        .snapshot(ctx, target, super::Me::Bucket(me.clone()))
        .await?;
    let view = snapshot.view();
    let keys = &snapshot.keys;
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
                || keys.iter().any(|k| {
                    k.status.as_ref().and_then(|s| s.access_key_id.as_deref())
                        == Some(c.pair.1.as_str())
                })
        })
        .collect();
    let recorded: Vec<String> = was.union(&own).cloned().collect();
    if !changes.is_empty() && recorded != status.managed_key_grants.clone().unwrap_or_default() {
        status.managed_key_grants = Some(recorded);
        patch_status_if_changed(api, ctx, bucket, bucket.status.as_ref(), status).await?;
    }
    for c in &changes {
        super::key::act::apply_change(ctx, Some(target), c).await?;
    }
    status.managed_key_grants = Some(own.into_iter().collect());
    if changes.is_empty() {
        Ok(info)
    } else {
        Ok(target.admin.bucket_info(BucketLookup::Id(&info.id)).await?)
    }
}

/// The status of a converged bucket.
async fn finish(
    api: &Api<GarageBucket>,
    ctx: &Context,
    bucket: &GarageBucket,
    target: &Target,
    info: &BucketInfo,
    mut status: GarageBucketStatus,
) -> Result<(), Error> {
    let generation = bucket.metadata.generation;
    let lifecycle_set = bucket.spec.lifecycle.is_some();
    let mut desired = vec![Desired {
        type_: CONDITION_READY,
        status: true,
        reason: reason::REASON_BUCKET_READY,
        message: format!("bucket {} is ready", info.id),
    }];
    if lifecycle_set {
        desired.push(Desired {
            type_: bucket_conditions::CONDITION_LIFECYCLE_CONFIGURED,
            status: info.lifecycle_rules.is_some(),
            reason: if info.lifecycle_rules.is_some() {
                reason::REASON_APPLIED
            } else {
                reason::REASON_APPLY_FAILED
            },
            message: if info.lifecycle_rules.is_some() {
                "the lifecycle rules are in place".into()
            } else {
                "this Garage version does not keep lifecycle rules through its Admin API; upgrade Garage".into()
            },
        });
    }
    status.conditions = Some(conditions::merge(
        status.conditions.as_deref(),
        &desired,
        &[
            CONDITION_READY,
            bucket_conditions::CONDITION_LIFECYCLE_CONFIGURED,
        ],
        generation,
    ));
    status.phase = Some(BucketPhase::Ready);
    status.observed_generation = generation;
    status.created_at = timestamp(&info.created).map(Time);
    status.website_enabled = Some(info.website_access);
    status.website_config = info.website_config.as_ref().map(|c| WebsiteStatus {
        index_document: Some(c.index_document.clone()),
        error_document: c.error_document.clone(),
    });
    status.website_url = info.website_access.then(|| {
        let s = &target.settings;
        format!(
            "http://{}.{}.{}.svc:{}",
            status.global_alias.clone().unwrap_or_default(),
            crate::names::api_service(&s.name),
            s.namespace,
            s.web_port.unwrap_or(3902)
        )
    });
    status.incomplete_uploads = Some(info.unfinished_multipart_uploads);
    status.incomplete_upload_parts = Some(info.unfinished_multipart_upload_parts);
    status.incomplete_upload_bytes = Some(info.unfinished_multipart_upload_bytes);
    status.size = Some(human_bytes(info.bytes));
    let limit_size = info.quotas.max_size.and_then(|v| i64::try_from(v).ok());
    let limit_objects = info.quotas.max_objects.and_then(|v| i64::try_from(v).ok());
    let percent = |used: i64, limit: Option<i64>| {
        limit
            .filter(|l| *l > 0)
            .map(|l| i32::try_from(used.saturating_mul(100) / l).unwrap_or(i32::MAX))
    };
    status.quota_usage = Some(QuotaUsage {
        object_count: Some(info.objects),
        object_limit: limit_objects,
        object_percent: percent(info.objects, limit_objects),
        size_bytes: Some(info.bytes),
        size_limit: limit_size,
        size_percent: percent(info.bytes, limit_size),
    });
    // Sorted: Garage lists keys in no stable order.
    let mut keys: Vec<_> = info.keys.iter().collect();
    keys.sort_by(|a, b| a.access_key_id.cmp(&b.access_key_id));
    status.keys = Some(
        keys.into_iter()
            .map(|k| BucketKeyStatus {
                key_id: Some(k.access_key_id.clone()),
                name: Some(k.name.clone()),
                permissions: Some(KeyPermissions {
                    read: Some(k.permissions.read),
                    write: Some(k.permissions.write),
                    owner: Some(k.permissions.owner),
                }),
            })
            .collect(),
    );
    status.lifecycle_rules = bucket.spec.lifecycle.as_ref().map(|l| {
        l.rules
            .iter()
            .flatten()
            .map(|r| LifecycleRuleStatus {
                id: Some(r.id.clone()),
                status: Some(r.status.unwrap_or(LifecycleRuleState::Enabled)),
            })
            .collect()
    });
    patch_status_if_changed(api, ctx, bucket, bucket.status.as_ref(), &status).await
}

/// `1.5 GiB`-style size for the printer column.
fn human_bytes(n: i64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// Reports why the bucket cannot be made ready now and looks again soon.
async fn waiting(
    api: &Api<GarageBucket>,
    ctx: &Context,
    bucket: &GarageBucket,
    why: &'static str,
    message: String,
) -> Result<Action, Error> {
    let current = bucket.status.as_ref();
    super::report(api, ctx, bucket, current, false, why, message, |s| {
        s.phase = Some(if why == reason::REASON_VALIDATION_FAILED {
            BucketPhase::Failed
        } else {
            BucketPhase::Pending
        });
    })
    .await?;
    Ok(Action::requeue(WAITING))
}

/// Deletion: the bucket is deleted from Garage only when empty; a non-empty one keeps the
/// finalizer and says what to do. A cluster that no longer exists has nothing left to clean.
async fn finalize(
    bucket: &GarageBucket,
    ctx: &Context,
    api: &Api<GarageBucket>,
) -> Result<Action, Error> {
    if !finalizer::has(bucket, finalizers::FINALIZER_BUCKET) {
        return Ok(Action::await_change());
    }
    let ns = bucket.namespace().unwrap_or_default();
    let id = bucket.status.as_ref().and_then(|s| s.bucket_id.clone());
    match reach(
        ctx,
        GrantFromKind::GarageBucket,
        &ns,
        &bucket.spec.cluster_ref,
        true,
    )
    .await?
    {
        Reach::Ready(target) => {
            if !target.granted {
                // Nothing proves a bucket ID in the status is this object's own once the grant
                // that let it in is gone; the bucket is left in Garage.
                tracing::warn!(bucket = %bucket.name_any(), "the cluster grant is gone; the bucket is left in Garage");
            } else if let Some(id) = id {
                ctx.metrics.wrote();
                match target.admin.delete_bucket(&id).await {
                    Ok(()) => {
                        tracing::info!(bucket = %bucket.name_any(), id, "bucket deleted from Garage");
                    }
                    Err(e) if e.is_not_found() => {}
                    Err(GarageError::BucketNotEmpty { .. }) => {
                        let mut status = bucket.status.clone().unwrap_or_default();
                        status.phase = Some(BucketPhase::Deleting);
                        let message = format!(
                            "bucket {id} still holds objects or unfinished uploads and is never deleted with data in it; empty it (the object is removed once it is empty), or remove the finalizer {} to keep the bucket in Garage",
                            finalizers::FINALIZER_BUCKET
                        );
                        status.conditions = Some(super::with_ready(
                            status.conditions.as_deref(),
                            false,
                            reason::REASON_DELETING,
                            message,
                            bucket.metadata.generation,
                        ));
                        patch_status_if_changed(api, ctx, bucket, bucket.status.as_ref(), &status)
                            .await?;
                        return Ok(Action::requeue(WAITING));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Reach::Gone => {}
        // The managing install finalizes it; removing the finalizer here would let the
        // object go before that install has cleaned up in Garage.
        Reach::HandsOff(action) => return Ok(action),
        Reach::Waiting { message, .. } => {
            if !super::cluster_deleting(ctx, &ns, &bucket.spec.cluster_ref).await? {
                tracing::info!(bucket = %bucket.name_any(), message, "deletion waits for the cluster");
                return Ok(Action::requeue(WAITING));
            }
        }
    }
    finalizer::set(
        api,
        &ctx.metrics,
        bucket,
        finalizers::FINALIZER_BUCKET,
        false,
    )
    .await?;
    Ok(Action::await_change())
}
