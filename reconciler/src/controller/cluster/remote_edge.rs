//! The pass over an edge gateway of a Garage cluster outside this Kubernetes cluster
//! ([`Joins::Remote`](decide::cluster::edge::Joins::Remote)): its pods run with the RPC secret
//! it names, and since no pass of this install writes that cluster's layout, the edge writes
//! its own members' roles there through the Admin API URL it names, under the same rules a
//! sibling's edge gets from its storage cluster's pass (one version at a time, nothing beside
//! staged changes, a member stopped only once its role is out and the history settled).

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::{Api, ResourceExt};
use shared_types::conditions::reason;
use shared_types::garage_cluster::v1beta2::{GarageCluster, NodeStatus};

use super::credentials::{Pinned, pin_copy, read_value};
use super::edge::{Converged, StorageView, finish, read_view, still_held};
use crate::controller::admin_route::{self, Blocked, Route};
use crate::controller::garage_access::{admin_token, pod_client, running_ip};
use crate::controller::{Context, Error};
use crate::desired::secrets::SecretSource;
use crate::desired::{DesiredError, Settings, credentials, secrets};
use decide::cluster::edge as decide_edge;
use decide::cluster::observed::Edge;

/// The way to the remote Admin API at `url` with the bearer `token` holds, or the
/// [`Converged::Blocked`] saying why there is none.
async fn remote_route(
    cluster: &GarageCluster,
    ctx: &Context,
    url: String,
    token: &SecretSource,
) -> Result<Result<Route, Converged>, Error> {
    Ok(
        match admin_route::through_url(ctx, cluster, url, token).await? {
            Ok(route) => Ok(route),
            Err(Blocked::TokenMissing(m)) => {
                Err(Converged::Blocked(reason::REASON_ADMIN_TOKEN_MISSING, m))
            }
            Err(Blocked::Invalid(e)) => Err(e.into()),
            Err(Blocked::NotReady(m)) => {
                Err(Converged::Blocked(reason::REASON_CLUSTER_NOT_READY, m))
            }
        },
    )
}

/// Renders and writes the remote edge's objects: its pods mount the RPC secret `rpc` (every
/// RPC secret it names must hold the same one) and its own admin token's copy, or, when it
/// names none, the remote bearer `token`.
pub(super) async fn converge(
    cluster: &GarageCluster,
    ctx: &Context,
    pods: &[Pod],
    url: String,
    token: &SecretSource,
    rpc: &SecretSource,
) -> Result<Converged, Error> {
    let mut s = match Settings::from_edge(cluster) {
        Ok(s) => s,
        Err(e) => return Ok(e.into()),
    };
    s.use_default_image(cluster, ctx.config.default_garage_image.as_deref());
    let route = match remote_route(cluster, ctx, url, token).await? {
        Ok(route) => route,
        Err(blocked) => return Ok(blocked),
    };
    let secrets_api: Api<Secret> = Api::namespaced(ctx.client.clone(), &s.namespace);
    let rpc_value = read_value(&secrets_api, rpc).await?;
    for (field, source) in decide_edge::named_rpc_secrets(cluster) {
        let named = read_value(&secrets_api, &source).await?;
        if let Some((why, message)) =
            decide_edge::rpc_disagreement(field, &source, named.as_deref(), rpc_value.as_deref())
        {
            return Ok(Converged::Blocked(why, message));
        }
    }
    let Some(rpc_value) = rpc_value else {
        return Ok(DesiredError::Invalid {
            field: "spec.connectTo.rpcSecretRef",
            message: "cannot be read".into(),
        }
        .into());
    };
    let pod_token = if credentials::parts(cluster).is_empty() {
        token.clone()
    } else {
        if pin_copy(cluster, &s, ctx, &rpc_value).await? == Pinned::Annotated {
            return Ok(Converged::Restart);
        }
        if !credentials::pinned(cluster, &s) {
            let waiting = credentials::waiting(cluster);
            return Ok(Converged::Blocked(waiting.reason, waiting.message));
        }
        match secrets::admin_token_user_source(cluster) {
            Some(_) => secrets::admin_token_source(cluster, &s),
            None => token.clone(),
        }
    };
    let view = read_view(&route.admin).await;
    finish(
        cluster,
        &mut s,
        ctx,
        pods,
        (rpc, pod_token),
        view,
        Some(route.admin),
    )
    .await
}

/// Joins the members recorded in `nodes` to the remote cluster read as `view`: each member
/// that cluster does not see up is asked (through its own Admin API, with the `token` its
/// pod mounts) to connect to the remote storage nodes, and the roles [`decide_edge::remote_change`]
/// wants are written through `admin`. A refused write is logged; the next pass plans again.
pub(super) async fn join(
    cluster: &GarageCluster,
    ctx: &Context,
    (pods, nodes): (&[Pod], &[NodeStatus]),
    token: &SecretSource,
    admin: &garage_admin::AdminClient,
    view: &StorageView,
) -> Result<(), Error> {
    connect(cluster, ctx, (pods, nodes), token, view).await?;
    let mut recorded = cluster.clone();
    recorded.status.get_or_insert_with(Default::default).nodes = Some(nodes.to_vec());
    let edge = Edge {
        cluster: recorded,
        pods: pods.to_vec(),
    };
    let Some(change) = decide_edge::remote_change(&edge, &view.layout, view.settled) else {
        return Ok(());
    };
    match super::act::apply(admin, &change).await {
        Ok(()) => {
            ctx.metrics.layout_applied();
            tracing::info!(
                version = change.version,
                roles = change.intended.len(),
                "the edge's roles written in the remote layout"
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "the edge's roles were not written in the remote layout")
        }
    }
    Ok(())
}

/// Asks each member the remote cluster does not see up to connect to the remote storage
/// nodes it sees up: with no address of its own the remote side can dial, the edge is the
/// side that connects.
async fn connect(
    cluster: &GarageCluster,
    ctx: &Context,
    (pods, nodes): (&[Pod], &[NodeStatus]),
    token: &SecretSource,
    view: &StorageView,
) -> Result<(), Error> {
    let up = |id: &str| {
        view.status
            .nodes
            .iter()
            .any(|n| n.is_up && n.id.as_str() == id)
    };
    let peers: Vec<String> = view
        .status
        .nodes
        .iter()
        .filter(|n| n.is_up && n.role.as_ref().is_some_and(|r| r.capacity.is_some()))
        .filter_map(|n| Some(format!("{}@{}", n.id, n.addr.as_ref()?)))
        .collect();
    let unseen: Vec<&str> = nodes
        .iter()
        .filter(|n| n.node_id.as_deref().is_some_and(|id| !up(id)))
        .filter_map(|n| n.pod_name.as_deref())
        .collect();
    if peers.is_empty() || unseen.is_empty() {
        return Ok(());
    }
    let ns = cluster.namespace().unwrap_or_default();
    let secrets_api = Api::<Secret>::namespaced(ctx.client.clone(), &ns);
    let Some(bearer) = admin_token(&secrets_api, token).await? else {
        return Ok(());
    };
    let port = Settings::from_edge(cluster).map_or(3903, |s| s.admin_port);
    for pod in pods
        .iter()
        .filter(|p| unseen.contains(&p.name_any().as_str()))
    {
        let Some(ip) = running_ip(pod) else { continue };
        let client = pod_client(&ip, port, &bearer, ctx.config.admin_timeout)?;
        match client.connect_nodes(&peers).await {
            Ok(results) if results.iter().any(|r| r.success) => {}
            Ok(_) => tracing::info!(pod = %pod.name_any(), "no remote storage node reachable yet"),
            Err(e) => tracing::info!(pod = %pod.name_any(), error = %e, "not connected yet"),
        }
    }
    Ok(())
}

/// Why the deleting remote edge still waits: its roles are removed from the remote layout
/// (one version, once settled and nothing is staged), then it waits for that layout to
/// settle, so that its gateways see the version without them before they stop. It keeps
/// waiting, and says so, while the remote Admin API cannot be read.
pub(super) async fn retire_roles(
    cluster: &GarageCluster,
    ctx: &Context,
    url: String,
    token: &SecretSource,
) -> Result<Option<String>, Error> {
    let where_ = format!("the remote cluster at {url}");
    let admin = match remote_route(cluster, ctx, url, token).await? {
        Ok(route) => route.admin,
        Err(Converged::Blocked(_, m)) => {
            return Ok(Some(format!(
                "deleting: waiting to retire this edge's roles from {where_}: {m}"
            )));
        }
        Err(_) => return Ok(Some("deleting: waiting to retire this edge's roles".into())),
    };
    let Some(view) = read_view(&admin).await else {
        return Ok(Some(format!(
            "deleting: waiting for the layout of {where_} to be readable, to retire this edge's roles before its gateways stop"
        )));
    };
    let edge = Edge {
        cluster: cluster.clone(),
        pods: Vec::new(),
    };
    if let Some(change) = decide_edge::remote_change(&edge, &view.layout, view.settled) {
        if let Err(e) = super::act::apply(&admin, &change).await {
            tracing::warn!(error = %e, "the deleting edge's roles were not removed");
        }
        return Ok(Some(format!(
            "deleting: retiring this edge's roles from {where_}"
        )));
    }
    Ok(still_held(cluster, &view, &where_))
}
