//! Stale gateway roles ("tombstones"): capacity-less roles this cluster wrote for gateway
//! identities that nobody runs any more, such as the old identity of a gateway whose metadata
//! was lost while the operator was not running. Pure.
//!
//! A role is stale when it is in the cluster's zone, tagged `tier:gateway` and with this
//! cluster's UID, no GarageNode of the cluster records its ID, and Garage has not seen the node
//! for ten minutes or more. Only then, with a gateway tier, a settled history and nothing
//! staged, is anything decided:
//! - `spec.layoutManagement.autoApply` unset or false: the IDs are listed in
//!   `status.pendingGatewayTombstones` and `GatewayTombstones=True` says how to remove them;
//!   nothing is removed.
//! - `autoApply: true`: the exact list is recorded in `status.pendingGatewayTombstones` first;
//!   a later pass that finds the same list recorded removes those roles in one layout version
//!   (a gateway holds no data, so no proof is needed; `skip-dead-nodes` is never used).

use shared_types::conditions::{cluster as cc, reason};
use shared_types::keys::tag;

use super::decision::LayoutChange;
use super::observed::{GarageRead, Observed};
use crate::conditions::Desired;
use crate::desired::Settings;
use garage_api_types::{NodeId, RoleChange};

/// How long Garage must have gone without seeing a gateway before its role counts as stale.
pub const STALE_AFTER_SECS: u64 = 600;

/// What the pass does about stale gateway roles.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tombstones {
    /// The list to publish in `status.pendingGatewayTombstones` (empty clears it); `None`
    /// leaves the status as it is (nothing could be judged this pass).
    pub pending: Option<Vec<String>>,
    /// `GatewayTombstones`, while roles wait for the user.
    pub condition: Option<Desired>,
    /// The removal to apply, once its list was recorded by an earlier pass.
    pub remove: Option<LayoutChange>,
}

/// The stale gateway roles of the cluster and what to do with them. `busy`: another layout
/// writer acts this pass or a transaction is recorded, so nothing is removed.
pub fn decide(o: &Observed, s: &Settings, read: Option<&GarageRead>, busy: bool) -> Tombstones {
    let auto_apply = o
        .cluster
        .spec
        .layout_management
        .as_ref()
        .and_then(|l| l.auto_apply)
        == Some(true);
    let recorded = o
        .cluster
        .status
        .as_ref()
        .and_then(|st| st.pending_gateway_tombstones.clone())
        .unwrap_or_default();
    let Some(read) = read.filter(|r| s.gateway_tier && r.history.is_settled()) else {
        // Nothing can be judged: the list stays, and so does what it says.
        let condition =
            (s.gateway_tier && !auto_apply && !recorded.is_empty()).then(|| pending(&recorded));
        return Tombstones {
            condition,
            ..Tombstones::default()
        };
    };
    let stale = stale(o, s, read);
    let ids: Vec<String> = stale.iter().map(ToString::to_string).collect();
    if ids.is_empty() {
        return Tombstones {
            pending: Some(ids),
            ..Tombstones::default()
        };
    }
    if !auto_apply {
        return Tombstones {
            condition: Some(pending(&ids)),
            pending: Some(ids),
            remove: None,
        };
    }
    let quiet = read.layout.staged_role_changes.is_empty()
        && read
            .layout
            .staged_parameters
            .as_ref()
            .is_none_or(|p| *p == read.layout.parameters);
    let remove = (recorded == ids && !busy && quiet).then(|| {
        let changes: Vec<RoleChange> = stale.iter().cloned().map(RoleChange::remove).collect();
        LayoutChange {
            stage: changes.clone(),
            intended: changes,
            version: read.layout.version + 1,
            bootstrap: false,
            parameters: None,
        }
    });
    Tombstones {
        pending: Some(ids),
        condition: None,
        remove,
    }
}

/// The stale gateway roles, by ID.
fn stale(o: &Observed, s: &Settings, read: &GarageRead) -> Vec<NodeId> {
    let uid_tag = format!("{}{}", tag::TAG_PREFIX_CLUSTER_UID, s.uid);
    let gateway_tag = format!("{}gateway", tag::TAG_PREFIX_TIER);
    let claimed: Vec<String> = o
        .generated
        .values()
        .chain(&o.retiring)
        .chain(&o.user_nodes)
        .chain(&o.pool_members)
        .chain(o.gateways.values())
        .filter_map(|n| n.status.as_ref()?.node_id.clone())
        .collect();
    // The identity a recorded transaction is retiring is that transaction's.
    let retiring: Vec<String> = o
        .cluster
        .status
        .as_ref()
        .and_then(|st| st.storage_drain.as_ref())
        .and_then(|d| d.role_removal_node_ids.clone())
        .unwrap_or_default();
    let mut out: Vec<NodeId> = read
        .layout
        .roles
        .iter()
        .filter(|r| r.capacity.is_none() && r.zone == s.zone)
        .filter(|r| r.tags.contains(&uid_tag) && r.tags.contains(&gateway_tag))
        .filter(|r| {
            let id = r.id.to_string();
            !claimed.contains(&id) && !retiring.contains(&id)
        })
        .filter(|r| {
            read.status.nodes.iter().any(|n| {
                n.id == r.id
                    && !n.is_up
                    && n.last_seen_secs_ago
                        .is_some_and(|ago| ago >= STALE_AFTER_SECS)
            })
        })
        .map(|r| r.id.clone())
        .collect();
    out.sort();
    out
}

/// `GatewayTombstones=True` for the stale roles `ids`.
fn pending(ids: &[String]) -> Desired {
    let short: Vec<&str> = ids.iter().map(|id| &id[..id.len().min(16)]).collect();
    Desired {
        type_: cc::CONDITION_GATEWAY_TOMBSTONES,
        status: true,
        reason: reason::REASON_GATEWAY_TOMBSTONES_PENDING,
        message: format!(
            "gateway roles of {} are in the layout, but no GarageNode runs them and Garage has not seen them for ten minutes; set spec.layoutManagement.autoApply: true to remove them, or remove them with garage layout remove",
            short.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests;
