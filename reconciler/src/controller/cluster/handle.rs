//! The pass over a management handle ([`decide::cluster::handle`]): prove that the Admin API
//! it leads to answers, and say so in its status. It creates nothing, and holds no finalizer:
//! deleting it leaves the Garage cluster behind it as it is.

use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::finalizer::FINALIZER_CLUSTER;

use super::act::publish_owning;
use crate::controller::admin_route::{self, Blocked};
use crate::controller::{Context, Error, finalizer};
use crate::garage::GarageError;
use decide::cluster::handle::{self, OWNED, Probe};

/// One pass over the handle `cluster`. It holds no finalizer: one an earlier version (or the
/// Go operator) added is removed, so that deleting the handle never runs a cluster teardown.
pub async fn reconcile(cluster: &GarageCluster, ctx: &Context) -> Result<Action, Error> {
    if finalizer::has(cluster, FINALIZER_CLUSTER) {
        let api: Api<GarageCluster> =
            Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
        finalizer::set(&api, &ctx.metrics, cluster, FINALIZER_CLUSTER, false).await?;
        return Ok(Action::await_change());
    }
    if cluster.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    if let Some(cause) = decide::suspension::of_cluster(cluster) {
        super::act::publish_only(cluster, ctx, &cause.condition()).await?;
        return Ok(Action::requeue(ctx.config.resync));
    }
    run(cluster, ctx).await
}

/// The pass over a live, unsuspended handle.
async fn run(cluster: &GarageCluster, ctx: &Context) -> Result<Action, Error> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_health_read_never_repeats_what_answered() {
        let planted = "internal-dashboard-body-4f2a";
        let cases = [
            GarageError::Http {
                endpoint: "GetClusterHealth",
                status: 404,
                code: String::new(),
                message: format!("<html>{planted}</html>"),
            },
            GarageError::Forbidden {
                endpoint: "GetClusterHealth",
                status: 403,
                code: "Forbidden".into(),
                message: planted.into(),
            },
            GarageError::Unavailable {
                endpoint: "GetClusterHealth",
                code: "ServiceUnavailable".into(),
                message: planted.into(),
            },
            GarageError::InvalidResponse {
                endpoint: "GetClusterHealth",
                reason: planted.into(),
            },
        ];
        for e in cases {
            let said = unanswered(&e);
            assert!(!said.contains(planted), "{said}");
            assert!(said.starts_with("GetClusterHealth"), "{said}");
        }
        let refused = unanswered(&GarageError::Forbidden {
            endpoint: "GetClusterHealth",
            status: 401,
            code: String::new(),
            message: String::new(),
        });
        assert!(refused.contains("adminTokenSecretRef"), "{refused}");
    }
}
