//! The garage.toml a StatefulSet-backed member mounts: the cluster's shared revision, or, when
//! the member advertises an RPC address of its own, a revision of its own that differs from
//! the shared one only in `rpc_public_addr` (and for a gateway of a discovering cluster, in
//! the discovery section, below).
//!
//! A member's own address (first match wins):
//! 1. its GarageNode's `spec.network.rpcPublicAddr` (an Auto member gets it from the cluster's
//!    `spec.storage.rpcPublicAddr`, with `{ordinal}` replaced by its slot);
//! 2. the address a publicEndpoint gives it alone ([`super::public_endpoint::member_address`]).
//!
//! Without one it mounts the shared revision, where the cluster's `spec.network.rpcPublicAddr`
//! or its shared load balancer's address stands.
//!
//! A gateway, when the cluster turns on Garage's Kubernetes discovery, mounts a revision of
//! its own without the `[kubernetes_discovery]` section ([`own_config`]): a gateway that lost
//! its metadata starts as a new identity, and with discovery it would find its peers, turn
//! Ready and serve requests it cannot answer before the operator takes it out of the
//! gateway Service. Without discovery it stays unconnected, so un-Ready, until the operator
//! has taken it out and asks it to dial its peers; a gateway that restarts with its identity
//! reconnects from its stored peer list, and the operator dials any member Garage sees down.
//!
//! Node-local pool members share their pool's revision and publish their address as an
//! `rpc-address:` layout tag instead; external members run no garage.toml here. A member with
//! its own address also carries it in that tag, so that peers reconnecting from the layout
//! reach it where it said it is.
//!
//! The cluster controller publishes every member's revision (it is the only writer of config
//! revisions, and prunes those nothing mounts once a rollout has converged); the GarageNode
//! controller mounts its own only once it exists with the body its name promises.

use kube::ResourceExt;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{GarageNode, NodeBacking};

use super::config::{self, ConfigRevision};
use super::{DesiredError, Settings, labels};
use crate::names;

/// The placeholder of `spec.storage.rpcPublicAddr` that stands for an Auto member's slot.
pub const ORDINAL_PLACEHOLDER: &str = "{ordinal}";

/// The RPC address `node` advertises in place of the cluster's, if it has one of its own.
pub fn own_rpc_public_addr(node: &GarageNode, s: &Settings) -> Option<String> {
    if node.spec.external.is_some() || node.spec.backing == Some(NodeBacking::NodeLocalPool) {
        return None;
    }
    node.spec
        .network
        .as_ref()
        .and_then(|n| n.rpc_public_addr.as_deref())
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .or_else(|| super::public_endpoint::member_address(node, s))
}

/// The address `node`'s Garage advertises to its peers, if not its pod's: its own, else the
/// cluster's shared one (`spec.network.rpcPublicAddr`, or the shared load balancer's).
pub fn advertised(node: &GarageNode, s: &Settings) -> Option<String> {
    own_rpc_public_addr(node, s).or_else(|| {
        s.rpc_public_addr
            .clone()
            .or_else(|| super::public_endpoint::shared_address(s))
    })
}

/// The address an Auto member in slot `ordinal` advertises: the cluster's
/// `spec.storage.rpcPublicAddr` with `{ordinal}` replaced, if the cluster sets one.
pub fn auto_rpc_public_addr(c: &GarageCluster, ordinal: u32) -> Option<String> {
    with_ordinal(c.spec.storage.as_ref()?.rpc_public_addr.as_deref(), ordinal)
}

/// The address generated gateway `ordinal` advertises: `spec.gateway.rpcPublicAddr` with
/// `{ordinal}` replaced, if the cluster sets one.
pub fn gateway_rpc_public_addr(c: &GarageCluster, ordinal: u32) -> Option<String> {
    with_ordinal(c.spec.gateway.as_ref()?.rpc_public_addr.as_deref(), ordinal)
}

/// A tier's address template with `{ordinal}` replaced; `None` when it is unset or blank.
fn with_ordinal(template: Option<&str>, ordinal: u32) -> Option<String> {
    template
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(|a| a.replace(ORDINAL_PLACEHOLDER, &ordinal.to_string()))
}

/// True when `node` mounts a revision of its own rather than the cluster's shared one: it
/// advertises an address of its own, or it is a gateway of a cluster that runs Kubernetes
/// discovery.
pub fn own_config(c: &GarageCluster, node: &GarageNode, s: &Settings) -> bool {
    own_rpc_public_addr(node, s).is_some() || gateway_without_discovery(c, node)
}

/// A gateway of the gateway tier (or a user-written gateway GarageNode) of a cluster whose
/// storage members run Garage's Kubernetes discovery: it runs without it (see the module's
/// documentation). The members of an edge gateway cluster run what their own cluster sets.
pub fn gateway_without_discovery(c: &GarageCluster, node: &GarageNode) -> bool {
    super::nodes::is_gateway(node)
        && node.spec.external.is_none()
        && node.spec.backing != Some(NodeBacking::NodeLocalPool)
        && !super::edge::is_edge(c)
        && config::kubernetes_discovery(c)
}

/// The config revision `node`'s pod mounts.
pub fn revision_for(
    c: &GarageCluster,
    s: &Settings,
    node: &GarageNode,
) -> Result<ConfigRevision, DesiredError> {
    if !own_config(c, node, s) {
        return config::revision(c, s);
    }
    let mut own = c.clone();
    if let Some(addr) = own_rpc_public_addr(node, s) {
        own.spec
            .network
            .get_or_insert_with(Default::default)
            .rpc_public_addr = Some(addr);
    }
    if gateway_without_discovery(c, node)
        && let Some(k) = own
            .spec
            .discovery
            .as_mut()
            .and_then(|d| d.kubernetes.as_mut())
    {
        k.enabled = Some(false);
    }
    let body = config::render(&own, s)?;
    let revision = names::sha256_hex(body.as_bytes());
    let base = names::node_config_base(&s.name, &node.name_any());
    config::revision_of(
        c,
        s,
        &base,
        revision,
        body,
        labels::cluster_labels(&s.name),
        Default::default(),
    )
}

/// The revisions of `nodes` that are not the shared one, each once.
pub fn own_revisions<'a>(
    c: &GarageCluster,
    s: &Settings,
    nodes: impl IntoIterator<Item = &'a GarageNode>,
) -> Result<Vec<ConfigRevision>, DesiredError> {
    let mut out: Vec<ConfigRevision> = Vec::new();
    for node in nodes {
        if !own_config(c, node, s) {
            continue;
        }
        let r = revision_for(c, s, node)?;
        if !out.iter().any(|o| o.name == r.name) {
            out.push(r);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
