//! What a GarageKey pass reads before it decides: the key's material (imported, or derived:
//! [`derivation`]), Garage's key of that ID, the keys, buckets and grants of its cluster, the
//! cluster's S3 endpoint and the credentials Secrets as they are. A key Garage does not hold,
//! or a Secret that does not exist, is a fact (`None`); a failed read is an error.
//!
//! Deriving is the one part that writes: a new key's derivation is recorded on the key, and
//! the cluster's key-derivation Secret created, before anything of the key reaches Garage
//! ([`derivation`] says why). The material is the identity every other fact is read by.

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};
use shared_types::garage_key::GarageKey;

use super::derivation::{self, Access};
use crate::controller::garage_objects::reach::{Cleaning, Target};
use crate::controller::garage_objects::{Me, Stores, cluster_deleting};
use crate::controller::{Context, Error};
use crate::garage::{KeyInfo, Lookup};
use decide::garage_objects::key::material::Material;
use decide::garage_objects::key::plan::{self, Cleanup, Facts, Observed, ObservedDeletion};
use decide::garage_objects::key::secret;

/// The facts of a pass over a live key whose cluster `target` answers.
pub async fn observe(
    ctx: &Context,
    stores: &Stores,
    key: &GarageKey,
    target: &Target,
) -> Result<Observed, Error> {
    let material = match material(ctx, key, target, Access::Write(stores)).await? {
        Ok(m) => m,
        Err(message) => {
            return Ok(Observed {
                key: key.clone(),
                facts: Err(message),
            });
        }
    };
    let in_garage = key_in_garage(target, &material.access_key_id, true).await?;
    // This key as the other objects should see it: with the access key it now has.
    let mut me = key.clone();
    me.status.get_or_insert_with(Default::default).access_key_id =
        Some(material.access_key_id.clone());
    let snapshot = stores.snapshot(ctx, target, Me::Key(me)).await?;
    let secrets: Api<Secret> =
        Api::namespaced(ctx.client.clone(), &key.namespace().unwrap_or_default());
    let name = secret::secret_name(key);
    let live = secrets.get_opt(&name).await?;
    let old_secret = match status_secret(key).filter(|old| *old != name) {
        Some(old) => {
            let live = secrets.get_opt(&old).await?;
            Some((old, live))
        }
        None => None,
    };
    Ok(Observed {
        key: key.clone(),
        facts: Ok(Facts {
            material,
            in_garage,
            snapshot,
            endpoint: target.s3.clone(),
            secret: live,
            old_secret,
        }),
    })
}

/// The Secret the key's status names.
fn status_secret(key: &GarageKey) -> Option<String> {
    key.status
        .as_ref()
        .and_then(|s| s.secret_ref.as_ref())
        .and_then(|r| r.name.clone())
}

/// Garage's key `id` (with its secret when `show_secret`); `None` when Garage has none.
async fn key_in_garage(
    target: &Target,
    id: &str,
    show_secret: bool,
) -> Result<Option<KeyInfo>, Error> {
    match target.admin.key_info(Lookup::Id(id), show_secret).await {
        Ok(info) => Ok(Some(info)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The facts of a pass over a deleted key whose cluster cleanup reaches as `reached` says.
pub async fn observe_deletion(
    ctx: &Context,
    key: &GarageKey,
    reached: &Cleaning,
) -> Result<ObservedDeletion, Error> {
    let ns = key.namespace().unwrap_or_default();
    let cluster = match reached {
        Cleaning::Reached(target) => {
            // Without a grant the key is deleted only when its ID proves it is this object's
            // own derived key; proving it derives the material, read-only.
            let derived = match (&key.status, target.granted) {
                (Some(s), false) if s.access_key_id.is_some() => {
                    Some(material(ctx, key, target, Access::ReadOnly).await?)
                }
                _ => None,
            };
            let id = plan::deletable(key, target.granted, derived.as_ref());
            let in_garage = match &id {
                Some(id) => key_in_garage(target, id, false).await?,
                None => None,
            };
            Cleanup::Reached { id, in_garage }
        }
        Cleaning::Gone => Cleanup::Gone,
        Cleaning::Unreachable { reason, message } => Cleanup::Unreachable {
            reason,
            message: message.clone(),
            cluster_deleting: cluster_deleting(ctx, &ns, &key.spec.cluster_ref).await?,
        },
    };
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let mut live = Vec::new();
    for name in status_secret(key)
        .into_iter()
        .chain([secret::secret_name(key)])
    {
        let found = secrets.get_opt(&name).await?;
        live.push((name, found));
    }
    Ok(ObservedDeletion {
        key: key.clone(),
        cluster,
        secrets: live,
    })
}

/// The key pair this GarageKey should have: the one Garage already holds for it, imported
/// material, or derived material ([`derivation`]). `access` says whether deriving may write.
pub async fn material(
    ctx: &Context,
    key: &GarageKey,
    target: &Target,
    access: Access<'_>,
) -> Result<Result<Material, String>, Error> {
    let ns = key.namespace().unwrap_or_default();
    let Some(import) = &key.spec.import_key else {
        return derivation::derived(ctx, key, target, access).await;
    };
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
            "spec.importKey needs either secretRef or both accessKeyId and secretAccessKey".into(),
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
    let source = Api::<Secret>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&name)
        .await?;
    Ok(plan::imported_material(import, &ns, &name, source.as_ref()))
}
