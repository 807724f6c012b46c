//! The GarageKey controller: an S3 key in Garage with the material
//! derived from a cluster secret ([`derivation`]) or imported, its key-wide settings, its bucket
//! grants (see [`decide::garage_objects::access`]) and its credentials Secret; on deletion every
//! grant is revoked and the key deleted from Garage before the finalizer goes.
//!
//! A pass is observe ([`observe`]) → plan ([`plan`], pure, in the `decide` crate with the key
//! material and the credentials Secret it renders) → act ([`act`]).

pub mod act;
pub mod derivation;
pub mod observe;

use std::sync::Arc;

use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::garage_key::GarageKey;
use shared_types::garage_reference_grant::GrantFromKind;
use shared_types::keys::finalizer as finalizers;

use super::Stores;
use super::reach::{Reach, reach};
use crate::controller::{Context, Error, finalizer};
use decide::garage_objects::key::plan;
use decide::garage_objects::outcome;

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
    let reached = reach(
        &ctx,
        GrantFromKind::GarageKey,
        &ns,
        &key.spec.cluster_ref,
        false,
    )
    .await?;
    let target = match reached {
        Reach::Ready(t) => t,
        Reach::HandsOff(action) => return Ok(action),
        Reach::Gone => {
            let (reason, message) = outcome::cluster_missing(&key.spec.cluster_ref.name);
            return act::act(&api, &ctx, &key, None, plan::waiting(&key, reason, message)).await;
        }
        Reach::Waiting { reason, message } => {
            return act::act(&api, &ctx, &key, None, plan::waiting(&key, reason, message)).await;
        }
    };
    // Only now, with the cluster reached and managed by this install: a foreign install adds
    // nothing to an object whose clean-up is another install's.
    finalizer::set(&api, &ctx.metrics, &*key, finalizers::FINALIZER_KEY, true).await?;
    let observed = observe::observe(&ctx, &stores, &key, &target).await?;
    let plan = plan::plan(&observed)?;
    act::act(&api, &ctx, &key, Some(&target), plan).await
}

/// Deletion, as [`plan::deletion`] decides it. A cluster another install manages is that
/// install's to clean: the finalizer is left for it.
async fn finalize(key: &GarageKey, ctx: &Context, api: &Api<GarageKey>) -> Result<Action, Error> {
    if !finalizer::has(key, finalizers::FINALIZER_KEY) {
        return Ok(Action::await_change());
    }
    let ns = key.namespace().unwrap_or_default();
    let reached = reach(
        ctx,
        GrantFromKind::GarageKey,
        &ns,
        &key.spec.cluster_ref,
        true,
    )
    .await?;
    let reached = match reached.for_cleanup() {
        Ok(reached) => reached,
        Err(action) => return Ok(action),
    };
    let observed = observe::observe_deletion(ctx, key, &reached).await?;
    let plan = plan::deletion(&observed);
    act::act(api, ctx, key, reached.target(), plan).await
}
