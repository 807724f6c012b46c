//! GarageNode DELETE rules GN-D1…GN-D8: a positive-capacity identity leaves
//! only through the prepared drain, proven by the owner's terminal token.

use super::facts::{self, cluster_namespace, drain_requested, is_external, is_gateway, is_pool};
use super::{Step, deny, parent};
use crate::admission::Context;
use crate::admission::shared::drain_token::{self, ExpectedActor, Required};
use crate::admission::shared::replication::effective_peer_policy;
use shared_types::conditions::node::CONDITION_DRAIN_PREPARED;
use shared_types::conditions::reason::REASON_PREPARED_NOT_IN_LAYOUT;
use shared_types::garage_cluster::common::{
    DeletionPolicy, DrainActorKind, StorageDrainStatus, UnverifiedPeersPolicy,
};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::ANNOTATION_DRAIN;
use shared_types::keys::label::value::TIER_STORAGE;
use shared_types::keys::label::{LABEL_CLUSTER, LABEL_NODE_LOCAL_POOL, LABEL_TIER};

/// Validates a DELETE of `node`.
pub fn validate(node: Option<&GarageNode>, ctx: &Context) -> Step {
    // GN-D1: nothing to judge without the stored object or a parent name.
    let Some(node) = node else {
        return Ok(());
    };
    let name = &node.spec.cluster_ref.name;
    if name.is_empty() {
        return Ok(());
    }
    let ns = cluster_namespace(node);
    let Some(cluster) = parent::find(ctx, ns, name) else {
        if is_gateway(node) {
            return Ok(());
        }
        return Err(deny(
            "GN-D2",
            "spec.clusterRef",
            format!(
                "positive-capacity GarageNode cannot be deleted while its parent GarageCluster {ns}/{name} is absent; restore the parent or complete documented manual recovery"
            ),
        ));
    };
    let owner = parent::layout_owner(ctx, cluster).map_err(|e| {
        deny(
            "GN-D3",
            "spec.clusterRef",
            format!("resolving canonical Garage layout owner before GarageNode deletion: {e}"),
        )
    })?;
    let node_name = facts::name(node);
    if let Some(previous) = parent::rollout_active(owner) {
        return Err(deny(
            "GN-D4",
            "metadata.name",
            format!(
                "garageNode {node_name} cannot be deleted while GarageCluster {} is replacing managed pod UID {previous}; wait for status.storageRollout to clear",
                parent::key(owner)
            ),
        ));
    }
    let drain = owner.status.as_ref().and_then(|s| s.storage_drain.as_ref());
    if let Some(drain) = drain
        && drain_owned_elsewhere(node, owner, drain)?
    {
        return Ok(());
    }
    let foreground = ctx
        .delete_options
        .as_ref()
        .and_then(|o| o.propagation_policy.as_deref())
        == Some("Foreground");
    if is_gateway(node) {
        // GN-D6: gateways need no preparation, but a foreground cascade could
        // remove the workload before the finalizer retires the role.
        if !is_external(node) && !parent::is_deleting(cluster) && foreground {
            return Err(deny(
                "GN-D6",
                "metadata.name",
                "foreground propagation is unsafe for a managed gateway GarageNode; delete it with background propagation",
            ));
        }
        return Ok(());
    }
    storage_node(node, cluster, owner, drain, ctx, foreground)
}

/// GN-D5: a drain transaction is active. Returns `Ok(true)` when the parent
/// cluster's own terminal drain authorises the deletion outright, `Ok(false)`
/// when the drain is this node's and the remaining rules apply.
fn drain_owned_elsewhere(
    node: &GarageNode,
    owner: &GarageCluster,
    drain: &StorageDrainStatus,
) -> Result<bool, super::Violation> {
    let actor = drain.actor.clone().unwrap_or_default();
    let uid = facts::uid(node);
    let is_this_node = actor.api_version.as_deref() == Some(facts::NODE_API_VERSION)
        && actor.kind == Some(DrainActorKind::GarageNode)
        && actor.namespace.as_deref() == Some(facts::namespace(node))
        && actor.name.as_deref() == Some(facts::name(node))
        && !uid.is_empty()
        && actor.uid.as_deref() == Some(uid);
    let fail = |msg: String| Err(deny("GN-D5", "metadata.name", msg));
    if is_this_node {
        let id = facts::known_node_id(node).map_err(|e| deny("GN-D5", "metadata.name", e))?;
        if id.is_empty() {
            return fail("terminal drain has no trusted exact identity for this GarageNode; wait for status.nodeId".into());
        }
        let expected = ExpectedActor {
            api_version: facts::NODE_API_VERSION,
            kind: DrainActorKind::GarageNode,
            namespace: facts::namespace(node),
            name: facts::name(node),
            uid,
        };
        let ids = [id.clone()];
        let verify = |removed_storage: &[String]| {
            let required = Required {
                role_removal: &ids,
                removed_storage,
            };
            drain_token::verify(Some(drain), &expected, &required).map_err(|e| {
                deny(
                    "GN-D5",
                    "metadata.name",
                    format!("terminal drain preparation is invalid: {e}"),
                )
            })
        };
        if is_gateway(node) {
            if drain.completed_at.is_none() {
                return fail("gateway role retirement is still converging; wait for status.storageDrain.completedAt".into());
            }
            if drain
                .removed_storage_node_ids
                .as_ref()
                .is_some_and(|r| !r.is_empty())
            {
                return fail(
                    "terminal drain preparation is invalid: a gateway drain removes no storage"
                        .into(),
                );
            }
            verify(&[])?;
            return Ok(false);
        }
        if !drain_requested(node) {
            return fail(format!(
                "drain is not prepared for deletion: set annotation {ANNOTATION_DRAIN}=\"true\" and wait for {CONDITION_DRAIN_PREPARED}=True"
            ));
        }
        verify(&ids)?;
        let unavailable = drain
            .unavailable_source_node_ids
            .iter()
            .flatten()
            .any(|u| *u == id);
        if unavailable {
            if facts::lost_source_ack(node) != id {
                return fail("terminal drain lists this node as an unavailable source, but acknowledge-lost-source does not name it".into());
            }
        } else if !is_external(node)
            && drain
                .managed_pod_uids
                .as_ref()
                .and_then(|m| m.get(&id))
                .is_none_or(|p| p.trim().is_empty())
        {
            return fail(
                "terminal drain proof has no exact managed source Pod UID for this node".into(),
            );
        }
        return Ok(false);
    }
    let owner_uid = owner.metadata.uid.as_deref().unwrap_or_default();
    if actor.kind == Some(DrainActorKind::GarageCluster)
        && !owner_uid.is_empty()
        && actor.uid.as_deref() == Some(owner_uid)
        && drain.completed_at.is_some()
    {
        let expected = ExpectedActor {
            api_version: facts::CLUSTER_API_VERSION,
            kind: DrainActorKind::GarageCluster,
            namespace: owner.metadata.namespace.as_deref().unwrap_or_default(),
            name: owner.metadata.name.as_deref().unwrap_or_default(),
            uid: owner_uid,
        };
        drain_token::verify(Some(drain), &expected, &Required::default()).map_err(|e| {
            deny(
                "GN-D5",
                "metadata.name",
                format!("parent GarageCluster terminal drain preparation is invalid: {e}"),
            )
        })?;
        return Ok(true);
    }
    fail(format!(
        "garageNode {} cannot be deleted while storage-drain transaction {:?} is owned by {} {}/{}",
        facts::name(node),
        drain.transaction_id.as_deref().unwrap_or_default(),
        match actor.kind {
            Some(DrainActorKind::GarageCluster) => "GarageCluster",
            Some(DrainActorKind::GarageNode) => "GarageNode",
            None => "an unknown actor",
        },
        actor.namespace.as_deref().unwrap_or_default(),
        actor.name.as_deref().unwrap_or_default()
    ))
}

/// "Prepared without layout": drained before it ever had a layout role.
fn prepared_without_layout(node: &GarageNode) -> bool {
    let no_id = facts::known_node_id(node).is_ok_and(|id| id.is_empty());
    let prepared = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == CONDITION_DRAIN_PREPARED))
        .is_some_and(|c| {
            c.status == "True"
                && c.reason == REASON_PREPARED_NOT_IN_LAYOUT
                && c.observed_generation.is_some()
                && c.observed_generation == node.metadata.generation
        });
    drain_requested(node) && no_id && prepared
}

/// GN-D7: a positive-capacity node.
fn storage_node(
    node: &GarageNode,
    cluster: &GarageCluster,
    owner: &GarageCluster,
    drain: Option<&StorageDrainStatus>,
    ctx: &Context,
    foreground: bool,
) -> Step {
    let fail = |msg: String| Err(deny("GN-D7", "metadata.name", msg));
    let cluster_is_owner = parent::key(cluster) == parent::key(owner);
    if cluster.spec.storage.is_some()
        && cluster_is_owner
        && parent::is_deleting(cluster)
        && cluster.effective_deletion_policy() == DeletionPolicy::Destroy
    {
        return Ok(());
    }
    let foreground_msg = "foreground propagation is unsafe for a positive-capacity GarageNode; delete it with background propagation".to_string();
    if prepared_without_layout(node) {
        return if foreground {
            fail(foreground_msg)
        } else {
            Ok(())
        };
    }
    let id = facts::known_node_id(node).unwrap_or_default();
    let prepared = drain.is_some_and(|d| {
        let actor = d.actor.clone().unwrap_or_default();
        actor.kind == Some(DrainActorKind::GarageNode)
            && actor.name.as_deref() == Some(facts::name(node))
            && actor.namespace.as_deref() == Some(facts::namespace(node))
            && actor.uid.as_deref() == Some(facts::uid(node))
            && d.completed_at.is_some()
            && !id.is_empty()
            && d.removed_storage_node_ids
                .iter()
                .flatten()
                .any(|r| *r == id)
    }) && drain_requested(node);
    if !prepared {
        return fail(format!(
            "positive-capacity GarageNode deletion is a prepared operation: set annotation {ANNOTATION_DRAIN}=\"true\", keep the process live, and wait for ConditionDrainPrepared=True"
        ));
    }
    let lost = drain.is_some_and(|d| {
        d.unavailable_source_node_ids
            .iter()
            .flatten()
            .any(|u| *u == id)
    });
    if lost {
        lost_workload_gone(node, ctx)?;
    }
    if foreground {
        return fail(foreground_msg);
    }
    parent::drain_readiness(owner).map_err(|why| {
        deny(
            "GN-DR",
            "metadata.name",
            format!(
                "positive-capacity GarageNode deletion requires a safe canonical layout: {why}"
            ),
        )
    })?;
    let owner_ns = owner.metadata.namespace.as_deref().unwrap_or_default();
    let owner_name = owner.metadata.name.as_deref().unwrap_or_default();
    let external_sibling = ctx.garage_nodes.iter().any(|n| {
        facts::namespace(n) == owner_ns
            && n.spec.cluster_ref.name == owner_name
            && cluster_namespace(n) == owner_ns
            && is_external(n)
    });
    let federated = owner
        .spec
        .remote_clusters
        .as_ref()
        .is_some_and(|r| !r.is_empty());
    if (is_external(node) || federated || external_sibling)
        && effective_peer_policy(owner.spec.layout_management.as_ref())
            != UnverifiedPeersPolicy::AssumeConsistent
    {
        return fail(format!(
            "deleting storage while the parent has external or federated Garage processes requires GarageCluster {} spec.layoutManagement.drain.unverifiedPeersPolicy: AssumeConsistent",
            parent::key(owner)
        ));
    }
    Ok(())
}

/// GN-D7 (lost source): the managed workload that ran the lost identity must
/// be gone, or deleting the GarageNode would orphan a live process.
fn lost_workload_gone(node: &GarageNode, ctx: &Context) -> Step {
    let ns = facts::namespace(node);
    let pods = ctx
        .pods
        .iter()
        .filter(|p| p.metadata.namespace.as_deref() == Some(ns));
    let label = |p: &k8s_openapi::api::core::v1::Pod, key: &str| {
        p.metadata.labels.as_ref().and_then(|l| l.get(key)).cloned()
    };
    if is_pool(node) {
        let k8s_node = node.spec.kubernetes_node_name.clone();
        let still_running = pods.clone().find(|p| {
            label(p, LABEL_CLUSTER).as_deref() == Some(node.spec.cluster_ref.name.as_str())
                && label(p, LABEL_TIER).as_deref() == Some(TIER_STORAGE)
                && label(p, LABEL_NODE_LOCAL_POOL) == node.spec.node_local_pool_name
                && p.spec.as_ref().and_then(|s| s.node_name.clone()) == k8s_node
        });
        if let Some(pod) = still_running {
            return Err(deny(
                "GN-D7",
                "metadata.name",
                format!(
                    "acknowledged a lost source but managed Pod {ns}/{} still runs on Kubernetes Node {}; wait for it to disappear",
                    pod.metadata.name.as_deref().unwrap_or_default(),
                    k8s_node.unwrap_or_default()
                ),
            ));
        }
    } else if !is_external(node) {
        let pod_name = format!("{}-0", facts::name(node));
        if pods
            .clone()
            .any(|p| p.metadata.name.as_deref() == Some(pod_name.as_str()))
        {
            return Err(deny(
                "GN-D7",
                "metadata.name",
                format!(
                    "acknowledged a lost source but managed Pod {ns}/{pod_name} still exists; wait for it to disappear"
                ),
            ));
        }
    }
    Ok(())
}
