//! Free space on the storage members' disks, decided purely: which members' data or metadata
//! partitions Garage reports below the threshold, the `StorageCapacityLow` condition and its
//! warning Event, and the hold this puts on a new drain and a new storage rollout.
//!
//! Both transactions are held, not stopped: a drain moves the leaving member's data onto the
//! others, and a pod replacement takes a member away while its peers take the writes, so
//! neither should begin while a disk is nearly full. One already recorded goes on, because
//! leaving it half done is worse than finishing it.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use shared_types::conditions::{cluster as cc, reason};

use super::members::MemberView;
use super::observed::{GarageView, Observed};
use super::removal::{self, Removal};
use crate::conditions::Desired;
use crate::machine::drain::Step;
use crate::machine::rollout as machine_rollout;
use crate::note::Note;
use garage_api_types::{ClusterStatus, FreeSpace};

/// The threshold when the install sets none: a member with less than 10% free is low.
pub const DEFAULT_LOW_PERCENT: u8 = 10;

/// The environment variable the reconciler reads the threshold from.
pub const LOW_PERCENT_ENV: &str = "GARAGE_STORAGE_CAPACITY_LOW_PERCENT";

/// At most this many partitions are named in the condition; the rest are counted, so that a
/// message stays readable and is never cut in the middle of an entry.
const NAMED: usize = 8;

/// The threshold in `value` (a whole percentage, 0 to 100), or an error naming
/// [`LOW_PERCENT_ENV`].
pub fn parse_low_percent(value: &str) -> Result<u8, String> {
    value
        .trim()
        .parse::<u8>()
        .ok()
        .filter(|p| *p <= 100)
        .ok_or_else(|| {
            format!(
                "{LOW_PERCENT_ENV}={value:?} is not a whole percentage from 0 to 100 (the free space below which a storage member counts as low; 0 turns the check off)"
            )
        })
}

/// One of a member's disks, as Garage reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Partition {
    /// Where Garage keeps object blocks (all data directories together).
    Data,
    /// Where Garage keeps its metadata database.
    Metadata,
}

impl Partition {
    fn name(self) -> &'static str {
        match self {
            Self::Data => "data",
            Self::Metadata => "metadata",
        }
    }
}

/// A member's partition with less free space than the threshold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LowPartition {
    /// The member's GarageNode.
    pub member: String,
    /// Which disk.
    pub partition: Partition,
    /// Bytes available.
    pub available: u64,
    /// Bytes in total.
    pub total: u64,
}

/// True when `space` has less than `percent` of its total free. A partition reporting no
/// total size cannot be judged and is not low.
fn is_low(space: FreeSpace, percent: u8) -> bool {
    space.total > 0
        && u128::from(space.available) * 100 < u128::from(percent) * u128::from(space.total)
}

/// The partitions of `views` that `status` reports below `percent` free, by member name.
/// Members without a known node ID, or whose space Garage does not report, are skipped.
pub fn low_partitions(
    views: &[MemberView],
    status: &ClusterStatus,
    percent: u8,
) -> Vec<LowPartition> {
    let mut low = Vec::new();
    for v in views {
        let Some(node) = v
            .member
            .node_id
            .as_ref()
            .and_then(|id| status.nodes.iter().find(|n| &n.id == id))
        else {
            continue;
        };
        for (partition, space) in [
            (Partition::Data, node.data_partition),
            (Partition::Metadata, node.metadata_partition),
        ] {
            if let Some(space) = space.filter(|s| is_low(*s, percent)) {
                low.push(LowPartition {
                    member: v.member.name.clone(),
                    partition,
                    available: space.available,
                    total: space.total,
                });
            }
        }
    }
    low.sort_by(|a, b| (&a.member, a.partition).cmp(&(&b.member, b.partition)));
    low
}

/// What free space says this pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assessment {
    /// `StorageCapacityLow`; `None` when nothing can be said (Garage unreadable and no
    /// shortage known), which removes the condition rather than calling the disks fine.
    pub condition: Option<Desired>,
    /// Why a new drain or storage rollout waits; `None` when nothing holds them.
    pub hold: Option<String>,
    /// The warning Event of a shortage that was not reported before.
    pub note: Option<Note>,
}

/// The assessment of a pass: from what Garage reported (`None`: it could not be read) and
/// the `StorageCapacityLow` condition the cluster carries from earlier passes.
pub fn assess(
    views: &[MemberView],
    status: Option<&ClusterStatus>,
    previous: Option<&Condition>,
    percent: u8,
) -> Assessment {
    let was_low = previous.is_some_and(|c| c.status == "True");
    let Some(status) = status else {
        // The last reading stands only when it was a shortage: keeping it keeps the hold on,
        // while keeping a "sufficient" reading would vouch for disks nobody could read.
        return match previous.filter(|_| was_low) {
            Some(c) => Assessment {
                condition: Some(low_condition(c.message.clone())),
                hold: Some(
                    "Garage cannot be read, and StorageCapacityLow last found a member low on disk space"
                        .into(),
                ),
                note: None,
            },
            None => Assessment::default(),
        };
    };
    let low = low_partitions(views, status, percent);
    if low.is_empty() {
        return Assessment {
            condition: Some(Desired {
                type_: cc::CONDITION_STORAGE_CAPACITY_LOW,
                status: false,
                reason: reason::REASON_STORAGE_CAPACITY_SUFFICIENT,
                message: if percent == 0 {
                    "the free-space check is off (threshold 0%)".into()
                } else {
                    format!(
                        "every data and metadata partition Garage reports for the members has at least {percent}% free"
                    )
                },
            }),
            hold: None,
            note: None,
        };
    }
    let condition = low_condition(low_message(&low, percent));
    let mut names: Vec<&str> = low.iter().map(|l| l.member.as_str()).collect();
    names.dedup();
    Assessment {
        note: (!was_low).then(|| {
            Note::warning(
                reason::REASON_STORAGE_CAPACITY_LOW,
                "HoldDrainAndRollout",
                condition.message.clone(),
            )
        }),
        condition: Some(condition),
        hold: Some(format!(
            "{} low on disk space (StorageCapacityLow)",
            match names.as_slice() {
                [one] => format!("{one} is"),
                many => format!("{} are", many.join(", ")),
            }
        )),
    }
}

/// [`assess`] over what the pass observed.
pub(super) fn of_pass(o: &Observed, views: &[MemberView], percent: u8) -> Assessment {
    let status = match &o.garage {
        GarageView::Read(read) => Some(&read.status),
        GarageView::Unavailable(_) => None,
    };
    let previous = o
        .cluster
        .status
        .as_ref()
        .and_then(|st| st.conditions.as_deref())
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.type_ == cc::CONDITION_STORAGE_CAPACITY_LOW)
        });
    assess(views, status, previous, percent)
}

fn low_condition(message: String) -> Desired {
    Desired {
        type_: cc::CONDITION_STORAGE_CAPACITY_LOW,
        status: true,
        reason: reason::REASON_STORAGE_CAPACITY_LOW,
        message,
    }
}

fn low_message(low: &[LowPartition], percent: u8) -> String {
    let mut entries: Vec<String> = low
        .iter()
        .take(NAMED)
        .map(|l| {
            format!(
                "{}: {} partition {} free of {} ({})",
                l.member,
                l.partition.name(),
                human_bytes(l.available),
                human_bytes(l.total),
                tenths_percent(l.available, l.total)
            )
        })
        .collect();
    if low.len() > NAMED {
        entries.push(format!("{} more", low.len() - NAMED));
    }
    format!(
        "{}. Below {percent}% free, new drains and storage rollouts wait until space is added or freed",
        entries.join("; ")
    )
}

impl Assessment {
    /// The drain's step, held while a member is low: a drain that has not been recorded yet
    /// does not start, and `StorageDrainReady` says why. A recorded drain goes on.
    pub fn hold_drain(&self, mut removal: Removal, recorded: bool) -> Removal {
        let (Some(why), false, Some(Step::Record(intent))) = (&self.hold, recorded, &removal.step)
        else {
            return removal;
        };
        // A gateway's retirement moves no data.
        if shared_types::drain::role_only(intent) {
            return removal;
        }
        let wait = Step::Wait {
            reason: reason::REASON_STORAGE_CAPACITY_LOW,
            message: format!(
                "{why}; a drain moves the leaving member's data onto the others, so it starts once space is added or freed"
            ),
        };
        let condition = removal::drain_condition(None, Some(&wait));
        removal
            .conditions
            .retain(|c| c.type_ != cc::CONDITION_STORAGE_DRAIN_READY);
        removal.conditions.push(condition);
        removal.step = Some(wait);
        removal
    }

    /// The rollout's step, held while a member is low: a pod replacement that has not been
    /// recorded yet does not start. A recorded one goes on.
    pub fn hold_rollout(
        &self,
        step: machine_rollout::Step,
        recorded: bool,
    ) -> machine_rollout::Step {
        match (&self.hold, step) {
            (Some(why), machine_rollout::Step::Record(_)) if !recorded => {
                machine_rollout::Step::Wait {
                    reason: reason::REASON_STORAGE_CAPACITY_LOW,
                    message: format!(
                        "{why}; a pod replacement takes a member away while the others take its writes, and a Garage process restarting on a nearly full disk may not come back, so the next pod is replaced once space is added or freed"
                    ),
                }
            }
            (_, step) => step,
        }
    }
}

/// `available` as a percentage of `total`, rounded down to a tenth so that a partition just
/// under the threshold never reads as at it. `total` is never 0 here ([`is_low`]).
fn tenths_percent(available: u64, total: u64) -> String {
    let tenths = u128::from(available) * 1000 / u128::from(total.max(1));
    format!("{}.{}%", tenths / 10, tenths % 10)
}

/// `1.5 GiB`-style size, rounded down to a tenth of its unit.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && n >> (10 * (unit + 1)) > 0 {
        unit += 1;
    }
    if unit == 0 {
        return format!("{n} B");
    }
    let tenths = (u128::from(n) * 10) >> (10 * unit);
    format!("{}.{} {}", tenths / 10, tenths % 10, UNITS[unit])
}

#[cfg(test)]
mod tests;
