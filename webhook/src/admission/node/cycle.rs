//! Automatic cycle eligibility: the storage profile a replacement can clone
//! (GN-CY0), the source's readiness (GN-CY1) and the parent network profile
//! (GN-CY2). The caller prefixes every reason with the cycle annotation.

use super::facts::{self, is_external, is_gateway, is_pool};
use super::storage::claim;
use crate::admission::shared::node_id::is_node_id;
use crate::admission::shared::quantity;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::{ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_DRAIN};

/// A cycle failure: the rule and the reason.
pub type Ineligible = (&'static str, String);

fn blank(v: Option<&str>) -> bool {
    v.unwrap_or_default().trim().is_empty()
}

/// GN-CY0: the node's storage profile can be cloned into a replacement.
pub fn profile(node: &GarageNode) -> Result<(), Ineligible> {
    let fail = |msg: &str| Err(("GN-CY0", msg.to_string()));
    if is_gateway(node) {
        return fail(
            "gateway identities are not supported by automatic cycle; create a new gateway GarageNode and delete this one",
        );
    }
    if is_external(node) {
        return fail("external nodes are not supported by automatic cycle");
    }
    if is_pool(node) {
        return fail("only StatefulSet-backed GarageNodes support automatic cycle");
    }
    if node
        .spec
        .capacity
        .as_ref()
        .and_then(quantity::parse)
        .is_none_or(|c| !c.is_positive())
    {
        return fail("automatic cycle requires a positive capacity");
    }
    let Some(storage) = &node.spec.storage else {
        return fail("automatic cycle requires spec.storage");
    };
    if node
        .spec
        .network
        .as_ref()
        .is_some_and(|n| !blank(n.rpc_public_addr.as_deref()))
    {
        return fail(
            "automatic cycle cannot clone the identity-specific network.rpcPublicAddr; the replacement needs a distinct RPC endpoint, so create it by hand",
        );
    }
    if node.spec.public_endpoint.is_some() {
        return fail("automatic cycle does not support publicEndpoint handoff");
    }
    let mut volumes: Vec<(String, _)> = Vec::new();
    if let Some(m) = &storage.metadata {
        volumes.push(("storage.metadata".to_string(), m));
    }
    if let Some(d) = &storage.data {
        volumes.push(("storage.data".to_string(), d));
    }
    for (i, p) in storage.data_paths.iter().flatten().enumerate() {
        volumes.push((format!("storage.dataPaths[{i}]"), p));
    }
    if let Some((field, _)) = volumes.iter().find(|(_, v)| claim(v).is_some()) {
        return Err((
            "GN-CY0",
            format!(
                "{field}.existingClaim is user-managed and is never reused or derived by automatic cycle; create a replacement GarageNode and drain this one"
            ),
        ));
    }
    Ok(())
}

/// GN-CY1: the source is running, identified, connected and committed.
pub fn source_ready(node: &GarageNode) -> Result<(), Ineligible> {
    profile(node)?;
    let fail = |msg: &str| Err(("GN-CY1", msg.to_string()));
    if facts::is_deleting(node) {
        return fail("the source GarageNode is being deleted");
    }
    if facts::annotation(node, ANNOTATION_DRAIN).is_some()
        || facts::annotation(node, ANNOTATION_ACKNOWLEDGE_LOST_SOURCE).is_some()
    {
        return fail("the source has a drain or lost-source request; finish or cancel it first");
    }
    let status = node.status.clone().unwrap_or_default();
    if !is_node_id(&facts::status_node_id(node)) {
        return fail("the source has no observed status.nodeId yet");
    }
    if blank(status.observed_pod_uid.as_deref()) {
        return fail(
            "the source has no status.observedPodUid: its identity was not read from the exact running Pod",
        );
    }
    if status.observed_generation.unwrap_or_default() < node.metadata.generation.unwrap_or_default()
    {
        return fail(
            "the source status is stale (status.observedGeneration is older than metadata.generation)",
        );
    }
    if status.connected != Some(true) || status.in_layout != Some(true) {
        return fail("source must be connected and committed in the Garage layout");
    }
    Ok(())
}

/// GN-CY2: nothing in the parent's network shape binds the source's address.
pub fn parent_network(node: &GarageNode, parent: &GarageCluster) -> Result<(), Ineligible> {
    profile(node)?;
    let spec = &parent.spec;
    let checks = [
        (
            "network.rpcPublicAddr",
            spec.network
                .as_ref()
                .and_then(|n| n.rpc_public_addr.as_deref()),
        ),
        (
            "storage.rpcPublicAddr",
            spec.storage
                .as_ref()
                .and_then(|s| s.rpc_public_addr.as_deref()),
        ),
        (
            "gateway.rpcPublicAddr",
            spec.gateway
                .as_ref()
                .and_then(|g| g.rpc_public_addr.as_deref()),
        ),
    ];
    if let Some((field, _)) = checks.iter().find(|(_, v)| !blank(*v)) {
        return Err((
            "GN-CY2",
            format!(
                "automatic cycle cannot share parent {field} across source and replacement identities"
            ),
        ));
    }
    if spec.public_endpoint.is_some() {
        return Err((
            "GN-CY2",
            "automatic cycle cannot share the parent publicEndpoint across source and replacement identities".to_string(),
        ));
    }
    Ok(())
}
