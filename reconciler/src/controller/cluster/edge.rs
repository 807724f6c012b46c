//! The pass over an edge gateway ([`decide::desired::edge`], [`decide::cluster::edge`]): its
//! config revision, StatefulSet, Services and budget, mounting the storage cluster's RPC
//! secret and admin token (an edge joins that cluster, so it runs with its credentials), and
//! its status. The roles of its members are the storage cluster's pass to write.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::ListParams;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::garage_cluster::v1beta2::{GarageCluster, NodeStatus};
use shared_types::keys::finalizer::FINALIZER_CLUSTER;

use super::act::publish_owning;
use super::credentials::{Pinned, pin_copy, value_of};
use crate::controller::admin_route;
use crate::controller::garage_access::{admin_token, pod_client, running_ip};
use crate::controller::ownership::{self, Resolved};
use crate::controller::write::{self, ensure, ensure_immutable};
use crate::controller::{Context, Error, finalizer};
use crate::desired::secrets::SecretSource;
use crate::desired::{DesiredError, Settings, config, credentials, edge, labels, pdb, secrets};
use decide::cluster::edge::{self as decide_edge, Facts};
use shared_types::conditions::reason;

/// One pass over the edge gateway `cluster`.
pub async fn reconcile(cluster: &GarageCluster, ctx: &Context) -> Result<Action, Error> {
    let ns = cluster.namespace().unwrap_or_default();
    if cluster.metadata.deletion_timestamp.is_some() {
        if !finalizer::has(cluster, FINALIZER_CLUSTER) {
            return Ok(Action::await_change());
        }
        // The storage cluster's pass removes the roles of a deleting edge; the edge goes once
        // they are gone. Its objects are owned by it and go with it.
        if let Some(waiting) = roles_remain(cluster, ctx).await? {
            let condition = decide::conditions::Desired {
                type_: shared_types::conditions::common::CONDITION_READY,
                status: false,
                reason: reason::REASON_WAITING_FOR_DEPENDENCY,
                message: waiting,
            };
            super::act::publish_only(cluster, ctx, &condition).await?;
            return Ok(Action::requeue(ctx.config.short_requeue));
        }
        let api: Api<GarageCluster> = Api::namespaced(ctx.client.clone(), &ns);
        finalizer::set(&api, &ctx.metrics, cluster, FINALIZER_CLUSTER, false).await?;
        return Ok(Action::await_change());
    }
    if !finalizer::has(cluster, FINALIZER_CLUSTER) {
        let api: Api<GarageCluster> = Api::namespaced(ctx.client.clone(), &ns);
        finalizer::set(&api, &ctx.metrics, cluster, FINALIZER_CLUSTER, true).await?;
        return Ok(Action::await_change());
    }
    if let Some(cause) = decide::suspension::of_cluster(cluster) {
        super::act::publish_only(cluster, ctx, &cause.condition()).await?;
        return Ok(Action::requeue(ctx.config.resync));
    }
    let pods =
        Api::<Pod>::namespaced(ctx.client.clone(), &ns)
            .list(&ListParams::default().labels(&labels::selector_string(
                &labels::gateway_selector(&cluster.name_any()),
            )))
            .await?
            .items;
    let wanted = decide_edge::wanted_members(cluster).unwrap_or(0);
    let (blocked, written) = match converge(cluster, ctx, &pods).await? {
        Converged::Written { token, held } => (None, Some((token, held))),
        Converged::Blocked(why, message) => (Some((why, message)), None),
        Converged::Restart => return Ok(Action::requeue(std::time::Duration::ZERO)),
    };
    let answered = match &written {
        Some((token, _)) => identities(cluster, ctx, &pods, token).await?,
        None => Vec::new(),
    };
    let previous = cluster
        .status
        .as_ref()
        .and_then(|st| st.nodes.clone())
        .unwrap_or_default();
    let held = written.as_ref().map(|(_, held)| *held);
    let name = cluster.name_any();
    // Members beyond the count asked for are on their way out: they do not make it Ready.
    let ready = pods
        .iter()
        .filter(|p| decide::pods::is_ready(p))
        .filter(|p| decide_edge::ordinal(&name, &p.name_any()).is_some_and(|i| i < wanted))
        .count();
    let facts = Facts {
        wanted,
        ready: u32::try_from(ready).unwrap_or(u32::MAX),
        held: held.unwrap_or(wanted),
        blocked,
        nodes: decide_edge::recorded_nodes(&name, &previous, answered, held),
    };
    let (status, conditions, requeue) = decide_edge::status(
        &cluster.name_any(),
        &facts,
        ctx.config.resync,
        ctx.config.short_requeue,
    );
    publish_owning(cluster, ctx, status, &conditions, decide_edge::OWNED).await?;
    Ok(Action::requeue(requeue))
}

/// Why the edge still waits to go: while the storage cluster's layout holds a role of the
/// edge, or the layout without them is not settled yet (its pods must see it before they
/// stop), or cannot be read. `None` once it may go: also when the storage cluster is gone or
/// being deleted itself, since its layout then outlives no one.
async fn roles_remain(cluster: &GarageCluster, ctx: &Context) -> Result<Option<String>, Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let Ok(storage_name) = decide_edge::storage_cluster(cluster) else {
        return Ok(None);
    };
    let Resolved::Managed(storage) = ownership::resolve(ctx, &ns, &storage_name).await? else {
        return Ok(None);
    };
    if storage.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let Some((roles, settled)) = storage_layout(&storage, ctx).await? else {
        return Ok(Some(format!(
            "deleting: waiting for the layout of GarageCluster {storage_name} to be readable, to retire this edge's roles before its gateways stop (deleting that cluster releases this one)"
        )));
    };
    let uid = cluster.metadata.uid.as_deref().unwrap_or_default();
    let held = roles
        .iter()
        .filter(|r| decide_edge::holds_roles(std::slice::from_ref(*r), uid))
        .count();
    Ok(match (held, settled) {
        (0, true) => None,
        (0, false) => Some(format!(
            "deleting: waiting for the layout history of GarageCluster {storage_name} to settle before this edge's gateways stop"
        )),
        (n, _) => Some(format!(
            "deleting: waiting for GarageCluster {storage_name} to retire {n} role(s) of this edge"
        )),
    })
}

/// The storage cluster's layout roles and whether its history is settled; `None` when it
/// cannot be read.
async fn storage_layout(
    storage: &GarageCluster,
    ctx: &Context,
) -> Result<Option<(Vec<garage_admin::LayoutRole>, bool)>, Error> {
    let Ok(route) = admin_route::route(ctx, storage, true).await? else {
        return Ok(None);
    };
    match (
        route.admin.layout().await,
        route.admin.layout_history().await,
    ) {
        (Ok(layout), Ok(history)) => Ok(Some((layout.roles, history.is_settled()))),
        (Err(e), _) | (_, Err(e)) => {
            tracing::debug!(error = %e, "the storage cluster's layout cannot be read");
            Ok(None)
        }
    }
}

/// Where the edge's pass stands once it has written what it could.
enum Converged {
    /// Its objects are written; its pods mount this admin token, and its StatefulSet runs
    /// `held` pods.
    Written {
        /// The admin token the pods mount.
        token: SecretSource,
        /// Pods the StatefulSet runs ([`decide_edge::held_replicas`]).
        held: u32,
    },
    /// It may not run, or not yet: the reason and a message naming what to do.
    Blocked(&'static str, String),
    /// The edge object itself changed (its credentials copy was named): the pass starts
    /// again from the new object.
    Restart,
}

impl From<DesiredError> for Converged {
    fn from(e: DesiredError) -> Self {
        Self::Blocked(e.reported_as().0, e.to_string())
    }
}

/// Renders and writes the edge's objects, and says which admin token its pods mount; writes
/// nothing when it may not.
async fn converge(
    cluster: &GarageCluster,
    ctx: &Context,
    pods: &[Pod],
) -> Result<Converged, Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let storage_name = match decide_edge::storage_cluster(cluster) {
        Ok(n) => n,
        Err(e) => return Ok(e.into()),
    };
    let storage = match ownership::resolve(ctx, &ns, &storage_name).await? {
        Resolved::Managed(c) => *c,
        Resolved::Absent | Resolved::HandsOff(_) => {
            return Ok(DesiredError::Invalid {
                field: "spec.connectTo.clusterRef",
                message: format!(
                    "GarageCluster {ns}/{storage_name} does not exist or is managed by another install"
                ),
            }
            .into());
        }
    };
    let (mut s, storage_settings) = match (
        Settings::from_edge(cluster),
        Settings::from_cluster(&storage),
    ) {
        (Ok(s), Ok(t)) => (s, t),
        (Err(e), _) | (_, Err(e)) => return Ok(e.into()),
    };
    s.use_default_image(cluster, ctx.config.default_garage_image.as_deref());
    if let Some(e) = decide_edge::mismatch(&s, &storage_settings) {
        return Ok(e.into());
    }
    let token = match credentials(cluster, &s, &storage, &storage_settings, ctx).await? {
        Ok(token) => token,
        Err(waiting) => return Ok(waiting),
    };
    // Members scaled away keep running until their roles are retired and settled.
    let recorded = cluster
        .status
        .as_ref()
        .and_then(|st| st.nodes.clone())
        .unwrap_or_default();
    let layout = storage_layout(&storage, ctx).await?;
    let names: Vec<String> = pods.iter().map(ResourceExt::name_any).collect();
    s.gateway_replicas = decide_edge::held_replicas(
        &s.name,
        s.gateway_replicas,
        &names,
        &recorded,
        layout.as_ref().map(|(r, settled)| (r.as_slice(), *settled)),
    );
    let rpc = secrets::rpc_secret_source(&storage, &storage_settings);
    match write_objects(cluster, &s, ctx, &rpc, &token).await? {
        Ok(()) => Ok(Converged::Written {
            token,
            held: s.gateway_replicas,
        }),
        Err(e) => Ok(e.into()),
    }
}

/// The credentials the edge's pods run with. The RPC secret is always the storage cluster's
/// (each RPC secret the edge names must hold that same secret); the admin and metrics tokens
/// are the edge's own when it names them, copied like a storage cluster's, else the storage
/// cluster's admin token.
async fn credentials(
    cluster: &GarageCluster,
    s: &Settings,
    storage: &GarageCluster,
    t: &Settings,
    ctx: &Context,
) -> Result<Result<SecretSource, Converged>, Error> {
    let secrets_api: Api<Secret> = Api::namespaced(ctx.client.clone(), &s.namespace);
    let read = |source: SecretSource| {
        let api = secrets_api.clone();
        async move {
            Ok::<_, Error>(
                api.get_opt(&source.name)
                    .await?
                    .and_then(|sec| value_of(&sec, &source.key)),
            )
        }
    };
    let storage_rpc = read(secrets::rpc_secret_source(storage, t)).await?;
    for (field, source) in decide_edge::named_rpc_secrets(cluster) {
        let named = read(source.clone()).await?;
        if let Some((why, message)) =
            decide_edge::rpc_disagreement(field, &source, named.as_deref(), storage_rpc.as_deref())
        {
            return Ok(Err(Converged::Blocked(why, message)));
        }
    }
    if credentials::parts(cluster).is_empty() {
        return Ok(Ok(secrets::admin_token_source(storage, t)));
    }
    let Some(rpc_value) = storage_rpc else {
        return Ok(Err(Converged::Blocked(
            reason::REASON_WAITING_FOR_DEPENDENCY,
            "waiting for the storage cluster's RPC secret to be made".into(),
        )));
    };
    if pin_copy(cluster, s, ctx, &rpc_value).await? == Pinned::Annotated {
        return Ok(Err(Converged::Restart));
    }
    if !credentials::pinned(cluster, s) {
        let waiting = credentials::waiting(cluster);
        return Ok(Err(Converged::Blocked(waiting.reason, waiting.message)));
    }
    Ok(Ok(if secrets::admin_token_user_source(cluster).is_some() {
        secrets::admin_token_source(cluster, s)
    } else {
        secrets::admin_token_source(storage, t)
    }))
}

/// Writes the edge's config revision, Services, budget and StatefulSet; `Err` with why they
/// cannot be rendered, writing nothing then.
async fn write_objects(
    cluster: &GarageCluster,
    s: &Settings,
    ctx: &Context,
    rpc: &SecretSource,
    token: &SecretSource,
) -> Result<Result<(), DesiredError>, Error> {
    let ns = s.namespace.clone();
    let revision = match config::revision(cluster, s) {
        Ok(r) => r,
        Err(e) => return Ok(Err(e)),
    };
    let set = match edge::statefulset(cluster, s, &revision, rpc, token) {
        Ok(set) => set,
        Err(e) => return Ok(Err(e)),
    };
    let services = match edge::services(cluster, s) {
        Ok(v) => v,
        Err(e) => return Ok(Err(e)),
    };
    let budget = match pdb::gateway_pdb(cluster, s, s.gateway_replicas) {
        Ok(b) => b,
        Err(e) => return Ok(Err(e)),
    };
    let (client, m, uid) = (&ctx.client, &ctx.metrics, s.uid.as_str());
    let body = revision.config_map.data.clone();
    ensure_immutable(
        &Api::<ConfigMap>::namespaced(client.clone(), &ns),
        m,
        &revision.config_map,
        uid,
        |live| live.data == body,
    )
    .await?;
    let svc_api: Api<Service> = Api::namespaced(client.clone(), &ns);
    for svc in &services {
        ensure(&svc_api, m, svc, uid, write::metadata_and_spec).await?;
    }
    if let Some(b) = &budget {
        let pdb_api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &ns);
        ensure(&pdb_api, m, b, uid, write::metadata_and_spec).await?;
    }
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), &ns);
    ensure(&sets, m, &set, uid, write::statefulset_patch).await?;
    Ok(Ok(()))
}

/// The node ID each running pod of `pods` answers with at its own Admin API (with `token`,
/// the one the pods mount), which the storage cluster's pass gives a role; a pod that does
/// not answer is left out (it keeps what was recorded for it, [`decide_edge::recorded_nodes`]).
async fn identities(
    cluster: &GarageCluster,
    ctx: &Context,
    pods: &[Pod],
    token: &SecretSource,
) -> Result<Vec<NodeStatus>, Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let secrets_api = Api::<Secret>::namespaced(ctx.client.clone(), &ns);
    let Some(bearer) = admin_token(&secrets_api, token).await? else {
        return Ok(Vec::new());
    };
    let port = Settings::from_edge(cluster).map_or(3903, |s| s.admin_port);
    let zone = cluster
        .spec
        .zone
        .clone()
        .filter(|z| !z.is_empty())
        .unwrap_or_else(|| "default".into());
    let mut out = Vec::new();
    for pod in pods {
        let Some(ip) = running_ip(pod) else { continue };
        let client = pod_client(&ip, port, &bearer, ctx.config.admin_timeout)?;
        if let Ok(id) = client.local_node_id().await {
            out.push(NodeStatus {
                pod_name: Some(pod.name_any()),
                node_id: Some(id.to_string()),
                gateway: Some(true),
                tier: Some(shared_types::keys::label::value::TIER_GATEWAY.into()),
                zone: Some(zone.clone()),
                ..Default::default()
            });
        }
    }
    out.sort_by(|a, b| a.pod_name.cmp(&b.pod_name));
    Ok(out)
}
