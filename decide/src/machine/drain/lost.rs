//! Recovery of a storage identity whose process and disks are gone for good: a lost
//! Kubernetes Node, or a wiped or swapped metadata volume that brought up a new identity.
//!
//! The live-source proof is impossible there, so the user states the loss on the GarageNode
//! (`drain=true` with `acknowledge-lost-source=<the full ID>`). The operator checks the
//! statement against the persisted identity and against Garage (a process Garage sees up is
//! never treated as lost), records the transaction with the ID among
//! `unavailableSourceNodeIds`, and from then on the GarageNode controller keeps the workload
//! scaled to zero (the fence). The user removes the dead role with Garage's own dead-node
//! workflow; the operator never removes a lost role itself, because only a person can know
//! that the disks will not come back. Once the role is gone and the history has settled, the
//! destination-only proof runs: Blocks repairs on every surviving storage node, clean resync
//! state and the quiet window. It cannot bring back a block whose only copy was lost.

use shared_types::conditions::reason;
use shared_types::garage_cluster::common::StorageDrainStatus;
use shared_types::keys::annotation::{
    ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_ALLOW_MISSING_DATA, ANNOTATION_SKIP_DEAD_NODES,
};

use super::{Candidate, Observed, Step, intent, refused_by_policy, wait};
use garage_api_types::{NodeId, StagedRoleChange};

/// The IDs a record marks as lost (`unavailableSourceNodeIds`).
pub(super) fn unavailable(record: &StorageDrainStatus) -> Vec<NodeId> {
    record
        .unavailable_source_node_ids
        .iter()
        .flatten()
        .filter_map(|i| i.parse().ok())
        .collect()
}

/// The first step of a recovery: check the statement, then record it.
pub(super) fn start(o: &Observed<'_>, c: &Candidate, ack: &Result<NodeId, String>) -> Step {
    let blocked = |message: String| wait(reason::REASON_NODE_DRAIN_BLOCKED, message);
    let id = match ack {
        Ok(id) => id,
        Err(value) => {
            return blocked(format!(
                "{}: annotation {ANNOTATION_ACKNOWLEDGE_LOST_SOURCE} is {value:?}, not a full 64-hex Garage node ID; nothing is fenced",
                c.name
            ));
        }
    };
    let Some(recorded) = &c.lost.recorded_id else {
        return blocked(format!(
            "{} has no persisted Garage identity (status.nodeId), so there is no lost role to recover; nothing is fenced",
            c.name
        ));
    };
    if recorded != id {
        return blocked(format!(
            "{}: {ANNOTATION_ACKNOWLEDGE_LOST_SOURCE} names node {id} but its persisted identity is {recorded}; nothing is fenced",
            c.name
        ));
    }
    if o.up.contains(id) {
        return blocked(format!(
            "Garage reports node {} of {} up: a process that answers is not lost and is never fenced. Nothing proceeds while it is up",
            id.short(),
            c.name
        ));
    }
    if let Some(why) = refused_by_policy(o, id) {
        return why;
    }
    if let Some(replacement) = &c.lost.replacement
        && (o.layout.role(replacement).is_some() || staged(o, replacement))
    {
        return blocked(format!(
            "the replacement identity {} running in {}'s pod already has a committed or staged role; an assigned replacement needs an explicit dual-identity recovery plan, so nothing is fenced",
            replacement.short(),
            c.name
        ));
    }
    let others_down: Vec<&str> = o
        .layout
        .roles
        .iter()
        .filter(|r| r.capacity.is_some_and(|cap| cap > 0) && r.id != *id && !o.up.contains(&r.id))
        .map(|r| r.id.short())
        .collect();
    if !others_down.is_empty() {
        return wait(
            reason::REASON_WAITING_FOR_CLUSTER_HEALTH,
            format!(
                "storage node(s) {} are down as well; a lost-source recovery starts only while every other storage role is up (add replacement capacity first)",
                others_down.join(", ")
            ),
        );
    }
    Step::Record(intent(o, c, id, true))
}

/// What a recorded recovery waits for before its proof: the source still down, its pod
/// gone (the fence), its role removed by the user.
pub(super) fn hold(
    o: &Observed<'_>,
    record: &StorageDrainStatus,
    lost: &[NodeId],
    present: &[&NodeId],
) -> Option<Step> {
    if let Some(back) = lost.iter().find(|id| o.up.contains(id)) {
        return Some(wait(
            reason::REASON_NODE_DRAIN_BLOCKED,
            format!(
                "Garage reports node {} up again although it was acknowledged lost; the recovery stops while it answers",
                back.short()
            ),
        ));
    }
    let actor = record.actor.as_ref().and_then(|a| a.name.as_deref());
    if let Some(pod) = o
        .candidates
        .iter()
        .find(|c| Some(c.name.as_str()) == actor)
        .and_then(|c| c.lost.pod.as_deref())
    {
        return Some(wait(
            reason::REASON_DRAINING,
            format!(
                "fencing: the workload of {} is scaled to zero; waiting for pod {pod} to be gone. A pod on a permanently lost Kubernetes Node stays Terminating: delete that Node object, or force-delete the pod (kubectl delete pod {pod} --grace-period=0 --force)",
                actor.unwrap_or_default()
            ),
        ));
    }
    let id = present.first()?;
    let next = o.layout.version + 1;
    let message = if staged(o, id) {
        format!(
            "the removal of lost node {} is staged; apply it with `garage layout apply --version {next}`",
            id.short()
        )
    } else {
        format!(
            "the lost role {id} is still in layout version {}; the operator never removes a lost role itself. From one Garage node run `garage layout remove {id}`, review `garage layout show`, then `garage layout apply --version {next}`",
            o.layout.version
        )
    };
    Some(wait(reason::REASON_NODE_DRAIN_BLOCKED, message))
}

/// The role is gone but older layout versions are still live: a dead node cannot acknowledge
/// them, which only the user may override.
pub(super) fn unsettled(o: &Observed<'_>, lost: &[NodeId]) -> Step {
    let ids: Vec<&str> = lost.iter().map(NodeId::short).collect();
    wait(
        reason::REASON_DRAINING,
        format!(
            "the lost role is removed; older layout versions are still live (current {}). The lost node(s) {} cannot acknowledge them: once health and layout history are reviewed, annotate the GarageCluster {ANNOTATION_SKIP_DEAD_NODES}=true (add {ANNOTATION_ALLOW_MISSING_DATA}=true only if the surviving replicas are known to be sufficient)",
            o.layout.version,
            ids.join(", ")
        ),
    )
}

fn staged(o: &Observed<'_>, id: &NodeId) -> bool {
    o.layout.staged_role_changes.iter().any(|c| match c {
        StagedRoleChange::Remove { id: staged, .. }
        | StagedRoleChange::Assign { id: staged, .. } => staged == id,
    })
}
