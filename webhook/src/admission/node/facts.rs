//! What a GarageNode is, read from its spec and metadata: backing, tier,
//! ownership and the annotations that request drains, cycles and recovery.

use crate::admission::shared::node_id::{canonical_id, is_node_id};
use crate::convert::{GROUP, V1BETA1, V1BETA2};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use shared_types::garage_node::{GarageNode, NodeBacking};
use shared_types::keys::annotation::{
    ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_CYCLE, ANNOTATION_DRAIN,
    ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID,
};
use shared_types::keys::label::LABEL_APP_MANAGED_BY;
use shared_types::keys::label::value::MANAGED_BY_GENERATED_NODE;

/// apiVersion a GarageNode drain actor must carry (the only GarageNode version).
pub const NODE_API_VERSION: &str = V1BETA1;
/// apiVersion a GarageCluster drain actor must carry (the storage version).
pub const CLUSTER_API_VERSION: &str = V1BETA2;

/// The object's name (empty when absent, which the API server never sends).
pub fn name(node: &GarageNode) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

/// The object's namespace.
pub fn namespace(node: &GarageNode) -> &str {
    node.metadata.namespace.as_deref().unwrap_or_default()
}

/// The object's UID.
pub fn uid(node: &GarageNode) -> &str {
    node.metadata.uid.as_deref().unwrap_or_default()
}

/// Backing, with an omitted value meaning StatefulSet.
pub fn backing(node: &GarageNode) -> NodeBacking {
    node.spec.backing.unwrap_or(NodeBacking::StatefulSet)
}

/// True for a node-local-pool member.
pub fn is_pool(node: &GarageNode) -> bool {
    backing(node) == NodeBacking::NodeLocalPool
}

/// True for a gateway (capacity-less) identity.
pub fn is_gateway(node: &GarageNode) -> bool {
    node.spec.gateway.unwrap_or(false)
}

/// True for a Garage process the operator does not run.
pub fn is_external(node: &GarageNode) -> bool {
    node.spec.external.is_some()
}

/// True for a node whose StatefulSet the operator renders.
pub fn is_managed_statefulset(node: &GarageNode) -> bool {
    !is_external(node) && !is_pool(node)
}

/// True when the object is already being deleted (finalizers pending).
pub fn is_deleting(node: &GarageNode) -> bool {
    node.metadata.deletion_timestamp.is_some()
}

/// Value of an annotation, if present.
pub fn annotation<'a>(node: &'a GarageNode, key: &str) -> Option<&'a str> {
    node.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// True when the drain annotation is exactly `"true"`.
pub fn drain_requested(node: &GarageNode) -> bool {
    annotation(node, ANNOTATION_DRAIN) == Some("true")
}

/// True when the cycle annotation is exactly `"true"`.
pub fn cycle_requested(node: &GarageNode) -> bool {
    annotation(node, ANNOTATION_CYCLE) == Some("true")
}

/// Canonical acknowledge-lost-source value; empty when absent.
pub fn lost_source_ack(node: &GarageNode) -> String {
    annotation(node, ANNOTATION_ACKNOWLEDGE_LOST_SOURCE)
        .map(canonical_id)
        .unwrap_or_default()
}

/// Canonical recovery pin; empty when absent.
pub fn recovery_pin(node: &GarageNode) -> String {
    annotation(node, ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID)
        .map(canonical_id)
        .unwrap_or_default()
}

/// Canonical spec.nodeId; empty when absent.
pub fn spec_node_id(node: &GarageNode) -> String {
    node.spec
        .node_id
        .as_deref()
        .map(canonical_id)
        .unwrap_or_default()
}

/// Canonical status.nodeId; empty when absent.
pub fn status_node_id(node: &GarageNode) -> String {
    node.status
        .as_ref()
        .and_then(|s| s.node_id.as_deref())
        .map(canonical_id)
        .unwrap_or_default()
}

/// Effective namespace of the cluster reference.
pub fn cluster_namespace(node: &GarageNode) -> &str {
    match node.spec.cluster_ref.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => ns,
        _ => namespace(node),
    }
}

/// The controller ownerReference, if any.
pub fn controller_owner(node: &GarageNode) -> Option<&OwnerReference> {
    node.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

/// True when `owner` is a GarageCluster of this API group (any non-empty
/// version) named `cluster_name`.
pub fn owner_is_cluster(owner: &OwnerReference, cluster_name: &str) -> bool {
    let group_ok = owner
        .api_version
        .split_once('/')
        .is_some_and(|(group, version)| group == GROUP && !version.is_empty());
    owner.kind == "GarageCluster" && owner.name == cluster_name && group_ok
}

/// True when the node is controlled by the GarageCluster its clusterRef
/// names: a structural (not live) check.
pub fn controlled_by_referenced_cluster(node: &GarageNode) -> bool {
    controller_owner(node).is_some_and(|o| owner_is_cluster(o, &node.spec.cluster_ref.name))
}

/// True for a GarageNode the operator generated from its parent (Auto storage
/// slot, unified gateway or node-local-pool member): controlled by the
/// referenced cluster and labelled `managed-by: operator`. Auto→Manual
/// ejection strips both, so an ejected node counts as user-owned again.
pub fn is_operator_child(node: &GarageNode) -> bool {
    let label = node
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_APP_MANAGED_BY))
        .map(String::as_str);
    label == Some(MANAGED_BY_GENERATED_NODE) && controlled_by_referenced_cluster(node)
}

/// Why the recovery pin cannot be trusted, or `Ok` with the pin (possibly
/// empty). Only a pool child controlled by its referenced GarageCluster (with
/// a UID) may carry a pin the webhook trusts.
pub fn trusted_recovery_pin(node: &GarageNode) -> Result<String, String> {
    let Some(raw) = annotation(node, ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID) else {
        return Ok(String::new());
    };
    let trusted_owner = controller_owner(node).is_some_and(|o| {
        owner_is_cluster(o, &node.spec.cluster_ref.name) && !o.uid.trim().is_empty()
    });
    if !is_pool(node) || !trusted_owner {
        return Err(format!(
            "annotation {ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID} is not a trusted identity source on this GarageNode"
        ));
    }
    let pin = canonical_id(raw);
    if !is_node_id(&pin) {
        return Err(format!(
            "annotation {ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID} contains an invalid recovery identity"
        ));
    }
    Ok(pin)
}

/// ResolvedGarageNodeID: canonical status.nodeId, else spec.nodeId, else the
/// trusted recovery pin; empty when none is known.
pub fn known_node_id(node: &GarageNode) -> Result<String, String> {
    let status = status_node_id(node);
    if !status.is_empty() {
        return Ok(status);
    }
    let spec = spec_node_id(node);
    if !spec.is_empty() {
        return Ok(spec);
    }
    trusted_recovery_pin(node)
}
