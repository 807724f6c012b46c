//! Deriving the material of a GarageKey without `spec.importKey`: reading the cluster secret it
//! derives from, recording that choice on the key and creating the key-derivation Secret. The
//! choice itself, and whether a Secret is usable, are pure
//! ([`decide::garage_objects::key::derivation`]).
//!
//! Every Garage pod mounts the RPC secret, so material derived from it is open to anyone who
//! can read that Secret or a Garage pod's files. New keys therefore derive from the cluster's
//! key-derivation Secret (`<cluster>-key-derivation`), which only this controller reads and
//! which it creates when a key first needs it. Keys that already exist in Garage keep the
//! RPC-secret derivation: other material would be other credentials. The choice is recorded
//! on the key (the `key-derivation` annotation) before the key is written to Garage, so a crash
//! in between never makes a later pass choose differently.
//!
//! For the same reason a missing key-derivation Secret is not created again while a key derived
//! from it still exists in Garage: it was lost, and must be restored rather than replaced.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use shared_types::garage_key::GarageKey;
use shared_types::keys::annotation;

use crate::controller::garage_access::random_hex32;
use crate::controller::garage_objects::Stores;
use crate::controller::garage_objects::reach::Target;
use crate::controller::{Context, Error};
use crate::desired::secrets;
use crate::names;
use decide::garage_objects::key::derivation::{
    Choice, choose, derived_ids, lost_proof, matching, pinned, usable,
};
use decide::garage_objects::key::material::{self, DERIVATIONS, Derivation, Material};

/// Whether a pass may write what deriving needs (the record on the key, the key-derivation
/// Secret). Cleanup only reads: it proves ownership and must not create anything for a cluster
/// that may be going away.
#[derive(Clone, Copy)]
pub enum Access<'a> {
    /// A normal pass, with every key in scope: they tell whether a missing key-derivation
    /// Secret was lost.
    Write(&'a Stores),
    /// Cleanup.
    ReadOnly,
}

/// The derived material of `key`, or why it cannot be derived now.
pub async fn derived(
    ctx: &Context,
    key: &GarageKey,
    target: &Target,
    access: Access<'_>,
) -> Result<Result<Material, String>, Error> {
    let access_key_id = key
        .status
        .as_ref()
        .and_then(|s| s.access_key_id.as_deref())
        .filter(|id| !id.is_empty());
    let derivation = match choose(
        key.annotations()
            .get(annotation::ANNOTATION_KEY_DERIVATION)
            .map(String::as_str),
        access_key_id,
    ) {
        Choice::Use(d) => d,
        Choice::Record(d) => {
            if let Access::Write(_) = access {
                record(ctx, key, d).await?;
            }
            d
        }
        Choice::Infer => {
            return infer(ctx, key, target, access_key_id.unwrap_or_default(), access).await;
        }
        Choice::Unknown => {
            return Ok(Err(format!(
                "the annotation {} holds a value the operator never writes; set it back to the one it recorded ({})",
                annotation::ANNOTATION_KEY_DERIVATION,
                derivation_values()
            )));
        }
    };
    let secret = if derivation.uses_rpc_secret() {
        rpc_secret(ctx, target).await?
    } else {
        key_derivation_secret(ctx, target, access).await?
    };
    let secret = match secret {
        Ok(s) => s,
        Err(message) => return Ok(Err(message)),
    };
    let material = material::derive_for(derivation, &secret, key);
    Ok(pinned(derivation, material, access_key_id))
}

/// The material of a key with an access key ID and no record: from whichever derivation gives
/// that ID, recorded before use. The key-derivation Secret is only read here, never created: a
/// key that already exists cannot have been derived from a Secret that does not.
async fn infer(
    ctx: &Context,
    key: &GarageKey,
    target: &Target,
    access_key_id: &str,
    access: Access<'_>,
) -> Result<Result<Material, String>, Error> {
    // Each secret read once: three derivations key the RPC secret.
    let rpc = rpc_secret(ctx, target).await?;
    let kds = key_derivation_secret(ctx, target, Access::ReadOnly).await?;
    let mut candidates = Vec::new();
    let mut materials = Vec::new();
    for d in DERIVATIONS {
        let secret = if d.uses_rpc_secret() { &rpc } else { &kds };
        let material = secret
            .as_ref()
            .ok()
            .map(|bytes| material::derive_for(d, bytes, key));
        candidates.push((d, material.as_ref().map(|m| m.access_key_id.clone())));
        materials.push(material);
    }
    let found = matching(access_key_id, &candidates).zip(
        materials
            .into_iter()
            .flatten()
            .find(|m| m.access_key_id == access_key_id),
    );
    let Some((d, material)) = found else {
        // A handle naming no RPC secret cannot offer the Go operator's derivation at all.
        let hint = match (&rpc, target.rpc_secret.is_none()) {
            (Err(why), true) => format!("; {why}"),
            _ => String::new(),
        };
        return Ok(Err(format!(
            "the key has access key {access_key_id} and no {} annotation, and neither the RPC secret nor the key-derivation Secret of its cluster (where readable) gives that ID; the operator derives nothing rather than give the key other credentials: set the annotation back to the value it had ({}){hint}",
            annotation::ANNOTATION_KEY_DERIVATION,
            derivation_values()
        )));
    };
    if let Access::Write(_) = access {
        record(ctx, key, d).await?;
    }
    Ok(Ok(material))
}

/// The annotation values a derivation is recorded with, for a message.
fn derivation_values() -> String {
    DERIVATIONS.map(Derivation::annotation_value).join(", ")
}

/// Records `derivation` on the key before anything is written to Garage, as the grants are
/// recorded in the status before they are made. A plain merge patch, without a resourceVersion
/// guard (which the finalizer write earlier in the same pass would always trip): this
/// controller writes the access key ID into the status only after the record, so a view of the
/// key with an ID and no record is one an earlier version wrote, and a view older than this
/// pass's own writes leads to the same choice again.
async fn record(ctx: &Context, key: &GarageKey, derivation: Derivation) -> Result<(), Error> {
    let api: Api<GarageKey> =
        Api::namespaced(ctx.client.clone(), &key.namespace().unwrap_or_default());
    let patch = serde_json::json!({
        "metadata": {
            "annotations": {
                annotation::ANNOTATION_KEY_DERIVATION: derivation.annotation_value(),
            }
        }
    });
    ctx.metrics.wrote();
    api.patch(
        &key.name_any(),
        &PatchParams::default(),
        &Patch::Merge(patch),
    )
    .await?;
    tracing::info!(key = %key.name_any(), derivation = derivation.annotation_value(), "key derivation recorded");
    Ok(())
}

/// The bytes of the cluster's RPC secret, as its pods mount it.
async fn rpc_secret(ctx: &Context, target: &Target) -> Result<Result<Vec<u8>, String>, Error> {
    let cluster_ns = &target.namespace();
    let Some(source) = &target.rpc_secret else {
        return Ok(Err(format!(
            "the key was derived from an RPC secret, and management handle {cluster_ns}/{} names none; set spec.connectTo.rpcSecretRef to the remote cluster's RPC secret, or import the key with spec.importKey",
            target.name()
        )));
    };
    let Some(rpc) = Api::<Secret>::namespaced(ctx.client.clone(), cluster_ns)
        .get_opt(&source.name)
        .await?
        .and_then(|s| s.data?.get(&source.key).map(|b| b.0.clone()))
    else {
        return Ok(Err(format!(
            "the RPC secret {cluster_ns}/{} of the cluster is not readable yet",
            source.name
        )));
    };
    Ok(Ok(String::from_utf8_lossy(&rpc)
        .trim_end()
        .as_bytes()
        .to_vec()))
}

/// The bytes of the cluster's key-derivation Secret, created first when absent unless `access`
/// is read-only or the Secret was lost. Keys of one cluster race to create it: the loser
/// reads the winner's.
async fn key_derivation_secret(
    ctx: &Context,
    target: &Target,
    access: Access<'_>,
) -> Result<Result<Vec<u8>, String>, Error> {
    let (cluster, ns) = (target.name(), target.namespace());
    let name = names::key_derivation_secret(&cluster);
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let live = match (api.get_opt(&name).await?, access) {
        (Some(live), _) => live,
        (None, Access::ReadOnly) => {
            return Ok(Err(format!(
                "the key-derivation Secret {ns}/{name} of the cluster does not exist"
            )));
        }
        (None, Access::Write(stores)) => {
            if let Some(message) = lost(target, stores, &name).await? {
                return Ok(Err(message));
            }
            let desired = secrets::key_derivation_secret(&target.cluster, &random_hex32()?)?;
            ctx.metrics.wrote();
            match api.create(&PostParams::default(), &desired).await {
                Ok(created) => {
                    tracing::info!(secret = %name, namespace = %ns, "key-derivation Secret created");
                    created
                }
                Err(kube::Error::Api(e)) if e.is_already_exists() => api.get(&name).await?,
                Err(e) => return Err(e.into()),
            }
        }
    };
    Ok(usable(&live, &target.uid()).map_err(|why| format!("Secret {ns}/{name} {why}")))
}

/// Why the missing key-derivation Secret `name` must not be created again: a key derived from
/// it still exists in Garage, and a new Secret would silently give it (and every other key
/// derived from the lost one) other credentials. Garage is asked only when some key records
/// such an ID, so a new cluster's first key costs no call.
async fn lost(target: &Target, stores: &Stores, name: &str) -> Result<Option<String>, Error> {
    let (cluster, ns) = (target.name(), target.namespace());
    let derived = derived_ids(&stores.all_keys(), &ns, &cluster);
    if derived.is_empty() {
        return Ok(None);
    }
    let in_garage: BTreeSet<String> = target
        .admin
        .list_keys()
        .await?
        .into_iter()
        .map(|k| k.id)
        .collect();
    Ok(lost_proof(&derived, &in_garage).map(|id| {
        format!(
            "the key-derivation Secret {ns}/{name} of the cluster is missing, yet access key {id} derived from it exists in Garage; restore the Secret from a backup (a new one would give every key derived from it other credentials)"
        )
    }))
}
