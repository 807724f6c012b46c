//! The retirement of a capacity-less (gateway) identity: a role-only transaction.
//!
//! A gateway stores no blocks, so there is nothing to prove about data: its role is removed in
//! one layout version as soon as nothing foreign is staged (no health or settled-history gate,
//! and never `skip-dead-nodes`), and the transaction completes once the history holds no
//! older version any more. Garage waits for every node of every version it keeps to
//! acknowledge the new one, gateways included; an old identity that will never run again
//! (one that lost its metadata) is the one case where the operator advances that
//! acknowledgement itself, and only while it is the only node down ([`retired_only_down`]).
//! A gateway that lost its metadata runs a new identity: the same
//! transaction then adds the new identity's role in the very version that removes the old
//! one, so the layout never lacks a role for it, and completes once the GarageNode records
//! the new identity. The record names the identity in `roleRemovalNodeIds` and nothing
//! in `removedStorageNodeIds`, which is what admission and the GarageNode controller check
//! before the gateway's workload may stop.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use shared_types::conditions::reason;
use shared_types::drain as contract;
use shared_types::garage_cluster::common::StorageDrainStatus;

use super::{Candidate, Observed, Step, wait};
use garage_api_types::{NodeId, StagedRoleChange};

/// The first step for a leaving gateway: record the intent to remove its role.
pub(super) fn start(o: &Observed<'_>, c: &Candidate) -> Step {
    let Some(id) = c.lost.recorded_id.as_ref() else {
        return wait(
            reason::REASON_WAITING_FOR_DRAIN_SAFETY,
            format!(
                "gateway {} leaves but has no recorded Garage identity; nothing is removed",
                c.name
            ),
        );
    };
    if let Some(why) = foreign_staged(o, id) {
        return why;
    }
    let ids = vec![id.to_string()];
    Step::Record(StorageDrainStatus {
        actor: Some(super::actor(c)),
        transaction_id: Some(o.new_transaction_id.to_owned()),
        started_at: Some(Time(o.now)),
        target_hash: Some(contract::target_hash(&ids, &[], &[])),
        role_removal_node_ids: Some(ids),
        removed_storage_node_ids: Some(Vec::new()),
        layout_version: i64::try_from(o.layout.version).ok(),
        error_count: Some(0),
        queue_length: Some(0),
        requires_empty_queue: Some(false),
        ..StorageDrainStatus::default()
    })
}

/// The next step of a recorded role-only transaction.
pub(super) fn advance(o: &Observed<'_>, record: &StorageDrainStatus) -> Step {
    let targets: Vec<NodeId> = record
        .role_removal_node_ids
        .iter()
        .flatten()
        .filter_map(|i| i.parse().ok())
        .collect();
    let actor = o
        .candidates
        .iter()
        .find(|c| contract::actor_is_node(record, &c.namespace, &c.name, &c.uid));
    if let Some(id) = targets.iter().find(|t| o.layout.role(t).is_some()) {
        if !o.actor_requests {
            // The gateway stays as it was after all: nothing was removed yet.
            return Step::Clear;
        }
        if let Some(why) = foreign_staged(o, id) {
            return why;
        }
        let version = o.layout.version + 1;
        return match actor.map(|c| &c.swap) {
            Some(Some((new, role))) => Step::SwapRole {
                remove: id.clone(),
                add: garage_api_types::RoleChange::Assign {
                    id: new.clone(),
                    zone: role.zone.clone(),
                    capacity: None,
                    tags: role.tags.clone(),
                },
                version,
            },
            // Without its role a gateway keeps no copy of the access keys and refuses
            // signed requests: it leaves its Service first.
            Some(None) if actor.is_some_and(|c| c.serving) => wait(
                reason::REASON_DRAINING,
                "the leaving gateway's pod is taken out of the gateway Service before its role goes".into(),
            ),
            Some(None) => Step::RemoveRole {
                id: id.clone(),
                version,
            },
            None => wait(
                reason::REASON_DRAINING,
                "the gateway's new identity is not known yet; its old role stays until it can be swapped".into(),
            ),
        };
    }
    if !o.history.is_settled() {
        if retired_only_down(o, &targets) {
            return Step::SkipRetiredAcks {
                version: o.layout.version,
            };
        }
        return wait(
            reason::REASON_DRAINING,
            "the gateway role is removed; waiting until every node has synced the layout version without it".into(),
        );
    }
    // Completion needs the actor seen this pass: a leaving gateway is (until its finalizer
    // goes), and a swapped one completes once its GarageNode records the new identity, since
    // after the record is gone nothing would tell it the old one was retired on purpose.
    let Some(c) = actor else {
        return wait(
            reason::REASON_DRAINING,
            "the gateway role is out of the layout; waiting to see the gateway's new identity up before completing".into(),
        );
    };
    if c.swap.is_some() && c.node_id.as_ref().is_none_or(|id| targets.contains(id)) {
        return wait(
            reason::REASON_DRAINING,
            format!(
                "the gateway role is swapped; waiting for {} to record its new identity",
                c.name
            ),
        );
    }
    let mut done = record.clone();
    done.completed_at = Some(Time(o.now));
    done.layout_version = i64::try_from(o.layout.version).ok();
    Step::Record(done)
}

/// True when the history waits only on retired identities that will not come back: Garage
/// counts the acknowledgement of every node of every version it keeps, gateways included, so
/// the old identity of a gateway that lost its metadata (dead by definition) holds the history
/// until its tracker is advanced. That is done only while every node Garage tracks that is not
/// up is one of `targets`, none of which holds a role any more: the advance then touches
/// nothing else. It moves acknowledgements only, never the sync of data.
fn retired_only_down(o: &Observed<'_>, targets: &[NodeId]) -> bool {
    let Some(trackers) = &o.history.update_trackers else {
        return false;
    };
    let current = o.history.current_version;
    let lagging: Vec<&NodeId> = trackers
        .iter()
        .filter(|(_, t)| t.ack < current)
        .map(|(id, _)| id)
        .collect();
    let down_elsewhere = trackers
        .keys()
        .any(|id| !o.up.contains(id) && !targets.contains(id));
    !lagging.is_empty()
        && lagging.iter().all(|id| targets.contains(id))
        && !down_elsewhere
        && targets
            .iter()
            .all(|t| !o.up.contains(t) && o.layout.role(t).is_none())
}

/// A wait when Garage's staging area holds anything but the removal of `id`.
fn foreign_staged(o: &Observed<'_>, id: &NodeId) -> Option<Step> {
    let ours = |c: &StagedRoleChange| matches!(c, StagedRoleChange::Remove { id: staged, .. } if staged == id);
    let parameters = o
        .layout
        .staged_parameters
        .as_ref()
        .is_some_and(|p| *p != o.layout.parameters);
    (!o.layout.staged_role_changes.iter().all(ours) || parameters).then(|| {
        wait(
            reason::REASON_FOREIGN_STAGED_CHANGES,
            "Garage's staging area holds changes; the gateway's role removal does not apply over them".into(),
        )
    })
}
