//! Facts about an observed world that the invariants are stated in, read from the objects
//! themselves where the reconciler's own helpers are private or are what is being checked.

use std::time::Duration;

use decide::cluster::observed::Observed;
use decide::conditions::Desired;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use reconciler::garage::{ClusterLayout, LayoutHistory, NodeId, StagedRoleChange};
use reconciler::machine::drain::GC_GATE;
use reconciler::machine::rollout::MAX_RETIRED_WORKLOADS;
use reconciler::names;
use shared_types::garage_cluster::common::{StorageDrainStatus, StorageRolloutStatus};
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::ANNOTATION_DRAIN;

/// Every storage node up and every partition fully replicated (the drain's own definition,
/// which the invariants hold the decisions to).
pub use reconciler::machine::drain::fully_healthy;

/// Asserts that `conditions` have distinct types, all in `owned`: status conditions are a map
/// keyed by type, and a type the controller does not own would never be removed again.
pub fn owned_and_distinct(conditions: &[Desired], owned: &[&str]) {
    let mut types: Vec<&str> = conditions.iter().map(|c| c.type_).collect();
    assert!(
        types.iter().all(|t| owned.contains(t)),
        "a condition type it does not own: {types:?}"
    );
    types.sort_unstable();
    let all = types.len();
    types.dedup();
    assert_eq!(
        all,
        types.len(),
        "two conditions of one type: {conditions:?}"
    );
}

/// Nothing is staged but the removal of `id` (and no parameters other than the current ones).
pub fn staged_only_removal_of(layout: &ClusterLayout, id: &NodeId) -> bool {
    layout
        .staged_role_changes
        .iter()
        .all(|c| matches!(c, StagedRoleChange::Remove { id: staged, .. } if staged == id))
        && layout
            .staged_parameters
            .as_ref()
            .is_none_or(|p| *p == layout.parameters)
}

/// Storage roles (positive capacity) of nodes other than `id`.
pub fn storage_roles_except(layout: &ClusterLayout, id: &NodeId) -> usize {
    layout
        .roles
        .iter()
        .filter(|r| r.capacity.is_some_and(|c| c > 0) && r.id != *id)
        .count()
}

/// The node IDs among `list` (a record's node set).
fn node_ids(list: Option<&Vec<String>>) -> Vec<NodeId> {
    list.into_iter()
        .flatten()
        .filter_map(|i| i.parse().ok())
        .collect()
}

/// The node IDs a record names as removed.
pub fn removed_ids(record: &StorageDrainStatus) -> Vec<NodeId> {
    node_ids(record.removed_storage_node_ids.as_ref())
}

/// The node IDs whose roles a record removes (storage and gateway roles alike).
pub fn role_ids(record: &StorageDrainStatus) -> Vec<NodeId> {
    node_ids(record.role_removal_node_ids.as_ref())
}

/// The node IDs a record names as lost.
pub fn lost_ids(record: &StorageDrainStatus) -> Vec<NodeId> {
    node_ids(record.unavailable_source_node_ids.as_ref())
}

/// Every GarageNode of the world.
pub fn all_nodes(o: &Observed) -> Vec<&GarageNode> {
    o.generated
        .values()
        .chain(o.user_nodes.iter())
        .chain(o.pool_members.iter())
        .chain(o.gateways.values())
        .collect()
}

/// The GarageNode a drain record's actor names exactly (namespace, name and UID).
pub fn drain_actor<'a>(o: &'a Observed, record: &StorageDrainStatus) -> Option<&'a GarageNode> {
    let actor = record.actor.as_ref()?;
    all_nodes(o).into_iter().find(|n| {
        actor.namespace.as_deref() == n.namespace().as_deref()
            && actor.name.as_deref() == Some(n.name_any().as_str())
            && actor.uid.is_some()
            && actor.uid == n.metadata.uid
    })
}

/// The identity `node` records, as a list of zero or one ID (a record names its actor's).
pub fn recorded_ids(node: &GarageNode) -> Vec<NodeId> {
    node.status
        .as_ref()
        .and_then(|st| st.node_id.as_deref())
        .and_then(|i| i.parse().ok())
        .into_iter()
        .collect()
}

/// True when `node` is annotated `drain=true`.
pub fn asks_to_drain(node: &GarageNode) -> bool {
    node.annotations().get(ANNOTATION_DRAIN).map(String::as_str) == Some("true")
}

/// The identity `node` runs, proven: declared by an external node, or recorded from the pod
/// that runs now.
pub fn proven_id(o: &Observed, node: &GarageNode) -> Option<NodeId> {
    if node.spec.external.is_some() {
        return node
            .spec
            .node_id
            .as_deref()?
            .to_ascii_lowercase()
            .parse()
            .ok();
    }
    let status = node.status.as_ref()?;
    let pod = o
        .pods
        .iter()
        .find(|p| p.name_any() == names::node_pod(&node.name_any()))?;
    (pod.metadata.uid.is_some() && pod.metadata.uid == status.observed_pod_uid)
        .then(|| status.node_id.as_deref()?.parse().ok())
        .flatten()
}

/// Asserts that `next`, written over the recorded drain `prev`, continues its transaction:
/// the same ID, actor, target hash and node sets.
pub fn continues_drain(prev: &StorageDrainStatus, next: &StorageDrainStatus) {
    let identity = |r: &StorageDrainStatus| {
        (
            r.transaction_id.clone(),
            r.actor.clone(),
            r.target_hash.clone(),
            r.removed_storage_node_ids.clone(),
            r.role_removal_node_ids.clone(),
            r.unavailable_source_node_ids.clone(),
        )
    };
    assert_eq!(
        identity(next),
        identity(prev),
        "a continuing drain changed its transaction"
    );
}

/// Asserts what completing the drain `prev` (as `next`) takes: its roles gone from `layout`,
/// a settled `history`, a quiet window of at least `quiet` before `now` and, for a live
/// source, Garage's block hand-over delay since the removal.
pub fn completion_earned(
    prev: &StorageDrainStatus,
    next: &StorageDrainStatus,
    layout: &ClusterLayout,
    history: &LayoutHistory,
    now: Timestamp,
    quiet: Duration,
) {
    assert!(
        removed_ids(next).iter().all(|i| layout.role(i).is_none()),
        "completed with the role in place"
    );
    assert!(history.is_settled(), "completed over an unsettled history");
    let since = prev
        .quiet_since
        .as_ref()
        .expect("completed without a quiet window")
        .0;
    assert!(
        now.duration_since(since).unsigned_abs() >= quiet,
        "completed inside the quiet window"
    );
    if lost_ids(next).is_empty() {
        let started = prev.started_at.as_ref().expect("a started drain").0;
        assert!(
            now.duration_since(started).unsigned_abs() >= GC_GATE,
            "completed before Garage's hand-over delay"
        );
    }
}

/// Asserts that `next`, written over the recorded rollout `prev`, keeps its actor, the pod it
/// replaces and the identity that must come back, and remembers no more retired workload
/// incarnations than the limit.
pub fn continues_rollout(prev: &StorageRolloutStatus, next: &StorageRolloutStatus) {
    assert_eq!(
        (
            &next.garage_node_uid,
            &next.previous_pod_uid,
            &next.garage_node_id
        ),
        (
            &prev.garage_node_uid,
            &prev.previous_pod_uid,
            &prev.garage_node_id
        ),
        "a continuing rollout changed its actor"
    );
    assert!(next.retired_workload_uids.as_ref().map_or(0, Vec::len) <= MAX_RETIRED_WORKLOADS);
}
