//! GarageNode CREATE rules GN-K1…GN-K5.

use super::facts::{self, cluster_namespace, is_pool};
use super::{Step, deny, parent, shape};
use crate::admission::{Context, Verdict};
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::{ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_CYCLE};

/// Validates a new GarageNode: the first broken rule is returned, warnings are recorded on
/// `warnings` (the review's verdict) as they are found.
pub fn validate(node: &GarageNode, ctx: &Context, warnings: &mut Verdict) -> Step {
    // GN-K1: the shape rules, strictly.
    shape::check(node, false, warnings)?;
    if facts::annotation(node, ANNOTATION_CYCLE).is_some() {
        return Err(deny(
            "GN-K2",
            format!("metadata.annotations[{ANNOTATION_CYCLE}]"),
            format!(
                "annotation {ANNOTATION_CYCLE} cannot be set when a GarageNode is created; wait for the exact StatefulSet Pod and Garage identity to be Ready, connected, and committed, then add the annotation in a separate update"
            ),
        ));
    }
    let ack = facts::lost_source_ack(node);
    if !ack.is_empty() && ack != facts::spec_node_id(node) {
        return Err(deny(
            "GN-K3",
            format!("metadata.annotations[{ANNOTATION_ACKNOWLEDGE_LOST_SOURCE}]"),
            format!(
                "annotation {ANNOTATION_ACKNOWLEDGE_LOST_SOURCE} on create requires the same exact spec.nodeId"
            ),
        ));
    }
    if is_pool(node) {
        live_owner(node, ctx, true)?;
    }
    transaction_fence(node, ctx)
}

/// GN-K4 (and GN-U12 with `require_pool = false`): the live parent is the
/// controller owner and, on create, still declares the pool.
pub fn live_owner(node: &GarageNode, ctx: &Context, require_pool: bool) -> Step {
    let rule = if require_pool { "GN-K4" } else { "GN-U12" };
    let ns = facts::namespace(node);
    let name = &node.spec.cluster_ref.name;
    let Some(owner) = facts::controller_owner(node) else {
        // GN-C19 has already reported the missing owner structurally.
        return Ok(());
    };
    let Some(cluster) = parent::find(ctx, ns, name) else {
        return Err(deny(
            rule,
            "spec.clusterRef",
            format!(
                "verifying node-local-pool-backed GarageNode parent: GarageCluster {ns}/{name} not found"
            ),
        ));
    };
    let live_uid = cluster.metadata.uid.as_deref().unwrap_or_default();
    if owner.uid.is_empty() || owner.uid != live_uid {
        return Err(deny(
            rule,
            "metadata.ownerReferences",
            format!(
                "controller owner UID does not match GarageCluster {ns}/{name}; node-local-pool members are created only by the operator"
            ),
        ));
    }
    if require_pool {
        let pool = node
            .spec
            .node_local_pool_name
            .as_deref()
            .unwrap_or_default();
        let declared = cluster
            .spec
            .storage
            .as_ref()
            .and_then(|s| s.node_local_pools.as_ref())
            .is_some_and(|pools| pools.iter().any(|p| p.name == pool));
        if !declared {
            return Err(deny(
                rule,
                "spec.nodeLocalPoolName",
                format!(
                    "nodeLocalPoolName {pool:?} is not declared by GarageCluster {ns}/{name} in spec.storage.nodeLocalPools"
                ),
            ));
        }
    }
    Ok(())
}

/// GN-K5: no new identity while the layout owner replaces a pod or drains.
fn transaction_fence(node: &GarageNode, ctx: &Context) -> Step {
    let Some(cluster) = parent::find(ctx, cluster_namespace(node), &node.spec.cluster_ref.name)
    else {
        return Ok(());
    };
    let owner = parent::layout_owner(ctx, cluster).map_err(|e| {
        deny(
            "GN-K5",
            "spec.clusterRef",
            format!("resolving canonical Garage layout owner: {e}"),
        )
    })?;
    let name = facts::name(node);
    if let Some(previous) = parent::rollout_active(owner) {
        return Err(deny(
            "GN-K5",
            "spec.clusterRef",
            format!(
                "garageNode {name} cannot be created while GarageCluster {} is replacing managed pod UID {previous}; wait for status.storageRollout to clear",
                parent::key(owner)
            ),
        ));
    }
    if let Some(id) = parent::storage_drain_id(owner) {
        return Err(deny(
            "GN-K5",
            "spec.clusterRef",
            format!(
                "garageNode {name} cannot be created while GarageCluster {} has storage-drain transaction {id:?} active; wait for it to finish",
                parent::key(owner)
            ),
        ));
    }
    Ok(())
}
