//! What the operator's drain shows in the API, stamped as the bench polls it: the drain
//! annotation on the node, each field of `status.storageDrain` as it is first written, the
//! node's `DrainPrepared=True`, the node and its pod going; and every change of the record
//! and of the `StorageDrainReady` condition, which show where the time went.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::ResourceExt as _;
use shared_types::conditions::{
    cluster::CONDITION_STORAGE_DRAIN_READY, node::CONDITION_DRAIN_PREPARED,
};
use shared_types::garage_cluster::common::StorageDrainStatus;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::ANNOTATION_DRAIN;

/// The steps, in the order the drain takes them.
pub(crate) const STEPS: [&str; 10] = [
    "drain annotation on the node",
    "intent recorded (status.storageDrain)",
    "role removed (status.layoutVersion moved)",
    "repairs launched (repairBaselines)",
    "repairs adopted (repairWorkerIds)",
    "quiet window began (quietSince)",
    "proof complete (completedAt)",
    "DrainPrepared=True on the node",
    "GarageNode gone",
    "pod gone",
];
/// Index of the annotation step.
pub(crate) const ANNOTATED: usize = 0;
/// Index of the completion step.
pub(crate) const COMPLETED: usize = 6;
/// Index of the node's deletion.
pub(crate) const NODE_GONE: usize = 8;
/// Index of the pod's deletion.
const POD_GONE: usize = 9;

/// One poll: the cluster, the drained node and whether its pod exists.
pub(crate) struct Poll<'a> {
    /// The GarageCluster.
    pub cluster: &'a GarageCluster,
    /// The GarageNode being drained, while it exists.
    pub node: Option<&'a GarageNode>,
    /// Its pod exists.
    pub pod: bool,
}

/// Each step's first sighting and every change of the record and of `StorageDrainReady`, as
/// times from the scale-down patch.
#[derive(Debug, Default)]
pub(crate) struct Milestones {
    /// Per step of [`STEPS`].
    pub at: [Option<Duration>; STEPS.len()],
    /// The record's fields and the condition, each time they changed.
    pub changes: Vec<(Duration, String)>,
    /// `status.layoutVersion` when the patch was sent.
    initial_version: Option<i64>,
    /// The last record and condition seen, to tell a change.
    last: (String, String),
}

impl Milestones {
    /// Starts from the layout version the cluster published before the patch.
    pub(crate) fn new(initial_version: Option<i64>) -> Self {
        Self {
            initial_version,
            ..Self::default()
        }
    }

    /// Stamps what `poll` shows for the first time at `elapsed`.
    pub(crate) fn observe(&mut self, elapsed: Duration, poll: &Poll<'_>) {
        let status = poll.cluster.status.as_ref();
        let record = status.and_then(|s| s.storage_drain.as_ref());
        let seen = [
            poll.node.is_some_and(|n| {
                n.annotations()
                    .get(ANNOTATION_DRAIN)
                    .is_some_and(|v| v == "true")
            }),
            record.is_some(),
            status
                .and_then(|s| s.layout_version)
                .is_some_and(|v| Some(v) > self.initial_version),
            record.is_some_and(|r| r.repair_baselines.is_some()),
            record.is_some_and(|r| {
                r.repair_worker_ids.as_ref().is_some_and(|ids| {
                    !ids.is_empty()
                        && Some(ids.len()) == r.verification_node_ids.as_ref().map(Vec::len)
                })
            }),
            record.is_some_and(|r| r.quiet_since.is_some()),
            record.is_some_and(|r| r.completed_at.is_some()),
            poll.node.is_some_and(|n| {
                condition(
                    n.status.as_ref().and_then(|s| s.conditions.as_deref()),
                    CONDITION_DRAIN_PREPARED,
                )
                .is_some_and(|c| c.status == "True")
            }),
            // Gone only counts once it was seen drained, not before it was read at all.
            poll.node.is_none() && self.at[ANNOTATED].is_some(),
            !poll.pod && self.at[ANNOTATED].is_some(),
        ];
        for (slot, now) in self.at.iter_mut().zip(seen) {
            if now && slot.is_none() {
                *slot = Some(elapsed);
            }
        }
        let record = record.map_or_else(|| "record: none".into(), describe);
        if record != self.last.0 {
            self.changes.push((elapsed, record.clone()));
            self.last.0 = record;
        }
        let current = condition(
            status.and_then(|s| s.conditions.as_deref()),
            CONDITION_STORAGE_DRAIN_READY,
        )
        .map(|c| format!("StorageDrainReady {} {}: {}", c.status, c.reason, c.message))
        .unwrap_or_default();
        // A message that only counts seconds on is the same wait, not a change.
        if without_digits(&current) != without_digits(&self.last.1) {
            self.changes.push((elapsed, current.clone()));
            self.last.1 = current;
        }
    }

    /// The node and its pod are gone: nothing is left to see.
    pub(crate) fn finished(&self) -> bool {
        self.at[NODE_GONE].is_some() && self.at[POD_GONE].is_some()
    }

    /// Annotation -> completedAt, the figure read against the floor.
    pub(crate) fn annotated_to_completed(&self) -> Option<Duration> {
        Some(self.at[COMPLETED]?.saturating_sub(self.at[ANNOTATED]?))
    }
}

pub(crate) fn condition<'a>(
    conditions: Option<&'a [Condition]>,
    type_: &str,
) -> Option<&'a Condition> {
    conditions?.iter().find(|c| c.type_ == type_)
}

/// The record's fields that move as the drain advances (not the queue length, which Garage
/// changes all the time).
fn describe(r: &StorageDrainStatus) -> String {
    let clock = |t: &Option<Time>| {
        t.as_ref()
            .map(|t| t.0.to_string())
            .and_then(|t| t.get(11..19).map(str::to_owned))
            .unwrap_or_else(|| "-".into())
    };
    format!(
        "record: startedAt {}, repairs launched {}, adopted {}/{}, quietSince {}, completedAt {}, \
         errors {}",
        clock(&r.started_at),
        if r.repair_baselines.is_some() {
            "yes"
        } else {
            "no"
        },
        r.repair_worker_ids.as_ref().map_or(0, |ids| ids.len()),
        r.verification_node_ids.as_ref().map_or(0, Vec::len),
        clock(&r.quiet_since),
        clock(&r.completed_at),
        r.error_count.unwrap_or(0)
    )
}

pub(crate) fn without_digits(text: &str) -> String {
    text.chars().filter(|c| !c.is_ascii_digit()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counting_message_is_one_wait() {
        assert_eq!(
            without_digits("quiet for 5s of 630s"),
            without_digits("quiet for 125s of 630s")
        );
        assert_ne!(
            without_digits("quiet for 5s of 630s"),
            without_digits("Blocks repairs running on 1a2b (Busy)")
        );
    }
}
