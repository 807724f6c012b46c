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
use super::credentials::{Pinned, pin_copy, read_value};
use crate::controller::admin_route;
use crate::controller::garage_access::{admin_token, pod_client, running_ip};
use crate::controller::ownership::{self, Resolved};
use crate::controller::write::{self, ensure, ensure_immutable};
use crate::controller::{Context, Error, finalizer};
use crate::desired::secrets::SecretSource;
use crate::desired::{
    DesiredError, Settings, config, credentials, edge, labels, network_policy, pdb, secrets,
};
use decide::cluster::edge::{self as decide_edge, Facts, Joins};
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
        Converged::Written {
            token,
            held,
            view,
            remote,
        } => (None, Some((token, held, view, remote))),
        Converged::Blocked(why, message) => (Some((why, message)), None),
        Converged::Restart => return Ok(Action::requeue(std::time::Duration::ZERO)),
    };
    let answered = match &written {
        Some((token, ..)) => identities(cluster, ctx, &pods, token).await?,
        None => Vec::new(),
    };
    let previous = cluster
        .status
        .as_ref()
        .and_then(|st| st.nodes.clone())
        .unwrap_or_default();
    let held = written.as_ref().map(|(_, held, ..)| *held);
    let name = cluster.name_any();
    // Members beyond the count asked for are on their way out: they do not make it Ready.
    let ready = pods
        .iter()
        .filter(|p| decide::pods::is_ready(p))
        .filter(|p| decide_edge::ordinal(&name, &p.name_any()).is_some_and(|i| i < wanted))
        .count();
    let present: Vec<String> = pods.iter().map(ResourceExt::name_any).collect();
    let roles = match &written {
        Some((_, _, Some(view), _)) => Some(view.layout.roles.as_slice()),
        _ => None,
    };
    let nodes = decide_edge::recorded_nodes(&previous, answered, &present, roles);
    let degraded = match &written {
        Some((_, _, view, _)) => {
            decide_edge::layout_degraded(&name, wanted, &nodes, view.as_ref().map(|v| &v.layout))
        }
        None => None,
    };
    let connected = match &written {
        Some((token, _, view, remote)) => {
            if let (Some(admin), Some(view)) = (remote, view) {
                super::remote_edge::join(cluster, ctx, (&pods, &nodes), token, admin, view).await?;
            }
            decide_edge::connection(&nodes, view.as_ref().map(|v| &v.status))
        }
        None => None,
    };
    let facts = Facts {
        wanted,
        ready: u32::try_from(ready).unwrap_or(u32::MAX),
        held: held.unwrap_or(wanted),
        blocked,
        nodes,
        connected,
        degraded,
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
    let storage_name = match decide_edge::joins(cluster) {
        Ok(Joins::Cluster(name)) => name,
        Ok(Joins::Remote { url, token, .. }) => {
            return super::remote_edge::retire_roles(cluster, ctx, url, &token).await;
        }
        Err(_) => return Ok(None),
    };
    let Resolved::Managed(storage) = ownership::resolve(ctx, &ns, &storage_name).await? else {
        return Ok(None);
    };
    if storage.metadata.deletion_timestamp.is_some() {
        return Ok(None);
    }
    let Some(view) = storage_view(&storage, ctx).await? else {
        return Ok(Some(format!(
            "deleting: waiting for the layout of GarageCluster {storage_name} to be readable, to retire this edge's roles before its gateways stop (deleting that cluster releases this one)"
        )));
    };
    Ok(still_held(
        cluster,
        &view,
        &format!("GarageCluster {storage_name}"),
    ))
}

/// Why a deleting edge still waits on the layout `view` of `storage` (named for the
/// message): a role of its own is in it, or the layout without them has not settled.
pub(super) fn still_held(
    cluster: &GarageCluster,
    view: &StorageView,
    storage: &str,
) -> Option<String> {
    let uid = cluster.metadata.uid.as_deref().unwrap_or_default();
    let held = view
        .layout
        .roles
        .iter()
        .filter(|r| decide_edge::holds_roles(std::slice::from_ref(*r), uid))
        .count();
    match (held, view.settled) {
        (0, true) => None,
        (0, false) => Some(format!(
            "deleting: waiting for the layout history of {storage} to settle before this edge's gateways stop"
        )),
        (n, _) => Some(format!(
            "deleting: waiting for {n} role(s) of this edge to leave the layout of {storage}"
        )),
    }
}

/// What the edge reads of its storage cluster's Garage each pass.
pub(super) struct StorageView {
    /// `GetClusterLayout`.
    pub layout: garage_admin::ClusterLayout,
    /// Every node acknowledged the current layout version.
    pub settled: bool,
    /// `GetClusterStatus`: which members that cluster sees up.
    pub status: garage_admin::ClusterStatus,
}

/// The layout, history and status `admin` answers with; `None` when one of them fails.
pub(super) async fn read_view(admin: &garage_admin::AdminClient) -> Option<StorageView> {
    match (
        admin.layout().await,
        admin.layout_history().await,
        admin.cluster_status().await,
    ) {
        (Ok(layout), Ok(history), Ok(status)) => Some(StorageView {
            layout,
            settled: history.is_settled(),
            status,
        }),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            tracing::debug!(error = %e, "the storage cluster's layout cannot be read");
            None
        }
    }
}

/// [`read_view`] through one of the sibling storage cluster's pods.
async fn storage_view(
    storage: &GarageCluster,
    ctx: &Context,
) -> Result<Option<StorageView>, Error> {
    let Ok(route) = admin_route::route(ctx, storage, true).await? else {
        return Ok(None);
    };
    Ok(read_view(&route.admin).await)
}

/// Where the edge's pass stands once it has written what it could.
pub(super) enum Converged {
    /// Its objects are written; its pods mount this admin token, and its StatefulSet runs
    /// `held` pods.
    Written {
        /// The admin token the pods mount.
        token: SecretSource,
        /// Pods the StatefulSet runs ([`decide_edge::held_replicas`]).
        held: u32,
        /// The storage cluster's Garage as read this pass, when it answered.
        view: Option<Box<StorageView>>,
        /// The remote storage cluster's Admin API, through which the edge writes its
        /// members' roles itself (none for a sibling's edge, whose roles the sibling writes).
        remote: Option<Box<garage_admin::AdminClient>>,
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
    match decide_edge::joins(cluster) {
        Err(e) => Ok(e.into()),
        Ok(Joins::Cluster(name)) => converge_sibling(cluster, ctx, pods, name).await,
        Ok(Joins::Remote { url, token, rpc }) => {
            super::remote_edge::converge(cluster, ctx, pods, url, &token, &rpc).await
        }
    }
}

/// [`converge`] for the edge of the storage GarageCluster `storage_name` of its namespace.
async fn converge_sibling(
    cluster: &GarageCluster,
    ctx: &Context,
    pods: &[Pod],
    storage_name: String,
) -> Result<Converged, Error> {
    let ns = cluster.namespace().unwrap_or_default();
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
    let view = storage_view(&storage, ctx).await?;
    let rpc = secrets::rpc_secret_source(&storage, &storage_settings);
    finish(cluster, &mut s, ctx, pods, (&rpc, token), view, None).await
}

/// Writes the edge's objects once its credentials are known (`rpc` and the admin `token` its
/// pods mount), keeping members scaled away running until their roles are retired and
/// settled in `view`.
pub(super) async fn finish(
    cluster: &GarageCluster,
    s: &mut Settings,
    ctx: &Context,
    pods: &[Pod],
    (rpc, token): (&SecretSource, SecretSource),
    view: Option<StorageView>,
    remote: Option<garage_admin::AdminClient>,
) -> Result<Converged, Error> {
    let recorded = cluster
        .status
        .as_ref()
        .and_then(|st| st.nodes.clone())
        .unwrap_or_default();
    let names: Vec<String> = pods.iter().map(ResourceExt::name_any).collect();
    s.gateway_replicas = decide_edge::held_replicas(
        &s.name,
        s.gateway_replicas,
        &names,
        &recorded,
        view.as_ref()
            .map(|v| (v.layout.roles.as_slice(), v.settled)),
    );
    match write_objects(cluster, s, ctx, rpc, &token).await? {
        Ok(()) => Ok(Converged::Written {
            token,
            held: s.gateway_replicas,
            view: view.map(Box::new),
            remote: remote.map(Box::new),
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
    let storage_rpc = read_value(&secrets_api, &secrets::rpc_secret_source(storage, t)).await?;
    for (field, source) in decide_edge::named_rpc_secrets(cluster) {
        let named = read_value(&secrets_api, &source).await?;
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

/// Writes the edge's config revision, Services, budget, NetworkPolicy and StatefulSet; `Err`
/// with why they cannot be rendered, writing nothing then.
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
    // The install's NetworkPolicy, as over a storage cluster's pods: its storage peers are
    // not its own pods, so the RPC port admits every source (`members_outside`).
    let policy = match network_policy::plan(
        cluster,
        s,
        ctx.config.garage_network_policy.as_ref(),
        &[],
        false,
    ) {
        Ok(p) => p,
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
    let pdb_api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &ns);
    match &budget {
        Some(b) => {
            ensure(&pdb_api, m, b, uid, write::metadata_and_spec).await?;
        }
        None => {
            let name = crate::names::gateway_service(&s.name);
            write::remove_controlled(&pdb_api, m, &name, uid).await?;
        }
    }
    super::network_policy::converge(&policy, &ns, uid, ctx).await?;
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
