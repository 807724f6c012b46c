//! Reading everything one GarageCluster pass decides from, once: the cluster's storage
//! members (generated and user-written GarageNodes), their pods, and what Garage reports
//! through one of them, into [`Observed`]; and the Admin API access act uses afterwards
//! ([`Access`]). Nothing here writes.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{DaemonSet, StatefulSet};
use k8s_openapi::api::core::v1::{ConfigMap, Node, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

use crate::controller::garage_access::{admin_token, pod_admin_token, pod_client, running_ip};
use crate::controller::{Context, Error};
use crate::desired::{DesiredError, Settings, is_controlled_by, labels, secrets};
use crate::garage::{AdminClient, AdminToken, NodeTarget, WorkerFilter};
use crate::machine::drain::ProofObservation;
use decide::cluster::observed::{
    GarageRead, GarageView, Members, Observed, most_advanced, sort_members,
};

/// How act reaches Garage after the pass has decided: not part of the decision's input.
pub struct Access {
    /// Client of the pod that answered; act applies layouts and reconnects through it.
    pub admin: Option<AdminClient>,
    /// The admin token the pods mount, to reach a member's own Admin API when it is isolated.
    pub token: Option<AdminToken>,
}

/// Reads everything [`decide::cluster::decision::decide`] needs, and the access act uses.
pub async fn observe(
    cluster: Arc<GarageCluster>,
    settings: &Result<Settings, DesiredError>,
    ctx: &Context,
) -> Result<(Observed, Access), Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let name = cluster.name_any();
    let uid = cluster.metadata.uid.clone().unwrap_or_default();
    let gn_api: Api<GarageNode> = Api::namespaced(ctx.client.clone(), &ns);
    let Members {
        generated,
        retiring,
        user_nodes,
        pool_members,
        gateways,
    } = sort_members(
        gn_api.list(&ListParams::default()).await?.items,
        &name,
        &ns,
        &uid,
    );
    let selector =
        ListParams::default().labels(&labels::selector_string(&labels::headless_selector(&name)));
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), &ns)
        .list(&selector)
        .await?
        .items;
    let statefulsets = Api::<StatefulSet>::namespaced(ctx.client.clone(), &ns)
        .list(&selector)
        .await?
        .items;
    // Claim templates carry the pod labels, so the members' claims match the same selector.
    let claims = Api::<PersistentVolumeClaim>::namespaced(ctx.client.clone(), &ns)
        .list(&selector)
        .await?
        .items;
    let daemonsets: Vec<DaemonSet> = Api::<DaemonSet>::namespaced(ctx.client.clone(), &ns)
        .list(&selector)
        .await?
        .items
        .into_iter()
        .filter(|d| is_controlled_by(d, &uid))
        .collect();
    let config_maps: Vec<ConfigMap> = Api::<ConfigMap>::namespaced(ctx.client.clone(), &ns)
        .list(&selector)
        .await?
        .items
        .into_iter()
        .filter(|c| is_controlled_by(c, &uid))
        .collect();
    // RPC Services published by a publicEndpoint carry their load balancer's address.
    let services = Api::<Service>::namespaced(ctx.client.clone(), &ns)
        .list(&selector)
        .await?
        .items;
    let wants_pools = settings.as_ref().is_ok_and(|s| !s.pools.is_empty());
    let k8s_nodes = k8s_nodes(
        ctx,
        wants_pools || !pool_members.is_empty() || !daemonsets.is_empty(),
    )
    .await?;
    let foreign_paths = if wants_pools {
        match foreign_host_paths(ctx, &ns, &name, &uid).await {
            Ok(paths) => paths,
            // Without the cluster-wide read, exclusivity cannot be proven: every path counts
            // as taken, so nothing is created or started (fail closed, with the reason).
            Err(Error::Kube(kube::Error::Api(e))) if e.code == 403 => vec![(
                format!(
                    "an unknown workload (this install cannot list pool DaemonSets and pods in every namespace: {}; node-local pools need the cluster-wide install)",
                    e.message
                ),
                "/".to_owned(),
            )],
            Err(e) => return Err(e),
        }
    } else {
        Vec::new()
    };
    let (garage, admin, token) = match settings {
        Ok(s) => read_garage(&cluster, s, &pods, ctx).await?,
        Err(e) => (GarageView::Unavailable(e.to_string()), None, None),
    };
    let drain_recorded = cluster
        .status
        .as_ref()
        .is_some_and(|st| st.storage_drain.is_some());
    let proof = match (&admin, drain_recorded) {
        (Some(admin), true) => read_proof(admin).await,
        _ => None,
    };
    let go_token = super::go_token::observe(&cluster, admin.as_ref(), ctx).await?;
    let observed = Observed {
        go_token,
        cluster,
        generated,
        retiring,
        user_nodes,
        pool_members,
        gateways,
        daemonsets,
        config_maps,
        services,
        k8s_nodes,
        foreign_paths,
        // The probe itself runs in act, when a decision asks for it; a pass reads its verdict.
        gate: ctx.gate_evidence.observed(&ns, Timestamp::now()),
        pods,
        garage,
        statefulsets,
        claims,
        proof,
        now: Timestamp::now(),
        transaction_id: crate::controller::garage_access::random_hex32()?[..32].to_owned(),
        monitoring_installed: super::service_monitor::installed(ctx, &ns, &name).await,
        edges: edges(ctx, &ns, &name).await?,
    };
    Ok((observed, Access { admin, token }))
}

/// Every Kubernetes Node, when the cluster has (or may get) pool members; none otherwise.
async fn k8s_nodes(ctx: &Context, needed: bool) -> Result<Vec<Node>, Error> {
    if !needed {
        return Ok(Vec::new());
    }
    Ok(Api::<Node>::all(ctx.client.clone())
        .list(&ListParams::default())
        .await?
        .items)
}

/// The edge gateways of `ns` connected to the cluster `name`, with their gateway pods.
async fn edges(
    ctx: &Context,
    ns: &str,
    name: &str,
) -> Result<Vec<decide::cluster::observed::Edge>, Error> {
    let mut out = Vec::new();
    let clusters = Api::<GarageCluster>::namespaced(ctx.client.clone(), ns)
        .list(&ListParams::default())
        .await?
        .items;
    for cluster in clusters {
        if !decide::desired::edge::is_edge(&cluster)
            || decide::cluster::edge::storage_cluster(&cluster)
                .ok()
                .as_deref()
                != Some(name)
        {
            continue;
        }
        let selector = labels::selector_string(&labels::gateway_selector(&cluster.name_any()));
        let pods = Api::<Pod>::namespaced(ctx.client.clone(), ns)
            .list(&ListParams::default().labels(&selector))
            .await?
            .items;
        out.push(decide::cluster::observed::Edge { cluster, pods });
    }
    Ok(out)
}

/// `(who, path)` for every HostPath mounted by a pool DaemonSet or pool pod, in any
/// namespace, that does not belong to the cluster `ns/name` with `uid`.
async fn foreign_host_paths(
    ctx: &Context,
    ns: &str,
    name: &str,
    uid: &str,
) -> Result<Vec<(String, String)>, Error> {
    let pools = ListParams::default().labels(&format!(
        "{}={}",
        shared_types::keys::label::LABEL_STORAGE_GROUP,
        shared_types::keys::label::value::STORAGE_GROUP_NODE_LOCAL
    ));
    let mut out = Vec::new();
    let paths = |spec: Option<&k8s_openapi::api::core::v1::PodSpec>| -> Vec<String> {
        spec.and_then(|s| s.volumes.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|v| v.host_path.as_ref().map(|h| h.path.clone()))
            .collect()
    };
    for ds in Api::<DaemonSet>::all(ctx.client.clone())
        .list(&pools)
        .await?
        .items
    {
        if is_controlled_by(&ds, uid) {
            continue;
        }
        let who = format!(
            "DaemonSet {}/{}",
            ds.namespace().unwrap_or_default(),
            ds.name_any()
        );
        for p in paths(ds.spec.as_ref().and_then(|s| s.template.spec.as_ref())) {
            out.push((who.clone(), p));
        }
    }
    for pod in Api::<Pod>::all(ctx.client.clone())
        .list(&pools)
        .await?
        .items
    {
        let ours = pod.namespace().as_deref() == Some(ns)
            && pod
                .labels()
                .get(shared_types::keys::label::LABEL_CLUSTER)
                .map(String::as_str)
                == Some(name);
        if ours {
            continue;
        }
        let who = format!(
            "pod {}/{}",
            pod.namespace().unwrap_or_default(),
            pod.name_any()
        );
        for p in paths(pod.spec.as_ref()) {
            out.push((who.clone(), p));
        }
    }
    Ok(out)
}

async fn read_garage(
    cluster: &GarageCluster,
    s: &Settings,
    pods: &[Pod],
    ctx: &Context,
) -> Result<(GarageView, Option<AdminClient>, Option<AdminToken>), Error> {
    let ns = cluster.namespace().unwrap_or_default();
    let source = secrets::admin_token_source(cluster, s);
    let secrets_api: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let Some(token) = admin_token(&secrets_api, &source).await? else {
        return Ok((
            GarageView::Unavailable(format!(
                "admin token Secret {} is not readable yet",
                source.name
            )),
            None,
            None,
        ));
    };
    // Every running pod is asked at once: pods that do not answer (yet) cost one timeout in
    // all, not one each. The view used is the most advanced one (highest layout version), the
    // first in pod order among equals (the same member each pass while it answers): a pod
    // that has just started answers with an empty layout until it has joined its peers.
    // Each also reports its own health: Garage's view of who is connected is per node.
    let storage_pods: Vec<&Pod> = pods
        .iter()
        .filter(|p| {
            p.labels()
                .get(shared_types::keys::label::LABEL_TIER)
                .map(String::as_str)
                == Some(shared_types::keys::label::value::TIER_STORAGE)
        })
        .collect();
    // Each pod is asked with the token it runs: during a rollout of a changed admin token the
    // old pods still run the old one.
    let mut cache = BTreeMap::new();
    let mut tokens = Vec::new();
    for p in &storage_pods {
        let own = pod_admin_token(p, &secrets_api, &mut cache).await?;
        tokens.push((running_ip(p), own.unwrap_or_else(|| token.clone())));
    }
    let asks = tokens
        .into_iter()
        .filter_map(|(ip, token)| Some((ip?, token)))
        .filter_map(|(ip, token)| {
            let admin = pod_client(&ip, s.admin_port, &token, ctx.config.admin_timeout).ok()?;
            Some(Box::pin(async move {
                let status = admin.cluster_status().await?;
                let health = admin.cluster_health().await.ok();
                Ok::<_, crate::garage::GarageError>((admin, status, health))
            }))
        });
    let answers: Vec<_> = futures::future::join_all(asks).await;
    let every_view_healthy = !answers.is_empty()
        && answers.len() == storage_pods.len()
        && answers.iter().all(|a| {
            a.as_ref()
                .is_ok_and(|(_, _, h)| crate::machine::drain::fully_healthy(h.as_ref()))
        });
    let first = most_advanced(answers.into_iter().flatten(), |(_, status, _)| {
        status.layout_version
    });
    // Its health was read with its status just above: no second request for it.
    if let Some((admin, status, health)) = first {
        let (layout, history) = match (admin.layout().await, admin.layout_history().await) {
            (Ok(l), Ok(h)) => (l, h),
            (Err(e), _) | (_, Err(e)) => {
                return Ok((GarageView::Unavailable(e.to_string()), None, Some(token)));
            }
        };
        // Read only when the spec sets a variable: a pass without spec.workers costs no call.
        let worker_variables =
            if decide::cluster::workers::wanted(cluster.spec.workers.as_ref()).is_empty() {
                BTreeMap::new()
            } else {
                admin
                    .worker_variables(&NodeTarget::All, None)
                    .await
                    .map(|r| r.into_parts().0)
                    .unwrap_or_default()
            };
        let recorded = cluster
            .status
            .as_ref()
            .and_then(|st| st.build_info.as_ref());
        let build = if decide::cluster::health::build_unknown(recorded, &status) {
            admin
                .node_info(&NodeTarget::Local)
                .await
                .ok()
                .and_then(|r| r.into_single().ok())
                .map(|(_, info)| info)
        } else {
            None
        };
        let read = GarageRead {
            build,
            status,
            layout,
            history,
            health,
            every_view_healthy,
            worker_variables,
        };
        return Ok((GarageView::Read(Box::new(read)), Some(admin), Some(token)));
    }
    Ok((
        GarageView::Unavailable("no storage pod answers on its Admin API yet".into()),
        None,
        Some(token),
    ))
}

/// Workers and block errors of every node; `None` when the reads fail (the proof waits).
/// A node that fails to answer is simply absent, which the proof treats as not proven.
async fn read_proof(admin: &AdminClient) -> Option<ProofObservation> {
    let workers = admin
        .list_workers(&NodeTarget::All, WorkerFilter::default())
        .await
        .ok()?;
    let errors = admin.list_block_errors(&NodeTarget::All).await.ok()?;
    Some(ProofObservation {
        workers: workers.into_parts().0,
        block_errors: errors
            .into_parts()
            .0
            .into_iter()
            .map(|(id, list)| (id, list.len()))
            .collect(),
    })
}
