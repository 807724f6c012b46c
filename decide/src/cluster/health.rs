//! What the cluster's status says about Garage's health beyond the member counts: the
//! `QuorumAtRisk` and `PeerUnreachable` conditions, `status.unreachablePeers`, the stable
//! `clusterId`, the `buildInfo` and the `endpoints` the Services publish.
//!
//! Every figure here changes only when Garage's state does (a peer going down, a version
//! upgrade, a port change), never with traffic, so a converged cluster's status compares
//! equal from pass to pass and is not rewritten. While a peer stays down its entry in
//! `unreachablePeers` counts the minutes, so the status is written at most once a minute then.

use std::time::Duration;

use garage_api_types::{ClusterHealth, ClusterStatus, NodeInfo};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use shared_types::conditions::{cluster as cc, reason};
use shared_types::garage_cluster::common::{BuildInfo, ClusterEndpoints};

use crate::conditions::Desired;
use crate::desired::Settings;
use crate::names;

/// How long a peer must have been down before `PeerUnreachable` names it: longer than a
/// pod's routine replacement, so a rollout does not raise it.
pub const PEER_UNREACHABLE_AFTER: Duration = Duration::from_secs(10 * 60);

/// The DNS suffix of in-cluster Service names.
const SERVICE_DOMAIN: &str = "svc.cluster.local";

/// `status.unreachablePeers`: every peer that holds a storage role (or is still draining one)
/// and has been down for at least [`PEER_UNREACHABLE_AFTER`], as `<first 16 hex> (down
/// <duration>)` with the duration in whole minutes, or `(never seen)`.
pub fn unreachable_peers(status: &ClusterStatus) -> Vec<String> {
    status
        .nodes
        .iter()
        .filter(|n| !n.is_up)
        .filter(|n| {
            let storage_role = n.role.as_ref().is_some_and(|r| r.capacity.is_some());
            storage_role || n.draining
        })
        .filter_map(|n| {
            let short = n.id.short();
            match n.last_seen_secs_ago {
                None => Some(format!("{short} (never seen)")),
                Some(secs) if secs < PEER_UNREACHABLE_AFTER.as_secs() => None,
                Some(secs) => Some(format!("{short} (down {})", minutes(secs))),
            }
        })
        .collect()
}

/// A duration rounded to the nearest minute, written as Go writes one (`12m0s`, `1h5m0s`),
/// which is how the peers of a Go-managed cluster were recorded.
fn minutes(secs: u64) -> String {
    let total = (secs + 30) / 60;
    let (h, m) = (total / 60, total % 60);
    if h > 0 {
        format!("{h}h{m}m0s")
    } else {
        format!("{m}m0s")
    }
}

/// `QuorumAtRisk` from Garage's own partition count, and `PeerUnreachable` from
/// [`unreachable_peers`]. When Garage's health could not be read, the published ones
/// (`current`) are kept as they are, and `Ready` says why Garage could not be read.
pub fn conditions(
    health: Option<&ClusterHealth>,
    unreachable: &[String],
    current: &[Condition],
) -> Vec<Desired> {
    let Some(h) = health else {
        return kept(current);
    };
    let quorum = if h.partitions > 0 && h.partitions_quorum < h.partitions {
        Desired {
            type_: cc::CONDITION_QUORUM_AT_RISK,
            status: true,
            reason: reason::REASON_QUORUM_LOST,
            message: format!(
                "{}/{} partitions lack a write quorum ({}/{} storage nodes up); writes to \
                 them fail until the missing members are back; a member gone for good is \
                 removed with the lost-node workflow",
                h.partitions - h.partitions_quorum,
                h.partitions,
                h.storage_nodes_up,
                h.storage_nodes
            ),
        }
    } else {
        Desired {
            type_: cc::CONDITION_QUORUM_AT_RISK,
            status: false,
            reason: reason::REASON_QUORUM_OK,
            message: "every partition has a write quorum".into(),
        }
    };
    let peers = if unreachable.is_empty() {
        Desired {
            type_: cc::CONDITION_PEER_UNREACHABLE,
            status: false,
            reason: reason::REASON_PEERS_REACHABLE,
            message: "every storage peer is up or was down for less than 10 minutes".into(),
        }
    } else {
        Desired {
            type_: cc::CONDITION_PEER_UNREACHABLE,
            status: true,
            reason: reason::REASON_PEERS_UNREACHABLE,
            message: format!(
                "storage peers down for 10 minutes or more: {}; the operator keeps asking \
                 Garage to reconnect them; a peer that is gone for good is removed with the \
                 lost-node workflow",
                unreachable.join(", ")
            ),
        }
    };
    vec![quorum, peers]
}

/// The published health conditions, unchanged, for a pass that could not read Garage: the
/// controller owns them, so each pass states them, and only a new reading changes them.
fn kept(current: &[Condition]) -> Vec<Desired> {
    const REASONS: [&str; 4] = [
        reason::REASON_QUORUM_LOST,
        reason::REASON_QUORUM_OK,
        reason::REASON_PEERS_UNREACHABLE,
        reason::REASON_PEERS_REACHABLE,
    ];
    [cc::CONDITION_QUORUM_AT_RISK, cc::CONDITION_PEER_UNREACHABLE]
        .into_iter()
        .filter_map(|type_| {
            let c = current.iter().find(|c| c.type_ == type_)?;
            let reason = REASONS.into_iter().find(|r| *r == c.reason)?;
            Some(Desired {
                type_,
                status: c.status == "True",
                reason,
                message: c.message.clone(),
            })
        })
        .collect()
}

/// `status.clusterId`: the recorded one while Garage still knows that node, else the smallest
/// node ID Garage reports (none when it reports no node).
pub fn cluster_id(recorded: Option<&str>, status: &ClusterStatus) -> Option<String> {
    let ids = status.nodes.iter().map(|n| n.id.as_str());
    if let Some(kept) = recorded.filter(|r| ids.clone().any(|id| id == *r)) {
        return Some(kept.to_owned());
    }
    ids.min().map(str::to_owned)
}

/// Whether `GetNodeInfo` must be asked for the build: nothing complete is recorded, or no
/// member that is up runs the recorded version any more (an upgrade finished). A converged
/// cluster costs no call.
pub fn build_unknown(recorded: Option<&BuildInfo>, status: &ClusterStatus) -> bool {
    let Some(b) = recorded.filter(|b| b.rust_version.is_some()) else {
        return true;
    };
    let mut running = status
        .nodes
        .iter()
        .filter(|n| n.is_up)
        .filter_map(|n| n.garage_version.as_deref())
        .peekable();
    running.peek().is_some() && !running.any(|v| Some(v) == b.version.as_deref())
}

/// `status.buildInfo`: the answering member's build when it was read (see
/// [`build_unknown`]), else the recorded one.
pub fn build_info(recorded: Option<&BuildInfo>, info: Option<&NodeInfo>) -> Option<BuildInfo> {
    match info {
        Some(i) => Some(BuildInfo {
            version: Some(i.garage_version.clone()),
            rust_version: Some(i.rust_version.clone()),
            features: i.garage_features.clone(),
        }),
        None => recorded.cloned(),
    }
}

/// `status.endpoints`: in-cluster `host:port` addresses of the Services the cluster
/// controller creates. The Admin API and the metrics Garage serves on it are given on the
/// `<cluster>-admin` Service, the one that carries the admin port whatever the type of the
/// `<cluster>` Service.
pub fn endpoints(s: &Settings) -> ClusterEndpoints {
    let at =
        |service: String, port: u16| format!("{service}.{}.{SERVICE_DOMAIN}:{port}", s.namespace);
    let api = names::api_service(&s.name);
    let admin = at(names::admin_service(&s.name), s.admin_port);
    ClusterEndpoints {
        s3: Some(at(api.clone(), s.s3_port)),
        k2v: s.k2v_port.map(|p| at(api.clone(), p)),
        web: s.web_port.map(|p| at(api.clone(), p)),
        metrics: Some(admin.clone()),
        admin: Some(admin),
        rpc: Some(at(names::headless_service(&s.name), s.rpc_port)),
    }
}

#[cfg(test)]
mod tests;
