//! Which Kubernetes Nodes belong to which pool, and when a pool pod's activation gate may be
//! lifted. Pure: the cluster controller observes Nodes and pods and carries the result out.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::ResourceExt;
use shared_types::garage_cluster::v1beta2::NodeLocalPoolSpec;
use shared_types::keys::label;
use shared_types::keys::scheduling_gate::SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION;

/// True when `labels` satisfy `selector`. An empty or absent selector selects nothing: a pool
/// must say which Nodes it wants.
pub fn selects(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = selector else {
        return false;
    };
    !shared_types::selector::is_empty(selector) && shared_types::selector::matches(selector, labels)
}

/// Desired membership: pool name to the names of the Nodes it selects, and the Nodes more than
/// one pool selects (each such Node is left out of every pool and reported).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Membership {
    /// Pool name to selected Node names, sorted.
    pub members: BTreeMap<String, Vec<String>>,
    /// Node name to the pools that all select it.
    pub conflicts: BTreeMap<String, Vec<String>>,
}

/// The membership `pools` ask for among `nodes`.
pub fn membership(pools: &[NodeLocalPoolSpec], nodes: &[Node]) -> Membership {
    let mut m = Membership::default();
    for pool in pools {
        m.members.entry(pool.name.clone()).or_default();
    }
    for node in nodes {
        let labels = node.labels();
        let wanting: Vec<String> = pools
            .iter()
            .filter(|p| selects(p.selector.as_ref(), labels))
            .map(|p| p.name.clone())
            .collect();
        match wanting.as_slice() {
            [] => {}
            [pool] => m
                .members
                .entry(pool.clone())
                .or_default()
                .push(node.name_any()),
            _ => {
                m.conflicts.insert(node.name_any(), wanting);
            }
        }
    }
    for names in m.members.values_mut() {
        names.sort();
    }
    m
}

/// The Node a DaemonSet pod is bound to by its node affinity (the DaemonSet controller pins
/// each pod to exactly one Node by `metadata.name`).
pub fn target_node(pod: &Pod) -> Option<String> {
    let terms = pod
        .spec
        .as_ref()?
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms
        .clone();
    let mut names = terms.iter().flat_map(|t| {
        t.match_fields.iter().flatten().filter(|f| {
            f.key == "metadata.name"
                && f.operator == "In"
                && f.values.as_ref().is_some_and(|v| v.len() == 1)
        })
    });
    let first = names.next()?.values.as_ref()?.first()?.clone();
    // More than one pinning term would let the pod land on either Node: not one target.
    names.next().is_none().then_some(first)
}

/// True when `pod` is a pool pod of `pool`, controlled by a DaemonSet and scheduled on
/// Kubernetes Node `host`.
pub fn runs_on(pod: &Pod, pool: &str, host: &str) -> bool {
    pod.labels()
        .get(label::LABEL_NODE_LOCAL_POOL)
        .map(String::as_str)
        == Some(pool)
        && pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(host)
        && pod
            .owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && o.kind == "DaemonSet")
}

/// True while `pod` still carries the activation gate.
pub fn gated(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| {
            g.iter()
                .any(|g| g.name == SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION)
        })
}

/// The facts a gate release is checked against.
#[derive(Debug, Clone, Copy)]
pub struct GateCheck<'a> {
    /// UID of the pool's current DaemonSet.
    pub daemonset_uid: &'a str,
    /// The activation label key and the value that marks a Node active for this DaemonSet.
    pub activation: (&'a str, &'a str),
    /// The Nodes this pool selects now.
    pub selected: &'a [String],
    /// Every Node, as just read.
    pub nodes: &'a [Node],
    /// Every pool pod of this cluster (all pools, every DaemonSet incarnation).
    pub pool_pods: &'a [Pod],
}

/// Why the gate of `pod` must stay, or `Ok` when it may be lifted now.
pub fn may_release(pod: &Pod, c: &GateCheck<'_>) -> Result<(), String> {
    let name = pod.name_any();
    if pod.metadata.deletion_timestamp.is_some() {
        return Err(format!("pod {name} is terminating"));
    }
    let owned = pod
        .owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && o.kind == "DaemonSet" && o.uid == c.daemonset_uid);
    if !owned {
        return Err(format!(
            "pod {name} is not controlled by the pool's current DaemonSet; it stays gated"
        ));
    }
    let Some(target) = target_node(pod) else {
        return Err(format!("pod {name} does not target exactly one Node"));
    };
    let Some(node) = c.nodes.iter().find(|n| n.name_any() == target) else {
        return Err(format!("Node {target} of pod {name} does not exist"));
    };
    if !c.selected.contains(&target) {
        return Err(format!("Node {target} is no longer selected by the pool"));
    }
    let (key, value) = c.activation;
    if node.labels().get(key).map(String::as_str) != Some(value) {
        return Err(format!(
            "Node {target} does not carry this pool's activation"
        ));
    }
    // No other pool pod may run or be about to run on that Node: one process per disk.
    let other = c.pool_pods.iter().find(|p| {
        p.metadata.uid != pod.metadata.uid
            && (target_node(p).as_deref() == Some(target.as_str())
                || p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(target.as_str()))
            && (!gated(p) || p.metadata.deletion_timestamp.is_some())
    });
    if let Some(other) = other {
        return Err(format!(
            "pool pod {} still exists on Node {target}; pod {name} waits for it to be gone",
            other.name_any()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
