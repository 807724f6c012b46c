//! Where controllers meet the ownership decision: the GarageCluster controller on the object
//! it reconciles ([`admit`]), every other controller when it looks its cluster up
//! ([`resolve`]), which is the only way they read one to act on.

use std::time::{Duration, Instant};

use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::garage_cluster::v1beta2::GarageCluster;

use crate::controller::{Context, Error};
use decide::note::Note;
use decide::ownership::{
    REASON_MANAGED_BY_ANOTHER_INSTALL, Role, Step, claim_patch, decide, handover_message, next,
};

/// How soon a controller waiting for its cluster to be claimed looks again.
pub const UNCLAIMED_RECHECK: Duration = Duration::from_secs(10);

/// Whether a pass may go on with a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// This install manages the cluster.
    Proceed,
    /// The pass ends here without a further write; the action says when to look again.
    Stop(Action),
}

/// The cluster a member controller works for.
#[derive(Debug)]
pub enum Resolved {
    /// No such GarageCluster.
    Absent,
    /// It exists and this install manages it.
    Managed(Box<GarageCluster>),
    /// It exists and this install must not act for it; the pass ends with the action.
    HandsOff(Action),
}

/// The ownership gate of a controller in `role` on `cluster`: records the claim where it is
/// the [`Role::Manager`]'s to make, warns once where another install manages the cluster.
pub async fn admit(cluster: &GarageCluster, role: Role, ctx: &Context) -> Result<Admission, Error> {
    let me = &ctx.config.install;
    match next(decide(cluster.annotations(), me), role) {
        Step::Go => Ok(Admission::Proceed),
        Step::Record => {
            record(cluster, ctx).await?;
            // The write changes the object: the next pass starts from the record.
            Ok(Admission::Stop(Action::await_change()))
        }
        Step::Wait => {
            tracing::info!(
                namespace = %cluster.namespace().unwrap_or_default(),
                cluster = %cluster.name_any(),
                install = %me,
                "no install has claimed this GarageCluster yet; waiting for its GarageCluster controller"
            );
            Ok(Admission::Stop(Action::requeue(UNCLAIMED_RECHECK)))
        }
        Step::HandsOff(other) => {
            warn(cluster, &other, ctx).await;
            // A hand-over edits the cluster, which starts a pass of its controller; the
            // requeue is for the members, which do not watch it, and for the repeated Event.
            Ok(Admission::Stop(Action::requeue(ctx.config.resync)))
        }
    }
}

/// The GarageCluster `name` in `namespace`, for a [`Role::Member`] controller: read from the
/// API server (not a cache, so a hand-over is seen at once) and passed through [`admit`].
pub async fn resolve(ctx: &Context, namespace: &str, name: &str) -> Result<Resolved, Error> {
    let Some(cluster) = Api::<GarageCluster>::namespaced(ctx.client.clone(), namespace)
        .get_opt(name)
        .await?
    else {
        return Ok(Resolved::Absent);
    };
    Ok(match admit(&cluster, Role::Member, ctx).await? {
        Admission::Proceed => Resolved::Managed(Box::new(cluster)),
        Admission::Stop(action) => Resolved::HandsOff(action),
    })
}

/// Records this install on `cluster`, conditional on the resourceVersion it was read at.
async fn record(cluster: &GarageCluster, ctx: &Context) -> Result<(), Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let me = &ctx.config.install;
    let Some(patch) = claim_patch(cluster.resource_version().as_deref(), me) else {
        return Err(Error::Unsafe(format!(
            "GarageCluster {ns}/{name} was read without a resourceVersion; its install is not recorded"
        )));
    };
    let api: Api<GarageCluster> = Api::namespaced(ctx.client.clone(), &ns);
    ctx.metrics.wrote();
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
        .await
    {
        Ok(_) => {
            tracing::info!(namespace = %ns, cluster = %name, install = %me, "GarageCluster claimed for this install");
            Ok(())
        }
        // Someone wrote first (perhaps another install's claim): decide again from the
        // object as it is now.
        Err(kube::Error::Api(e)) if e.code == 409 => {
            Err(Error::Stale(format!("GarageCluster {ns}/{name}")))
        }
        Err(e) => Err(e.into()),
    }
}

/// Logs that `other` manages `cluster` and, when one is due, publishes the Warning Event.
async fn warn(cluster: &GarageCluster, other: &str, ctx: &Context) {
    let ns = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let me = &ctx.config.install;
    tracing::info!(namespace = %ns, cluster = %name, install = %me, managed_by = other, "GarageCluster managed by another install; nothing is written for it");
    let due = ctx.ownership_warnings.admit(
        &cluster.uid().unwrap_or_default(),
        cluster.metadata.generation,
        other,
        Instant::now(),
    );
    if due {
        let note = Note::warning(
            REASON_MANAGED_BY_ANOTHER_INSTALL,
            "Reconcile",
            handover_message(&ns, &name, other, me),
        );
        ctx.events.publish(cluster, &[note]).await;
    }
}
