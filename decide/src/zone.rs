//! The layout zone of a member: `spec.zone`, or with `zoneFrom` the value of a label on the
//! Kubernetes Node its pod runs on. The GarageNode controller resolves it from its own pod and
//! publishes it in `status.zone`; the cluster controller, the single layout writer, takes it
//! from there, so a Node relabelled moves the role's zone through the ordinary layout plan,
//! one role per version.
//!
//! Resolution, in order:
//! - no `zoneFrom` (or an external node, which has no Kubernetes Node): `spec.zone`;
//! - the Node was read and carries the label with a value: that value;
//! - the Node was read and lacks the label (or holds it empty): `spec.zone`, deliberately;
//! - nothing could be read (no pod, pod not scheduled, Node gone or refused, a pass that
//!   stopped before reading it): the zone last published, else `spec.zone`. A pod restarting
//!   elsewhere does not move a role on a guess.

use shared_types::garage_node::GarageNode;

use crate::desired::{DesiredError, Settings};

/// What the GarageNode controller read of the Kubernetes Node its pod runs on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum HostZone {
    /// Nothing was asked: the member has no `zoneFrom`, or the pass stopped before.
    #[default]
    NotRead,
    /// The pod is missing or not scheduled, or its Node does not exist.
    Unknown,
    /// The Node's labels were read: the value of the `zoneFrom` label, if it has one.
    Read(Option<String>),
    /// The API server refused to return the Node, with what it said.
    Forbidden(String),
}

/// The Node label `node` takes its zone from: its own `spec.zoneFrom`, or for a node-local
/// pool member (always the operator's) the cluster's. External members have no Kubernetes
/// Node and gateways never take one; both keep `spec.zone`.
pub fn label_key<'a>(node: &'a GarageNode, s: Option<&'a Settings>) -> Option<&'a str> {
    let spec = &node.spec;
    if spec.external.is_some() || spec.gateway == Some(true) {
        return None;
    }
    let own = spec.zone_from.as_ref().map(|z| z.node_label.as_str());
    let pool = (spec.backing == Some(shared_types::garage_node::NodeBacking::NodeLocalPool))
        .then(|| s.and_then(|s| s.zone_from.as_deref()))
        .flatten();
    own.or(pool).filter(|k| !k.is_empty())
}

/// The zone `node` publishes in `status.zone`, from what was read of its host. A pass that
/// read nothing of it (no parent settings, which a pool member's `zoneFrom` comes from, or a
/// pass that stopped before the read) keeps the zone last published.
pub fn resolve(node: &GarageNode, s: Option<&Settings>, host: &HostZone) -> String {
    let fallback = node.spec.zone.clone();
    let last = node
        .status
        .as_ref()
        .and_then(|st| st.zone.clone())
        .filter(|z| !z.is_empty());
    if s.is_none() {
        return last.unwrap_or(fallback);
    }
    if label_key(node, s).is_none() {
        return fallback;
    }
    match host {
        HostZone::Read(Some(value)) if !value.is_empty() => value.clone(),
        HostZone::Read(_) => fallback,
        HostZone::NotRead | HostZone::Unknown | HostZone::Forbidden(_) => last.unwrap_or(fallback),
    }
}

/// The zone the layout gives `node`'s role: what its controller published when it takes
/// its zone from a Node, else `spec.zone`.
pub fn layout_zone(node: &GarageNode, s: &Settings) -> String {
    if label_key(node, Some(s)).is_none() {
        return node.spec.zone.clone();
    }
    node.status
        .as_ref()
        .and_then(|st| st.zone.clone())
        .filter(|z| !z.is_empty())
        .unwrap_or_else(|| node.spec.zone.clone())
}

/// Why `zoneFrom` cannot be followed, if it cannot: the API server refused this install the
/// Node its pod runs on. The member is reported rather than left on a zone it cannot check.
pub fn refusal(host: &HostZone) -> Option<DesiredError> {
    match host {
        HostZone::Forbidden(why) => Some(DesiredError::Invalid {
            field: "spec.zoneFrom",
            message: format!(
                "the Kubernetes Node this member runs on cannot be read ({why}); give the operator get and watch on nodes (the chart does), or set spec.zone instead"
            ),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
