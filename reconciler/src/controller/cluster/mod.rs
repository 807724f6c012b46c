//! GarageCluster controller: secrets, config revision, Services, PDB, the optional
//! NetworkPolicy of its Garage pods, the generated GarageNodes of the Auto storage group, the
//! layout of every storage member (it is the single writer of its cluster's layout), status,
//! and the teardown finalizer.
//!
//! A pass is observe ([`observe`]) → decide ([`decide::cluster::decision::decide`], no I/O)
//! → act ([`act`]), once the ownership gate ([`super::ownership`]) has found the cluster this
//! install's. The node-local pools' part of act is in [`super::pools`].

pub mod act;
pub mod credentials;
pub mod cycle;
mod edge;
mod gateways;
pub mod go_token;
mod handle;
pub mod member_status;
pub mod network_policy;
pub mod observe;
pub mod operations;
pub mod recovery;
mod remote_edge;
pub mod service_monitor;
pub mod teardown;
pub mod workers;

use std::sync::Arc;

use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::finalizer::FINALIZER_CLUSTER;

use decide::cluster::decision;
use decide::ownership::Role;

use super::ownership::{self, Admission};
use super::{Context, Error, finalizer};
use crate::desired::Settings;

/// The controller's name in metrics and logs.
pub const CONTROLLER: &str = "garagecluster";

/// One pass over a GarageCluster.
pub async fn reconcile(cluster: Arc<GarageCluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    // Before anything else, teardown included: a cluster another install manages gets no
    // write from this one, and an unclaimed one is claimed first.
    if let Admission::Stop(action) = ownership::admit(&cluster, Role::Manager, &ctx).await? {
        return Ok(action);
    }
    // A management handle runs nothing and tears nothing down, deleted or not.
    if decide::cluster::handle::is_handle(&cluster) {
        return handle::reconcile(&cluster, &ctx).await;
    }
    // An edge gateway runs its gateways; their roles are its storage cluster's to write.
    if decide::desired::edge::is_edge(&cluster) {
        return edge::reconcile(&cluster, &ctx).await;
    }
    if cluster.metadata.deletion_timestamp.is_some() {
        return teardown::run(&cluster, &ctx).await;
    }
    // A storage shape only the Go operator migrates gets nothing from this operator, not even
    // its finalizer: the user is told to go back to the Go operator.
    if let Some(refusal) = legacy_refusal(&cluster, &ctx).await? {
        act::publish_only(
            &cluster,
            &ctx,
            &decide::cluster::legacy::condition(&refusal),
        )
        .await?;
        return Ok(Action::requeue(ctx.config.resync));
    }
    if !finalizer::has(cluster.as_ref(), FINALIZER_CLUSTER) {
        let api: Api<GarageCluster> =
            Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
        finalizer::set(
            &api,
            &ctx.metrics,
            cluster.as_ref(),
            FINALIZER_CLUSTER,
            true,
        )
        .await?;
        // The write triggers the next pass with the finalizer in place.
        return Ok(Action::await_change());
    }
    // A suspended cluster gets no write but its condition; deletion above still proceeds.
    if let Some(cause) = decide::suspension::of_cluster(&cluster) {
        act::publish_only(&cluster, &ctx, &cause.condition()).await?;
        return Ok(Action::requeue(ctx.config.resync));
    }
    let settings = Settings::from_cluster(&cluster).map(|mut s| {
        s.use_default_image(&cluster, ctx.config.default_garage_image.as_deref());
        s
    });
    if let Ok(s) = &settings
        && credentials::pin(&cluster, s, &ctx).await? == credentials::Pinned::Annotated
    {
        // The next pass starts from the annotated object.
        return Ok(Action::await_change());
    }
    if let Ok(s) = &settings
        && !crate::desired::credentials::pinned(&cluster, s)
    {
        let waiting = crate::desired::credentials::waiting(&cluster);
        act::publish_only(&cluster, &ctx, &waiting).await?;
        return Ok(Action::requeue(ctx.config.short_requeue));
    }
    let (observed, access) = observe::observe(cluster.clone(), &settings, &ctx).await?;
    // The addresses members advertise through a publicEndpoint are its Services' ingress.
    let settings = settings.map(|mut s| {
        s.ingress = decide::desired::public_endpoint::ingress(&observed.services);
        s
    });
    // A factor the running pods cannot be rolled to is refused before anything is rendered.
    let settings = settings.and_then(|s| {
        match decide::cluster::factor::refused_change(&observed, s.replication_factor) {
            Some(e) => Err(e),
            None => Ok(s),
        }
    });
    let settings = match settings {
        Ok(s) => s,
        Err(e) => {
            let (status, wanted, requeue) = decision::refuse(&observed, &e, &ctx.config);
            act::publish(&cluster, &ctx, status, &wanted).await?;
            return Ok(Action::requeue(requeue));
        }
    };
    // Pods still running with reserved variables of a released Go operator hold everything
    // that would replace them or change what they run with.
    if let Some(e) = crate::controller::legacy_env::refusal(&cluster, &observed.pods, &ctx).await? {
        let (status, wanted, requeue) = decision::refuse(&observed, &e, &ctx.config);
        act::publish(&cluster, &ctx, status, &wanted).await?;
        return Ok(Action::requeue(requeue));
    }
    let decided = decision::decide(&observed, &settings, &ctx.config)?;
    let requeue = decided.requeue;
    if !act::act(&observed, &access, &settings, decided, &ctx).await? {
        return Ok(Action::await_change());
    }
    Ok(Action::requeue(requeue))
}

/// The refusal of a cluster still on (or still leaving) the Go operator's cluster-wide
/// StatefulSet, from that StatefulSet (one GET) and the cluster's own status.
async fn legacy_refusal(
    cluster: &GarageCluster,
    ctx: &Context,
) -> Result<Option<decide::desired::DesiredError>, Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let set = Api::<k8s_openapi::api::apps::v1::StatefulSet>::namespaced(ctx.client.clone(), &ns)
        .get_opt(&cluster.name_any())
        .await?;
    Ok(decide::cluster::legacy::refused(cluster, set.as_ref()))
}
