//! The GarageBucket controller: the bucket in Garage, found or created
//! crash-safely through a reservation alias bound to the object's UID, its global and local
//! aliases, quotas, website and lifecycle rules, and the key grants it declares (see
//! [`decide::garage_objects::access`]). A bucket is deleted with its object only when it is empty.
//!
//! A pass is observe ([`observe`]) → plan ([`operations`], pure, in the `decide` crate, with
//! the settings in [`decide::garage_objects::bucket::plan`] and the status of a converged
//! bucket in [`decide::garage_objects::bucket::status`]) → act ([`act`]).

pub mod act;
pub mod health;
pub mod observe;

use std::sync::Arc;

use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_reference_grant::GrantFromKind;
use shared_types::keys::finalizer as finalizers;

use self::act::Acted;
use super::Stores;
use super::reach::{Reach, reach};
use crate::controller::{Context, Error, finalizer};
use decide::garage_objects::bucket::operations;
use decide::garage_objects::outcome;

/// Controller name (metrics, logs).
pub const CONTROLLER: &str = "garagebucket";

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
    let reached = reach(
        &ctx,
        GrantFromKind::GarageBucket,
        &ns,
        &bucket.spec.cluster_ref,
        false,
    )
    .await?;
    let target = match reached {
        Reach::Ready(t) => t,
        Reach::HandsOff(action) => return Ok(action),
        Reach::Gone => {
            let (reason, message) = outcome::cluster_missing(&bucket.spec.cluster_ref.name);
            let plan = operations::waiting(&bucket, Vec::new(), reason, message);
            return done(act::act(&api, &ctx, &bucket, None, plan).await?);
        }
        Reach::Waiting { reason, message } => {
            let plan = operations::waiting(&bucket, Vec::new(), reason, message);
            return done(act::act(&api, &ctx, &bucket, None, plan).await?);
        }
    };
    // Only now, with the cluster reached and managed by this install: a foreign install adds
    // nothing to an object whose clean-up is another install's.
    finalizer::set(
        &api,
        &ctx.metrics,
        &*bucket,
        finalizers::FINALIZER_BUCKET,
        true,
    )
    .await?;
    let mut bucket = (*bucket).clone();
    // A bucket created by the first round is observed again by the second, by its ID.
    for _ in 0..2 {
        let observed = observe::observe(&ctx, &stores, &bucket, &target).await?;
        let plan = operations::plan(&observed);
        match act::act(&api, &ctx, &bucket, Some(&target), plan).await? {
            Acted::Done(action) => return Ok(action),
            Acted::Created(status) => bucket.status = Some(*status),
        }
    }
    Err(Error::Unsafe(format!(
        "GarageBucket {ns}/{} was created twice in one pass",
        bucket.name_any()
    )))
}

fn done(acted: Acted) -> Result<Action, Error> {
    match acted {
        Acted::Done(action) => Ok(action),
        Acted::Created(_) => Err(Error::Unsafe(
            "a waiting bucket's plan created a bucket".into(),
        )),
    }
}

/// Deletion, as [`operations::deletion`] decides it.
async fn finalize(
    bucket: &GarageBucket,
    ctx: &Context,
    api: &Api<GarageBucket>,
) -> Result<Action, Error> {
    if !finalizer::has(bucket, finalizers::FINALIZER_BUCKET) {
        return Ok(Action::await_change());
    }
    let ns = bucket.namespace().unwrap_or_default();
    let reached = reach(
        ctx,
        GrantFromKind::GarageBucket,
        &ns,
        &bucket.spec.cluster_ref,
        true,
    )
    .await?;
    let reached = match reached.for_cleanup() {
        Ok(reached) => reached,
        Err(action) => return Ok(action),
    };
    let observed = observe::observe_deletion(ctx, bucket, &reached).await?;
    let plan = operations::deletion(&observed);
    done(act::act(api, ctx, bucket, reached.target(), plan).await?)
}
