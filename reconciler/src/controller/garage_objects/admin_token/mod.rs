//! The GarageAdminToken controller: a static Admin API bearer in an
//! immutable Secret that the GarageCluster mounts through `spec.admin.adminTokenSecretRef`.
//! The token is generated once; an existing Secret is never regenerated or adopted, because
//! the bytes in it are what the running Garage processes trust.
//!
//! A pass is observe ([`observe`]) → plan ([`plan`], pure, in the `decide` crate) → act
//! ([`act`]).

pub mod act;
pub mod observe;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::garage_admin_token::GarageAdminToken;
use shared_types::keys::finalizer as finalizers;

use crate::controller::ownership::{self, Resolved};
use crate::controller::{Context, Error, finalizer};
use decide::garage_objects::admin_token::plan::{self, PlanError};

/// Controller name (metrics, logs).
pub const CONTROLLER: &str = "garageadmintoken";

impl From<PlanError> for Error {
    /// A plan that cannot be made fails the pass under the reason and metric label of the
    /// same error raised here.
    fn from(e: PlanError) -> Self {
        match e {
            PlanError::Desired(e) => Error::Desired(e),
            PlanError::Unsafe(message) => Error::Unsafe(message),
        }
    }
}

/// One pass over a GarageAdminToken.
pub async fn reconcile(t: Arc<GarageAdminToken>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ns = t.namespace().unwrap_or_default();
    let api: Api<GarageAdminToken> = Api::namespaced(ctx.client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    // A token serves a cluster of its own namespace only (see `spec_problem`); one that
    // another install manages is that install's to serve, and to finalize.
    let cluster = match ownership::resolve(&ctx, &ns, &t.spec.cluster_ref.name).await? {
        Resolved::HandsOff(action) => return Ok(action),
        Resolved::Managed(cluster) => Some(*cluster),
        Resolved::Absent => None,
    };
    if t.metadata.deletion_timestamp.is_some() {
        if !finalizer::has(&*t, finalizers::FINALIZER_ADMIN_TOKEN) {
            return Ok(Action::await_change());
        }
        let secret = observe::secret(&t, &secrets).await?;
        let plan = plan::deletion(&t, secret.as_ref());
        return act::act(&api, &secrets, &ctx, &t, plan).await;
    }
    finalizer::set(
        &api,
        &ctx.metrics,
        &*t,
        finalizers::FINALIZER_ADMIN_TOKEN,
        true,
    )
    .await?;
    let observed = observe::observe(&t, cluster, &secrets).await?;
    let plan = plan::plan(&observed)?;
    act::act(&api, &secrets, &ctx, &t, plan).await
}
