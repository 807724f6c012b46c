//! What Garage reports about each member, in its GarageNode's status: `connected` and
//! `inLayout` (the `Connected` and `InLayout` printer columns), `hostname`, the partitions its
//! role stores, the size and use of its data and metadata filesystems, and `lastSeen` while it
//! is down. The cluster writes only these fields, and only where they changed; everything else
//! in a node's status is its own controller's.
//!
//! Figures that move all the time are published coarsely, so that a converged cluster writes
//! nothing: free space rounded down to a whole percent of the filesystem and kept while it
//! stays within a percent of what is recorded, and `lastSeen` kept while it stays within a
//! minute of what Garage reports.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::ResourceExt;
use shared_types::garage_node::{GarageNode, PartitionStatus};

use super::members::MemberView;
use super::observed::{GarageRead, Observed};

/// How far a recorded `lastSeen` may be from the one Garage's report gives before it is
/// written again: Garage counts whole seconds since its last ping, and passes run at any time.
const LAST_SEEN_SLACK: SignedDuration = SignedDuration::from_secs(60);

/// The facts of one member whose GarageNode says otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberFacts {
    /// GarageNode name.
    pub node: String,
    /// Garage sees its identity up.
    pub connected: bool,
    /// Its identity holds a storage role in the current layout.
    pub in_layout: bool,
    /// The host name Garage reports for it.
    pub hostname: Option<String>,
    /// Partitions its role stores in the current layout.
    pub partitions: Option<i64>,
    /// Its data filesystem (one figure even over several data paths).
    pub data_partition: Option<PartitionStatus>,
    /// Its metadata filesystem.
    pub metadata_partition: Option<PartitionStatus>,
    /// While it is down: when Garage last saw it. `None` while it is up.
    pub last_seen: Option<Time>,
}

/// The members whose GarageNode status differs from what Garage reported; none when Garage
/// could not be read or a member's identity is not known yet.
pub fn changed(o: &Observed, views: &[MemberView], read: Option<&GarageRead>) -> Vec<MemberFacts> {
    let Some(read) = read else {
        return Vec::new();
    };
    let nodes = o
        .generated
        .values()
        .chain(o.user_nodes.iter())
        .chain(o.pool_members.iter())
        .chain(o.gateways.values());
    let mut out = Vec::new();
    for gn in nodes {
        let name = gn.name_any();
        // A suspended member's GarageNode gets no write from the cluster either.
        let Some(id) = views
            .iter()
            .find(|v| v.member.name == name && !v.suspended)
            .and_then(|v| v.member.node_id.as_ref())
        else {
            continue;
        };
        let reported = read.status.nodes.iter().find(|n| &n.id == id);
        let role = read.layout.role(id);
        let facts = MemberFacts {
            node: name,
            connected: reported.is_some_and(|n| n.is_up),
            // A gateway's role has no capacity; a storage role without is not in place.
            in_layout: role.is_some_and(|r| {
                crate::desired::nodes::is_gateway(gn) || r.capacity.is_some_and(|c| c > 0)
            }),
            hostname: reported.and_then(|n| n.hostname.clone()),
            partitions: role
                .and_then(|r| r.stored_partitions)
                .and_then(|p| i64::try_from(p).ok()),
            data_partition: reported
                .and_then(|n| n.data_partition.as_ref())
                .map(|p| settle(coarse(p), recorded(gn, |s| s.data_partition.as_ref()))),
            metadata_partition: reported
                .and_then(|n| n.metadata_partition.as_ref())
                .map(|p| settle(coarse(p), recorded(gn, |s| s.metadata_partition.as_ref()))),
            last_seen: reported
                .filter(|n| !n.is_up)
                .and_then(|n| n.last_seen_secs_ago)
                .map(|ago| seen_at(o.now, ago, current_last_seen(gn))),
        };
        if differs(gn, &facts) {
            out.push(facts);
        }
    }
    out
}

fn recorded(
    gn: &GarageNode,
    field: impl Fn(&shared_types::garage_node::GarageNodeStatus) -> Option<&PartitionStatus>,
) -> Option<&PartitionStatus> {
    gn.status.as_ref().and_then(field)
}

/// `new`, or the `recorded` figure while it is of the same filesystem and within one percent:
/// use hovering on a percent boundary would otherwise be written at every pass.
fn settle(new: PartitionStatus, recorded: Option<&PartitionStatus>) -> PartitionStatus {
    match recorded {
        Some(r)
            if r.total == new.total
                && r.available.is_some()
                && r.used_percent
                    .zip(new.used_percent)
                    .is_some_and(|(a, b)| (a - b).abs() <= 1) =>
        {
            r.clone()
        }
        _ => new,
    }
}

fn current_last_seen(gn: &GarageNode) -> Option<Timestamp> {
    gn.status.as_ref()?.last_seen.as_ref().map(|t| t.0)
}

/// When a member last seen `ago` seconds before `now` was seen; the recorded time when it is
/// within [`LAST_SEEN_SLACK`] of that.
fn seen_at(now: Timestamp, ago: u64, recorded: Option<Timestamp>) -> Time {
    let ago = SignedDuration::from_secs(i64::try_from(ago).unwrap_or(i64::MAX));
    let at = now.checked_sub(ago).unwrap_or(Timestamp::UNIX_EPOCH);
    let at = Timestamp::from_second(at.as_second()).unwrap_or(at);
    match recorded {
        Some(r) if r.duration_since(at).abs() <= LAST_SEEN_SLACK => Time(r),
        _ => Time(at),
    }
}

/// A filesystem as published: its total, what is free rounded down to a whole percent of it,
/// and the share in use.
fn coarse(space: &garage_api_types::FreeSpace) -> PartitionStatus {
    let total = space.total;
    let free_percent = (u128::from(space.available.min(total)) * 100)
        .checked_div(u128::from(total))
        .unwrap_or(0);
    let free = u128::from(total) * free_percent / 100;
    PartitionStatus {
        available: Some(Quantity(free.to_string())),
        total: Some(Quantity(total.to_string())),
        used_percent: i32::try_from(100 - free_percent).ok(),
    }
}

fn differs(gn: &GarageNode, f: &MemberFacts) -> bool {
    let Some(s) = gn.status.as_ref() else {
        return true;
    };
    s.connected != Some(f.connected)
        || s.in_layout != Some(f.in_layout)
        || s.hostname != f.hostname
        || s.partitions != f.partitions
        || s.data_partition != f.data_partition
        || s.metadata_partition != f.metadata_partition
        || s.last_seen != f.last_seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(available: u64, total: u64) -> garage_api_types::FreeSpace {
        garage_api_types::FreeSpace { available, total }
    }

    #[test]
    fn free_space_is_published_to_the_whole_percent() {
        let gib = 1u64 << 30;
        for (available, total, free, used) in [
            (gib, 2 * gib, gib, 50),
            // 1 byte more or less free does not change what is published.
            (gib + 1, 2 * gib, gib, 50),
            (gib - 1, 2 * gib, 2 * gib * 49 / 100, 51),
            (0, 2 * gib, 0, 100),
            (2 * gib, 2 * gib, 2 * gib, 0),
            // More free than the total (a racing report) counts as all free.
            (3 * gib, 2 * gib, 2 * gib, 0),
            (0, 0, 0, 100),
        ] {
            let p = coarse(&space(available, total));
            assert_eq!(
                p.available,
                Some(Quantity(free.to_string())),
                "{available}/{total}"
            );
            assert_eq!(p.total, Some(Quantity(total.to_string())));
            assert_eq!(p.used_percent, Some(used), "{available}/{total}");
        }
    }

    #[test]
    fn a_figure_within_a_percent_of_the_recorded_one_keeps_it() {
        let gib = 1u64 << 30;
        let at = |free| coarse(&space(free, 100 * gib));
        let recorded = at(50 * gib);
        for (free, kept) in [
            (50 * gib, true),
            (49 * gib, true),
            (51 * gib, true),
            (48 * gib, false),
            (53 * gib, false),
        ] {
            let got = settle(at(free), Some(&recorded));
            let expected = if kept { recorded.clone() } else { at(free) };
            assert_eq!(got, expected, "{free}");
        }
        // Another filesystem (another total), or nothing recorded, takes the new figure.
        let other = coarse(&space(50 * gib, 200 * gib));
        assert_eq!(settle(other.clone(), Some(&recorded)), other);
        assert_eq!(settle(at(49 * gib), None), at(49 * gib));
    }

    #[test]
    fn last_seen_moves_only_past_a_minute_of_slack() {
        let now: Timestamp = "2026-12-06T12:00:00.750Z".parse().unwrap();
        let at = |s: &str| s.parse::<Timestamp>().unwrap();
        // Whole seconds, from Garage's count.
        assert_eq!(seen_at(now, 90, None).0, at("2026-12-06T11:58:30Z"));
        for (recorded, kept) in [
            ("2026-12-06T11:58:30Z", true),
            ("2026-12-06T11:58:00Z", true),
            ("2026-12-06T11:59:30Z", true),
            ("2026-12-06T11:57:29Z", false),
            ("2026-12-06T11:59:31Z", false),
        ] {
            let got = seen_at(now, 90, Some(at(recorded))).0;
            let expected = if kept {
                at(recorded)
            } else {
                at("2026-12-06T11:58:30Z")
            };
            assert_eq!(got, expected, "{recorded}");
        }
        // A count past the epoch is clamped, never a panic.
        assert_eq!(seen_at(now, u64::MAX, None).0, Timestamp::UNIX_EPOCH);
    }
}
