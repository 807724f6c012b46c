//! Runs a GarageKey [`Plan`]: each step in order against Garage and the API server, then the
//! status it publishes and the requeue of its outcome. Nothing here decides; Garage's answers
//! only feed the published status.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::garage_key::GarageKey;
use shared_types::keys::finalizer as finalizers;

use crate::controller::garage_objects::reach::Target;
use crate::controller::garage_objects::{action, patch_status_if_changed};
use crate::controller::{Context, Error, finalizer, write};
use crate::garage::{AdminClient, BucketPermissions, GarageError, KeyInfo, Lookup};
use decide::garage_objects::access;
use decide::garage_objects::drift_check;
use decide::garage_objects::key::plan::{self, Plan, Publish, SecretWrite, Step};
use decide::garage_objects::outcome::Outcome;

/// Runs `plan` for `key`; `target` is its cluster when the plan has Garage steps.
pub async fn act(
    api: &Api<GarageKey>,
    ctx: &Context,
    key: &GarageKey,
    target: Option<&Target>,
    plan: Plan,
) -> Result<Action, Error> {
    let mut garage = plan.garage;
    for step in plan.steps {
        if let Some(stop) = run_step(api, ctx, key, target, step, &mut garage).await? {
            return Ok(stop);
        }
    }
    match plan.publish {
        Publish::Status(status) => {
            patch_status_if_changed(api, ctx, key, key.status.as_ref(), &*status).await?;
        }
        Publish::Ready(ready) => {
            if let Some(info) = &garage {
                let status = plan::ready_status(key, &ready, info);
                patch_status_if_changed(api, ctx, key, key.status.as_ref(), &status).await?;
            }
        }
        Publish::Nothing => {}
    }
    if let Outcome::Waiting { message, .. } = &plan.outcome
        && key.metadata.deletion_timestamp.is_some()
    {
        tracing::info!(key = %key.name_any(), message, "deletion waits for the cluster");
    }
    Ok(requeue(ctx, key, &plan.outcome))
}

fn requeue(ctx: &Context, key: &GarageKey, outcome: &Outcome) -> Action {
    action(
        outcome,
        drift_check(ctx.config.drift_resync, key.metadata.uid.as_deref()),
    )
}

/// Runs one step; `garage` is the key as Garage last answered. Returns the requeue when Garage
/// refused the step as the plan foresaw.
async fn run_step(
    api: &Api<GarageKey>,
    ctx: &Context,
    key: &GarageKey,
    target: Option<&Target>,
    step: Step,
    garage: &mut Option<KeyInfo>,
) -> Result<Option<Action>, Error> {
    let admin = || admin(target);
    let secrets: Api<Secret> =
        Api::namespaced(ctx.client.clone(), &key.namespace().unwrap_or_default());
    match step {
        Step::Import {
            material,
            name,
            refused,
        } => {
            ctx.metrics.wrote();
            match admin()?
                .import_key(
                    &material.access_key_id,
                    &material.secret_access_key,
                    Some(&name),
                )
                .await
            {
                Ok(info) => {
                    tracing::info!(key = %key.name_any(), access_key_id = %info.access_key_id, "key created in Garage");
                    *garage = Some(info);
                }
                Err(GarageError::AlreadyExists { .. }) => {
                    patch_status_if_changed(api, ctx, key, key.status.as_ref(), &refused.status)
                        .await?;
                    return Ok(Some(requeue(ctx, key, &refused.outcome)));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Step::Update { id, spec } => {
            ctx.metrics.wrote();
            *garage = Some(admin()?.update_key(&id, &spec).await?);
        }
        Step::Record(status) => {
            patch_status_if_changed(api, ctx, key, key.status.as_ref(), &*status).await?;
        }
        Step::Permission(change) => apply_change(ctx, target, &change).await?,
        Step::ReadBack(id) => {
            *garage = Some(admin()?.key_info(Lookup::Id(&id), false).await?);
        }
        Step::Secret(w) => write_secret(ctx, &secrets, key, w).await?,
        Step::DeleteSecret(name) => {
            write::delete_if_present(&secrets, &ctx.metrics, &name, &DeleteParams::default())
                .await?;
        }
        Step::RetireKey(old) => {
            if delete_key(ctx, admin()?, &old).await? {
                tracing::info!(key = %key.name_any(), old, "replaced key deleted from Garage");
            }
        }
        Step::Revoke((bucket, id)) => {
            let all = BucketPermissions {
                read: true,
                write: true,
                owner: true,
            };
            ctx.metrics.wrote();
            match admin()?.deny_bucket_key(&bucket, &id, all).await {
                Err(e) if e.is_not_found() => {}
                r => {
                    r?;
                }
            }
        }
        Step::DeleteKey(id) => {
            delete_key(ctx, admin()?, &id).await?;
            tracing::info!(key = %key.name_any(), id, "key deleted from Garage");
        }
        Step::LeaveInGarage(id) => {
            tracing::warn!(key = %key.name_any(), id, "the cluster grant is gone and the key cannot be proven this object's own; it is left in Garage");
        }
        Step::RemoveFinalizer => {
            finalizer::set(api, &ctx.metrics, key, finalizers::FINALIZER_KEY, false).await?;
        }
    }
    Ok(None)
}

/// Deletes key `id` from Garage; false when it was gone already.
async fn delete_key(ctx: &Context, admin: &AdminClient, id: &str) -> Result<bool, Error> {
    ctx.metrics.wrote();
    match admin.delete_key(id).await {
        Ok(()) => Ok(true),
        Err(e) if e.is_not_found() => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Writes the credentials Secret as planned.
async fn write_secret(
    ctx: &Context,
    secrets: &Api<Secret>,
    key: &GarageKey,
    w: SecretWrite,
) -> Result<(), Error> {
    match w {
        SecretWrite::Create(desired) => {
            ctx.metrics.wrote();
            secrets.create(&PostParams::default(), &desired).await?;
        }
        SecretWrite::Replace(desired) => {
            ctx.metrics.wrote();
            secrets
                .replace(&desired.name_any(), &PostParams::default(), &desired)
                .await?;
        }
        SecretWrite::Recreate(desired) => {
            ctx.metrics.wrote();
            secrets
                .delete(&desired.name_any(), &DeleteParams::default())
                .await?;
            ctx.metrics.wrote();
            secrets.create(&PostParams::default(), &desired).await?;
        }
        SecretWrite::Foreign { name } => {
            return Err(Error::Foreign {
                kind: "Secret",
                name,
                owner: format!(
                    "GarageKey {}/{}",
                    key.namespace().unwrap_or_default(),
                    key.name_any()
                ),
            });
        }
    }
    Ok(())
}

/// The Admin API client of the cluster a plan's Garage steps go to. Plans have Garage steps
/// only when the cluster answers; such a step without it fails the pass.
pub fn admin(target: Option<&Target>) -> Result<&AdminClient, Error> {
    target.map(|t| &t.admin).ok_or_else(|| {
        Error::Unsafe("a Garage step was planned without a reachable cluster".into())
    })
}

/// One Allow and/or Deny on one pair.
pub async fn apply_change(
    ctx: &Context,
    target: Option<&Target>,
    c: &access::Change,
) -> Result<(), Error> {
    let admin = admin(target)?;
    let (bucket, key) = &c.pair;
    if c.allow != BucketPermissions::default() {
        ctx.metrics.wrote();
        admin.allow_bucket_key(bucket, key, c.allow).await?;
    }
    if c.deny != BucketPermissions::default() {
        ctx.metrics.wrote();
        match admin.deny_bucket_key(bucket, key, c.deny).await {
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
