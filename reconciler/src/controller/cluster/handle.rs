//! The pass over a management handle ([`decide::cluster::handle`]): prove that the Admin API
//! it leads to answers, and say so in its status. It creates nothing, and holds no finalizer:
//! deleting it leaves the Garage cluster behind it as it is.

use kube::ResourceExt;
use kube::runtime::controller::Action;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use super::act::publish_owning;
use crate::controller::admin_route::{self, Blocked};
use crate::controller::{Context, Error};
use crate::garage::GarageError;
use decide::cluster::handle::{self, OWNED, Probe};

/// One pass over the handle `cluster`.
pub async fn run(cluster: &GarageCluster, ctx: &Context) -> Result<Action, Error> {
    let probe = probe(cluster, ctx).await?;
    let (status, wanted, requeue) = handle::status(
        &cluster.name_any(),
        &probe,
        ctx.config.resync,
        ctx.config.short_requeue,
    );
    publish_owning(cluster, ctx, status, &wanted, OWNED).await?;
    Ok(Action::requeue(requeue))
}

/// Asks the Admin API the handle leads to for Garage's health. Its answer, never the
/// bearer, is what the condition reports.
async fn probe(cluster: &GarageCluster, ctx: &Context) -> Result<Probe, Error> {
    let route = match admin_route::route(ctx, cluster, false).await? {
        Ok(route) => route,
        Err(Blocked::Invalid(e)) => return Ok(Probe::Invalid(e)),
        Err(Blocked::TokenMissing(m)) => return Ok(Probe::TokenMissing(m)),
        Err(Blocked::NotReady(m)) => return Ok(Probe::Referent(m)),
    };
    Ok(match route.admin.cluster_health().await {
        Ok(h) => Probe::Reached {
            health: Some(decide::cluster::status::health(&h)),
            admin_url: route.admin_url,
        },
        Err(e) => Probe::Unreachable(format!(
            "{}: {}",
            route.admin_url.as_deref().unwrap_or("the Admin API"),
            unanswered(&e)
        )),
    })
}

/// What a failed health read says about the URL, without repeating what answered: the URL
/// is the user's, so the body of whatever serves there must not reach a status others read.
fn unanswered(e: &GarageError) -> String {
    match e {
        GarageError::Timeout { .. } | GarageError::Transport { .. } => e.to_string(),
        GarageError::Forbidden { status, .. } => format!(
            "GetClusterHealth: the bearer was refused (HTTP {status}); check spec.connectTo.adminTokenSecretRef"
        ),
        GarageError::Http { status, .. } => format!("GetClusterHealth: answered HTTP {status}"),
        GarageError::Unavailable { .. } => "GetClusterHealth: answered HTTP 503".into(),
        _ => "GetClusterHealth: the answer is not a Garage Admin API v2 health answer (not repeated here)".into(),
    }
}
