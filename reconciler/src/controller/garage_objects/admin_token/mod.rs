//! The GarageAdminToken controller: a static Admin API bearer in an
//! immutable Secret that the GarageCluster mounts through `spec.admin.adminTokenSecretRef`.
//! The token is generated once; an existing Secret is never regenerated or adopted, because
//! the bytes in it are what the running Garage processes trust.
//!
//! A pass is observe ([`observe`]) → plan ([`plan`], pure) → act ([`act`]).

pub mod act;
pub mod observe;
pub mod plan;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::garage_admin_token::GarageAdminToken;
use shared_types::keys::finalizer as finalizers;

use crate::controller::ownership::{self, Resolved};
use crate::controller::{Context, Error, finalizer};

/// Controller name (metrics, logs).
pub const CONTROLLER: &str = "garageadmintoken";

/// `credential-kind` of the Secrets this controller writes.
pub const STATIC_BOOTSTRAP: &str = "static-bootstrap";

/// The Secret name and the data key of the token.
pub fn secret_location(t: &GarageAdminToken) -> (String, String) {
    let template = t.spec.secret_template.as_ref();
    let name = template
        .and_then(|s| s.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| t.name_any());
    let key = template
        .and_then(|s| s.token_key.clone())
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| "admin-token".into());
    (name, key)
}

/// What is wrong with the spec, if anything; these fields exist for compatibility only.
pub fn spec_problem(t: &GarageAdminToken) -> Option<String> {
    let ns = t.namespace().unwrap_or_default();
    if t.spec
        .cluster_ref
        .namespace
        .as_deref()
        .is_some_and(|n| !n.is_empty() && n != ns)
    {
        return Some(format!(
            "spec.clusterRef.namespace must be empty or {ns}: an admin token never serves a cluster in another namespace"
        ));
    }
    if t.spec.name.as_deref().is_some_and(|n| !n.is_empty()) {
        return Some("spec.name is not supported: the token is a static bearer with no Garage-side name; remove it".into());
    }
    if t.spec.expires_at.is_some() {
        return Some("spec.expiresAt is not supported: a static bearer cannot expire; remove it and delete the object to retire the token".into());
    }
    None
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
