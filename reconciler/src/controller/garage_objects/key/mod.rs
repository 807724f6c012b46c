//! The GarageKey controller: an S3 key in Garage with the material
//! derived from a cluster secret ([`derivation`]) or imported, its key-wide settings, its bucket
//! grants (see [`super::access`]) and its credentials Secret; on deletion every grant is
//! revoked and the key deleted from Garage before the finalizer goes.

pub mod derivation;
pub mod material;
pub mod secret;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::common::{KeyPhase, SecretReference};
use shared_types::conditions::common::CONDITION_READY;
use shared_types::conditions::reason;
use shared_types::garage_key::{GarageKey, GarageKeyStatus, KeyBucketStatus, KeyCapabilities};
use shared_types::garage_reference_grant::GrantFromKind;
use shared_types::keys::{annotation, finalizer as finalizers};

use self::derivation::Access;
use self::material::Material;
use super::access::{self, Pair};
use super::reach::{Reach, Target, reach};
use super::{Stores, WAITING, patch_status_if_changed, timestamp};
use crate::controller::conditions::{self, Desired};
use crate::controller::{Context, Error, finalizer, write};
use crate::desired::is_controlled_by;
use crate::garage::{BucketPermissions, GarageError, KeyInfo, KeyPermissions, KeySpec, Lookup};

/// Controller name (metrics, logs).
pub const CONTROLLER: &str = "garagekey";

/// One pass over a GarageKey.
pub async fn reconcile(
    key: Arc<GarageKey>,
    ctx: Arc<Context>,
    stores: Arc<Stores>,
) -> Result<Action, Error> {
    stores.ready().await;
    let ns = key.namespace().unwrap_or_default();
    let api: Api<GarageKey> = Api::namespaced(ctx.client.clone(), &ns);
    if key.metadata.deletion_timestamp.is_some() {
        return finalize(&key, &ctx, &api).await;
    }
    let target = match reach(
        &ctx,
        GrantFromKind::GarageKey,
        &ns,
        &key.spec.cluster_ref,
        false,
    )
    .await?
    {
        Reach::Ready(t) => t,
        Reach::HandsOff(action) => return Ok(action),
        Reach::Gone => {
            return waiting(
                &api,
                &ctx,
                &key,
                reason::REASON_CLUSTER_NOT_READY,
                format!(
                    "GarageCluster {} does not exist; create it or fix spec.clusterRef",
                    key.spec.cluster_ref.name
                ),
            )
            .await;
        }
        Reach::Waiting { reason, message } => {
            return waiting(&api, &ctx, &key, reason, message).await;
        }
    };
    // Only now, with the cluster reached and managed by this install: a foreign install adds
    // nothing to an object whose clean-up is another install's.
    finalizer::set(&api, &ctx.metrics, &key, finalizers::FINALIZER_KEY, true).await?;
    let material = match material(&ctx, &key, &target, Access::Write(&stores)).await? {
        Ok(m) => m,
        Err(message) => {
            return waiting(
                &api,
                &ctx,
                &key,
                reason::REASON_WAITING_FOR_DEPENDENCY,
                message,
            )
            .await;
        }
    };
    let info = match ensure_in_garage(&ctx, &key, &target, &material).await? {
        Ok(info) => info,
        Err(message) => {
            return waiting(&api, &ctx, &key, reason::REASON_GARAGE_API_ERROR, message).await;
        }
    };
    let info = settle_settings(&key, &target, info, &ctx).await?;
    let (info, managed, cluster_wide) =
        grants(&api, &ctx, &stores, &key, &target, info, &material).await?;
    let secret_name = publish_secret(&ctx, &key, &target, &material, &stores).await?;
    retire_replaced(&ctx, &key, &target, &material).await?;

    let generation = key.metadata.generation;
    let expired = info.expired;
    let conditions = ready_conditions(&key, &info, &secret_name);
    let status = GarageKeyStatus {
        access_key_id: Some(info.access_key_id.clone()),
        key_id: Some(info.access_key_id.clone()),
        buckets: Some(bucket_statuses(&info)),
        cluster_wide: Some(cluster_wide),
        conditions: Some(conditions),
        created_at: info.created.as_deref().and_then(timestamp).map(Time),
        expires_at: info.expiration.as_deref().and_then(timestamp).map(Time),
        managed_bucket_grants: Some(managed),
        observed_generation: generation,
        permissions: Some(KeyCapabilities {
            create_bucket: Some(info.permissions.create_bucket),
        }),
        phase: Some(if expired {
            KeyPhase::Expired
        } else {
            KeyPhase::Ready
        }),
        secret_ref: Some(SecretReference {
            name: Some(secret_name),
            namespace: Some(ns),
        }),
        effective_permissions: key
            .status
            .as_ref()
            .and_then(|s| s.effective_permissions.clone()),
    };
    patch_status_if_changed(&api, &ctx, &key, key.status.as_ref(), &status).await?;
    Ok(Action::requeue(super::drift_check(
        ctx.config.drift_resync,
        key.metadata.uid.as_deref(),
    )))
}

/// The conditions of a key that is in Garage: Ready unless Garage says it has expired.
fn ready_conditions(
    key: &GarageKey,
    info: &KeyInfo,
    secret_name: &str,
) -> Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    let expired = info.expired;
    conditions::merge(
        key.status.as_ref().and_then(|s| s.conditions.as_deref()),
        &[Desired {
            type_: CONDITION_READY,
            status: !expired,
            reason: if expired {
                reason::REASON_EXPIRED
            } else {
                reason::REASON_KEY_READY
            },
            message: if expired {
                "the key has expired in Garage; it is not rotated or deleted automatically".into()
            } else {
                format!(
                    "key {} is ready; credentials in Secret {secret_name}",
                    info.access_key_id
                )
            },
        }],
        &[CONDITION_READY],
        key.metadata.generation,
    )
}

/// Reports why the key cannot be made ready now and looks again soon.
async fn waiting(
    api: &Api<GarageKey>,
    ctx: &Context,
    key: &GarageKey,
    why: &'static str,
    message: String,
) -> Result<Action, Error> {
    super::report(
        api,
        ctx,
        key,
        key.status.as_ref(),
        false,
        why,
        message,
        |s| {
            s.phase = Some(KeyPhase::Pending);
        },
    )
    .await?;
    Ok(Action::requeue(WAITING))
}

/// The key pair this GarageKey should have: the one Garage already holds for it, imported
/// material, or derived material ([`derivation`]). `access` says whether deriving may write.
async fn material(
    ctx: &Context,
    key: &GarageKey,
    target: &Target,
    access: Access<'_>,
) -> Result<Result<Material, String>, Error> {
    let ns = key.namespace().unwrap_or_default();
    if let Some(import) = &key.spec.import_key {
        // Once imported, Garage holds the material: later edits of the source never re-key.
        if let Some(id) = key.status.as_ref().and_then(|s| s.access_key_id.clone())
            && let Ok(info) = target.admin.key_info(Lookup::Id(&id), true).await
            && let Some(secret) = info.secret_access_key
        {
            return Ok(Ok(Material {
                access_key_id: id,
                secret_access_key: secret,
            }));
        }
        if let (Some(id), Some(secret)) = (&import.access_key_id, &import.secret_access_key) {
            return Ok(Ok(Material {
                access_key_id: id.clone(),
                secret_access_key: secret.clone(),
            }));
        }
        let Some(r) = &import.secret_ref else {
            return Ok(Err(
                "spec.importKey needs either secretRef or both accessKeyId and secretAccessKey"
                    .into(),
            ));
        };
        let name = r.name.clone().unwrap_or_default();
        let secret_ns = r
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or(ns.clone());
        if secret_ns != ns {
            return Ok(Err(format!(
                "spec.importKey.secretRef must be in the key's own namespace {ns}, not {secret_ns}"
            )));
        }
        let Some(source) = Api::<Secret>::namespaced(ctx.client.clone(), &ns)
            .get_opt(&name)
            .await?
        else {
            return Ok(Err(format!(
                "spec.importKey.secretRef: Secret {ns}/{name} does not exist; create it"
            )));
        };
        let read = |k: &Option<String>, default: &str| {
            let k = k
                .clone()
                .filter(|k| !k.is_empty())
                .unwrap_or_else(|| default.into());
            source
                .data
                .as_ref()
                .and_then(|d| d.get(&k))
                .map(|b| String::from_utf8_lossy(&b.0).trim().to_owned())
                .filter(|v| !v.is_empty())
                .ok_or(k)
        };
        return Ok(
            match (
                read(&import.access_key_id_key, "access-key-id"),
                read(&import.secret_access_key_key, "secret-access-key"),
            ) {
                (Ok(id), Ok(secret)) => Ok(Material {
                    access_key_id: id,
                    secret_access_key: secret,
                }),
                (Err(k), _) | (_, Err(k)) => Err(format!(
                    "spec.importKey.secretRef: Secret {ns}/{name} has no value under {k}"
                )),
            },
        );
    }
    derivation::derived(ctx, key, target, access).await
}

/// Makes sure Garage holds the key with exactly this material; the error text says why not.
async fn ensure_in_garage(
    ctx: &Context,
    key: &GarageKey,
    target: &Target,
    m: &Material,
) -> Result<Result<KeyInfo, String>, Error> {
    let found = match target
        .admin
        .key_info(Lookup::Id(&m.access_key_id), true)
        .await
    {
        Ok(info) => Some(info),
        Err(e) if e.is_not_found() => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(info) = found {
        return Ok(
            if info.secret_access_key.as_deref() == Some(m.secret_access_key.as_str()) {
                Ok(info)
            } else {
                Err(format!(
                    "access key {} exists in Garage with another secret; it is not taken over (import its real secret, or remove the other key)",
                    m.access_key_id
                ))
            },
        );
    }
    ctx.metrics.wrote();
    match target
        .admin
        .import_key(
            &m.access_key_id,
            &m.secret_access_key,
            Some(&display_name(key)),
        )
        .await
    {
        Ok(info) => {
            tracing::info!(key = %key.name_any(), access_key_id = %info.access_key_id, "key created in Garage");
            Ok(Ok(info))
        }
        // Garage keeps a deleted key's ID and never lets it be imported again.
        Err(GarageError::AlreadyExists { .. }) => Ok(Err(format!(
            "access key {} was deleted from Garage outside the operator and cannot be recreated; set the annotation {} to any new value to mint new credentials",
            m.access_key_id,
            annotation::ANNOTATION_KEY_REPLACEMENT_NONCE
        ))),
        Err(e) => Err(e.into()),
    }
}

fn display_name(key: &GarageKey) -> String {
    key.spec
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| key.name_any())
}

/// Name, expiry and the create-bucket permission, changed only where Garage differs.
async fn settle_settings(
    key: &GarageKey,
    target: &Target,
    info: KeyInfo,
    ctx: &Context,
) -> Result<KeyInfo, Error> {
    let mut spec = KeySpec::default();
    let name = display_name(key);
    if info.name != name {
        spec.name = Some(name);
    }
    if let Some(at) = &key.spec.expires_at {
        if info.expiration.as_deref().and_then(timestamp) != Some(at.0) {
            spec.expiration = Some(at.0.to_string());
        }
    } else if key.spec.never_expires == Some(true) && info.expiration.is_some() {
        spec.never_expires = true;
    }
    let create = key
        .spec
        .permissions
        .as_ref()
        .and_then(|p| p.create_bucket)
        .unwrap_or(false);
    if create != info.permissions.create_bucket {
        let p = KeyPermissions {
            create_bucket: true,
        };
        if create {
            spec.allow = Some(p);
        } else {
            spec.deny = Some(p);
        }
    }
    if spec == KeySpec::default() {
        return Ok(info);
    }
    ctx.metrics.wrote();
    let secret = info.secret_access_key.clone();
    let mut updated = target.admin.update_key(&info.access_key_id, &spec).await?;
    updated.secret_access_key = updated.secret_access_key.or(secret);
    Ok(updated)
}

/// Brings every pair this key acts on to its declared permission; returns the key as Garage
/// now has it, the managed bucket IDs and whether the key holds a cluster-wide baseline.
async fn grants(
    api: &Api<GarageKey>,
    ctx: &Context,
    stores: &Stores,
    key: &GarageKey,
    target: &Target,
    info: KeyInfo,
    m: &Material,
) -> Result<(KeyInfo, Vec<String>, bool), Error> {
    // This key as the other objects should see it: with the access key it now has.
    let mut me = key.clone();
    me.status.get_or_insert_with(Default::default).access_key_id = Some(m.access_key_id.clone());
    let snapshot = stores
        .snapshot(ctx, target, super::Me::Key(me.clone()))
        .await?;
    let view = snapshot.view(target);
    let garage_buckets = &snapshot.garage_buckets;
    let own: BTreeSet<String> = view.key_declares(&me).into_keys().collect();
    let baseline = access::Cluster::key_baseline(key).is_some();
    let status = key.status.clone().unwrap_or_default();
    let was_wide = status.cluster_wide.unwrap_or(false);
    let was: BTreeSet<String> = status
        .managed_bucket_grants
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let mut scope_buckets: BTreeSet<String> = own.union(&was).cloned().collect();
    if baseline || was_wide {
        scope_buckets.extend(garage_buckets.iter().map(|b| b.id.clone()));
    }
    let scope: BTreeSet<Pair> = scope_buckets
        .iter()
        .map(|b| (b.clone(), m.access_key_id.clone()))
        .collect();
    let current: BTreeMap<Pair, BucketPermissions> = info
        .buckets
        .iter()
        .map(|b| ((b.id.clone(), m.access_key_id.clone()), b.permissions))
        .collect();
    let changes = access::changes(&scope, &current, |p| view.declared(p));
    if changes.is_empty() && was == own && was_wide == baseline {
        return Ok((info, own.into_iter().collect(), baseline));
    }
    // Ownership is recorded before the first grant, so a crash never leaves a grant the
    // operator would not know to revoke.
    let before: Vec<String> = was.union(&own).cloned().collect();
    if before != status.managed_bucket_grants.clone().unwrap_or_default() || (baseline && !was_wide)
    {
        let mut recorded = status.clone();
        recorded.managed_bucket_grants = Some(before);
        recorded.cluster_wide = Some(was_wide || baseline);
        recorded.access_key_id = Some(m.access_key_id.clone());
        recorded.key_id = Some(m.access_key_id.clone());
        patch_status_if_changed(api, ctx, key, key.status.as_ref(), &recorded).await?;
    }
    for c in &changes {
        apply_change(ctx, target, c).await?;
    }
    let info = if changes.is_empty() {
        info
    } else {
        let secret = info.secret_access_key.clone();
        let mut fresh = target
            .admin
            .key_info(Lookup::Id(&m.access_key_id), false)
            .await?;
        fresh.secret_access_key = secret;
        fresh
    };
    Ok((info, own.into_iter().collect(), baseline))
}

/// One Allow and/or Deny on one pair.
pub(super) async fn apply_change(
    ctx: &Context,
    target: &Target,
    c: &access::Change,
) -> Result<(), Error> {
    let (bucket, key) = &c.pair;
    if c.allow != BucketPermissions::default() {
        ctx.metrics.wrote();
        target.admin.allow_bucket_key(bucket, key, c.allow).await?;
    }
    if c.deny != BucketPermissions::default() {
        ctx.metrics.wrote();
        match target.admin.deny_bucket_key(bucket, key, c.deny).await {
            // A bucket or key deleted since it was listed holds no permission to revoke.
            Err(e) if e.is_not_found() => {}
            r => {
                r?;
            }
        }
    }
    tracing::info!(bucket, key, allow = ?c.allow, deny = ?c.deny, "bucket permissions changed");
    Ok(())
}

/// Writes the credentials Secret; returns its name. A Secret of that name this key does not
/// control is never overwritten.
async fn publish_secret(
    ctx: &Context,
    key: &GarageKey,
    target: &Target,
    m: &Material,
    stores: &Stores,
) -> Result<String, Error> {
    let ns = key.namespace().unwrap_or_default();
    let s = &target.settings;
    let region = target
        .cluster
        .spec
        .s3_api
        .as_ref()
        .and_then(|a| a.region.clone())
        .filter(|r| !r.is_empty())
        .unwrap_or_else(|| "garage".into());
    let endpoint = secret::Endpoint {
        scheme: "http".into(),
        host: format!(
            "{}.{}.svc:{}",
            crate::names::api_service(&s.name),
            s.namespace,
            s.s3_port
        ),
        region,
    };
    let bucket = single_bucket_name(key, stores);
    let desired = secret::render(
        key,
        &m.access_key_id,
        &m.secret_access_key,
        &endpoint,
        bucket.as_deref(),
    )?;
    let name = desired.name_any();
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let uid = key.uid().unwrap_or_default();
    match api.get_opt(&name).await? {
        None => {
            ctx.metrics.wrote();
            api.create(&PostParams::default(), &desired).await?;
        }
        Some(live) if !is_controlled_by(&live, &uid) => {
            return Err(Error::Foreign {
                kind: "Secret",
                name,
                owner: format!("GarageKey {ns}/{}", key.name_any()),
            });
        }
        Some(live) => {
            let hash = |s: &Secret| {
                s.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(annotation::ANNOTATION_RENDERED_HASH).cloned())
            };
            if hash(&live) != hash(&desired) {
                let mut replacement = desired.clone();
                replacement.metadata.resource_version = live.metadata.resource_version.clone();
                // The type of a Secret cannot change; a template that changes it replaces the
                // Secret.
                if live.type_ != replacement.type_ {
                    ctx.metrics.wrote();
                    api.delete(&name, &DeleteParams::default()).await?;
                    ctx.metrics.wrote();
                    replacement.metadata.resource_version = None;
                    api.create(&PostParams::default(), &replacement).await?;
                } else {
                    ctx.metrics.wrote();
                    api.replace(&name, &PostParams::default(), &replacement)
                        .await?;
                }
            }
        }
    }
    // A renamed template leaves the old Secret behind; it goes once the new one exists.
    if let Some(old) = key
        .status
        .as_ref()
        .and_then(|s| s.secret_ref.as_ref())
        .and_then(|r| r.name.clone())
        .filter(|old| *old != name)
    {
        delete_if_ours(&api, ctx, &old, &uid).await?;
    }
    Ok(name)
}

async fn delete_if_ours(
    api: &Api<Secret>,
    ctx: &Context,
    name: &str,
    uid: &str,
) -> Result<(), Error> {
    if let Some(live) = api.get_opt(name).await?
        && is_controlled_by(&live, uid)
    {
        write::delete_if_present(api, &ctx.metrics, name, &DeleteParams::default()).await?;
    }
    Ok(())
}

/// The bucket name for `includeBucketName`: only when the key references exactly one bucket.
fn single_bucket_name(key: &GarageKey, stores: &Stores) -> Option<String> {
    let perms = key.spec.bucket_permissions.as_deref().unwrap_or_default();
    let [only] = perms else {
        return None;
    };
    if let Some(alias) = only.global_alias.clone().filter(|a| !a.is_empty()) {
        return Some(alias);
    }
    let r = only.bucket_ref.as_ref()?;
    let ns = key.namespace().unwrap_or_default();
    let bns = super::reach::target_namespace(&ns, r.namespace.as_deref()).to_owned();
    let bucket = stores
        .all_buckets()
        .into_iter()
        .find(|b| b.namespace().as_deref() == Some(bns.as_str()) && b.name_any() == r.name)?;
    Some(
        bucket
            .spec
            .global_alias
            .clone()
            .filter(|a| !a.is_empty())
            .unwrap_or_else(|| bucket.name_any()),
    )
}

/// After a replacement nonce gave the key new material, the old key is deleted from Garage
/// once the new one and its Secret exist.
async fn retire_replaced(
    ctx: &Context,
    key: &GarageKey,
    target: &Target,
    m: &Material,
) -> Result<(), Error> {
    let Some(old) = key.status.as_ref().and_then(|s| s.access_key_id.clone()) else {
        return Ok(());
    };
    if old == m.access_key_id {
        return Ok(());
    }
    ctx.metrics.wrote();
    match target.admin.delete_key(&old).await {
        Ok(()) => {
            tracing::info!(key = %key.name_any(), old, "replaced key deleted from Garage");
            Ok(())
        }
        Err(e) if e.is_not_found() => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Sorted by bucket ID: Garage lists them in no stable order, and an unchanged key must
/// produce an unchanged status.
fn bucket_statuses(info: &KeyInfo) -> Vec<KeyBucketStatus> {
    let mut buckets: Vec<_> = info.buckets.iter().collect();
    buckets.sort_by(|a, b| a.id.cmp(&b.id));
    buckets
        .into_iter()
        .map(|b| KeyBucketStatus {
            bucket_id: Some(b.id.clone()),
            global_alias: b.global_aliases.first().cloned(),
            local_alias: b.local_aliases.first().cloned(),
            read: Some(b.permissions.read),
            write: Some(b.permissions.write),
            owner: Some(b.permissions.owner),
        })
        .collect()
}

/// Deletion: every grant revoked, the key deleted from Garage, the Secret removed, then the
/// finalizer. A cluster that no longer exists has nothing left to clean.
async fn finalize(key: &GarageKey, ctx: &Context, api: &Api<GarageKey>) -> Result<Action, Error> {
    if !finalizer::has(key, finalizers::FINALIZER_KEY) {
        return Ok(Action::await_change());
    }
    let ns = key.namespace().unwrap_or_default();
    match reach(
        ctx,
        GrantFromKind::GarageKey,
        &ns,
        &key.spec.cluster_ref,
        true,
    )
    .await?
    {
        Reach::Ready(target) => {
            let id = key.status.as_ref().and_then(|s| s.access_key_id.clone());
            // Without a grant the key is deleted only when its ID proves it is this object's
            // own derived key: a status naming someone else's key must not delete it.
            let id = match id {
                Some(id) if !target.granted => {
                    let own = matches!(material(ctx, key, &target, Access::ReadOnly).await?, Ok(m) if m.access_key_id == id && key.spec.import_key.is_none());
                    if !own {
                        tracing::warn!(key = %key.name_any(), id, "the cluster grant is gone and the key cannot be proven this object's own; it is left in Garage");
                    }
                    own.then_some(id)
                }
                other => other,
            };
            if let Some(id) = id {
                match target.admin.key_info(Lookup::Id(&id), false).await {
                    Ok(info) => {
                        let all = BucketPermissions {
                            read: true,
                            write: true,
                            owner: true,
                        };
                        for b in &info.buckets {
                            ctx.metrics.wrote();
                            match target.admin.deny_bucket_key(&b.id, &id, all).await {
                                Err(e) if e.is_not_found() => {}
                                r => {
                                    r?;
                                }
                            }
                        }
                        ctx.metrics.wrote();
                        match target.admin.delete_key(&id).await {
                            Ok(()) => {}
                            Err(e) if e.is_not_found() => {}
                            Err(e) => return Err(e.into()),
                        }
                        tracing::info!(key = %key.name_any(), id, "key deleted from Garage");
                    }
                    Err(e) if e.is_not_found() => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Reach::Gone => {}
        // The managing install finalizes it; removing the finalizer here would let the
        // object go before that install has cleaned up in Garage.
        Reach::HandsOff(action) => return Ok(action),
        Reach::Waiting { message, .. } => {
            if !super::cluster_deleting(ctx, &ns, &key.spec.cluster_ref).await? {
                tracing::info!(key = %key.name_any(), message, "deletion waits for the cluster");
                return Ok(Action::requeue(WAITING));
            }
        }
    }
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let uid = key.uid().unwrap_or_default();
    if let Some(name) = key
        .status
        .as_ref()
        .and_then(|s| s.secret_ref.as_ref())
        .and_then(|r| r.name.clone())
    {
        delete_if_ours(&secrets, ctx, &name, &uid).await?;
    }
    delete_if_ours(&secrets, ctx, &secret::secret_name(key), &uid).await?;
    finalizer::set(api, &ctx.metrics, key, finalizers::FINALIZER_KEY, false).await?;
    Ok(Action::await_change())
}
