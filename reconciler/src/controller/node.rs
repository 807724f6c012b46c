//! GarageNode controller: the node's StatefulSet and RPC Service, and its Garage identity,
//! learned from its own pod's Admin API (`GetNodeInfo?node=self` at the pod IP).
//!
//! A pod that reports an ID other than the recorded one is a different identity (lost or
//! replaced metadata); the record is not overwritten and the node says why (spec §5.10).

use std::sync::Arc;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use serde_json::json;
use shared_types::common::ClusterPhase;
use shared_types::conditions::{common, node as node_conditions, reason};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{GarageNode, GarageNodeStatus};

use super::conditions::{self, Desired};
use super::garage_access::{admin_token, pod_client, running_ip};
use super::write::{self, ensure};
use super::{Context, Error};
use crate::desired::statefulset::{NodeInputs, statefulset};
use crate::desired::{Settings, config, is_controlled_by, nodes, secrets, services};
use crate::garage::NodeId;
use crate::names;

/// One pass over a GarageNode.
pub async fn reconcile(node: Arc<GarageNode>, ctx: Arc<Context>) -> Result<Action, Error> {
    ctx.metrics
        .reconciles
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if node.metadata.deletion_timestamp.is_some() {
        return Ok(Action::await_change());
    }
    let ns = node.namespace().unwrap_or_default();
    let clusters: Api<GarageCluster> = Api::namespaced(ctx.client.clone(), &ns);
    let Some(cluster) = clusters.get_opt(&node.spec.cluster_ref.name).await? else {
        return Ok(Action::requeue(ctx.config.resync));
    };
    // Only nodes this operator generated are run here; Manual nodes are not supported yet.
    let Some(cluster_uid) = cluster.metadata.uid.clone() else {
        return Ok(Action::await_change());
    };
    if !nodes::is_generated_by(&node, &cluster_uid) {
        return Ok(Action::await_change());
    }
    let Ok(mut settings) = Settings::from_cluster(&cluster) else {
        // The cluster controller reports why; running workloads are left alone.
        return Ok(Action::requeue(ctx.config.resync));
    };
    settings.use_default_image(&cluster, ctx.config.default_garage_image.as_deref());
    let node_uid = node.metadata.uid.clone().unwrap_or_default();
    let name = node.name_any();

    let svc = services::node_rpc(&node, &settings)?;
    ensure(
        &Api::<Service>::namespaced(ctx.client.clone(), &ns),
        &ctx.metrics,
        &svc,
        &node_uid,
        write::metadata_and_spec,
    )
    .await?;

    let revision = config::revision(&cluster, &settings)?;
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &ns);
    // The cluster controller publishes the revision; a template never mounts one that does
    // not exist or holds another body.
    match config_maps.get_opt(&revision.name).await? {
        Some(cm) if is_controlled_by(&cm, &cluster_uid) && cm.data == revision.config_map.data => {}
        _ => return Ok(Action::requeue(ctx.config.short_requeue)),
    }
    let rpc = secrets::rpc_secret_source(&cluster, &settings);
    let admin = secrets::admin_token_source(&cluster, &settings);
    let desired = statefulset(NodeInputs {
        cluster: &cluster,
        settings: &settings,
        node: &node,
        config: &revision,
        rpc_secret: &rpc,
        admin_token: &admin,
    })?;
    let sets: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &ns);
    let (_, sts) = ensure(&sets, &ctx.metrics, &desired, &node_uid, |d| {
        // Claim templates and the selector are immutable; only these may change.
        let spec = d.spec.as_ref();
        json!({
            "metadata": { "annotations": d.metadata.annotations, "labels": d.metadata.labels },
            "spec": {
                "replicas": spec.and_then(|s| s.replicas),
                "template": spec.map(|s| &s.template),
                "updateStrategy": spec.and_then(|s| s.update_strategy.as_ref()),
                "persistentVolumeClaimRetentionPolicy": spec.and_then(|s| s.persistent_volume_claim_retention_policy.as_ref()),
            }
        })
    })
    .await?;

    let token = admin_token(&Api::<Secret>::namespaced(ctx.client.clone(), &ns), &admin).await?;
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let pod_name = names::node_pod(&name);
    let sts_uid = sts.metadata.uid.clone().unwrap_or_default();
    let pod = pods
        .get_opt(&pod_name)
        .await?
        .filter(|p| is_controlled_by(p, &sts_uid));
    let current = node.status.clone().unwrap_or_default();
    let mut status = current.clone();
    let mut wanted: Vec<Desired> = Vec::new();
    let mut requeue = ctx.config.resync;
    let discovered = match (&pod, &token) {
        (Some(pod), Some(token)) => match running_ip(pod) {
            Some(ip) => discover(&pods, pod, &ip, settings.admin_port, token, &ctx).await,
            None => None,
        },
        _ => None,
    };
    match discovered {
        Some((id, pod_uid, ip)) => {
            let recorded = current
                .node_id
                .as_deref()
                .and_then(|s| s.parse::<NodeId>().ok());
            if recorded.as_ref().is_some_and(|r| *r != id) {
                wanted.push(Desired {
                    type_: common::CONDITION_READY,
                    status: false,
                    reason: reason::REASON_IDENTITY_CHANGED,
                    message: format!(
                        "pod {pod_name} reports Garage node {} but this node is {}; the new identity is not used. Restore the original metadata volume, or drain the old identity explicitly",
                        id.short(),
                        recorded.as_ref().map(NodeId::short).unwrap_or_default()
                    ),
                });
                // Evidence that the recorded identity runs is gone.
                status.observed_pod_uid = None;
                status.phase = Some(ClusterPhase::Failed);
            } else {
                status.node_id = Some(id.to_string());
                status.observed_pod_uid = Some(pod_uid);
                status.address = Some(format!("{ip}:{}", settings.rpc_port));
                status.phase = Some(ClusterPhase::Ready);
                wanted.push(Desired {
                    type_: node_conditions::CONDITION_NODE_DISCOVERED,
                    status: true,
                    reason: reason::REASON_RECONCILE_SUCCESS,
                    message: format!("Garage node {} runs in pod {pod_name}", id.short()),
                });
                wanted.push(Desired {
                    type_: common::CONDITION_READY,
                    status: true,
                    reason: reason::REASON_RECONCILE_SUCCESS,
                    message: String::new(),
                });
            }
        }
        None => {
            requeue = ctx.config.short_requeue;
            status.phase = Some(ClusterPhase::Pending);
            wanted.push(Desired {
                type_: common::CONDITION_READY,
                status: false,
                reason: reason::REASON_WAITING_FOR_DEPENDENCY,
                message: format!("waiting for pod {pod_name} to run and answer on its Admin API"),
            });
        }
    }
    status.zone = Some(node.spec.zone.clone());
    status.observed_generation = node.metadata.generation;
    status.conditions = Some(conditions::merge(
        current.conditions.as_deref(),
        &wanted,
        &[
            common::CONDITION_READY,
            node_conditions::CONDITION_NODE_DISCOVERED,
        ],
        node.metadata.generation,
    ));
    if status != current {
        let api: Api<GarageNode> = Api::namespaced(ctx.client.clone(), &ns);
        write::patch_status(&api, &ctx.metrics, &name, status_patch(&status)).await?;
    }
    Ok(Action::requeue(requeue))
}

/// The node ID of `pod`, proven to belong to that exact incarnation: the pod is re-read after
/// the call and must still have the same UID and IP.
async fn discover(
    pods: &Api<Pod>,
    pod: &Pod,
    ip: &str,
    port: u16,
    token: &crate::garage::AdminToken,
    ctx: &Context,
) -> Option<(NodeId, String, String)> {
    let client = pod_client(ip, port, token, ctx.config.admin_timeout).ok()?;
    let id = match client.local_node_id().await {
        Ok(id) => id,
        Err(e) => {
            tracing::debug!(pod = %pod.name_any(), error = %e, "node identity not readable yet");
            return None;
        }
    };
    let uid = pod.metadata.uid.clone()?;
    let again = pods.get_opt(&pod.name_any()).await.ok().flatten()?;
    (again.metadata.uid.as_deref() == Some(uid.as_str())
        && running_ip(&again).as_deref() == Some(ip))
    .then(|| (id, uid, ip.to_owned()))
}

/// A merge patch that sets exactly the fields this controller owns (null clears one).
fn status_patch(s: &GarageNodeStatus) -> serde_json::Value {
    json!({
        "nodeId": s.node_id,
        "observedPodUid": s.observed_pod_uid,
        "address": s.address,
        "phase": s.phase,
        "zone": s.zone,
        "observedGeneration": s.observed_generation,
        "conditions": s.conditions,
    })
}
