//! What Garage's reads say of the cluster's members in one pass: which hold their desired role,
//! which Garage sees up or at a stale address, whom to reconnect or ask to rejoin, which
//! restarted too recently for a layout change, and the layout plan. Also the hold these facts
//! put on a drain's step. Kept apart from [`super::decision`] so that the decision reads as the
//! composition of its parts.

use std::collections::BTreeMap;
use std::time::Duration;

use shared_types::conditions::reason;

use super::members::MemberView;
use super::observed::{GarageRead, GarageView, Observed};
use super::removal;
use crate::desired::Settings;
use crate::layout::{self, Plan};
use crate::machine::drain::Step;

/// What Garage's reads say of the members this pass.
pub(super) struct GarageFacts<'a> {
    /// The reads, when Garage answered.
    pub(super) read: Option<&'a GarageRead>,
    /// Why Garage could not be read.
    pub(super) error: Option<String>,
    /// Which members hold their desired role, by name.
    pub(super) in_layout: BTreeMap<String, bool>,
    /// Which members Garage sees up, by name.
    pub(super) connected: BTreeMap<String, bool>,
    /// `id@address` of members to connect to.
    pub(super) reconnect: Vec<String>,
    /// Members to ask to dial every other, by pod host.
    pub(super) rejoin: Vec<(String, Vec<String>)>,
    /// Members whose pod restarted too recently for a layout change.
    pub(super) settling: Vec<String>,
    /// Pods to annotate as seen running their node ID without a role.
    pub(super) seen_without_role: Vec<super::members::Mark>,
    /// The layout planner's verdict.
    pub(super) plan: Option<Plan>,
}

/// Which members hold their role, which are up or stale, and the layout plan.
pub(super) fn garage_facts<'a>(
    o: &'a Observed,
    s: &Settings,
    views: &[MemberView],
    layout_members: &[layout::Member],
) -> GarageFacts<'a> {
    // Suspended members count in the collision check but their layout entry is frozen.
    let frozen: Vec<String> = views
        .iter()
        .filter(|v| v.suspended)
        .map(|v| v.member.name.clone())
        .collect();
    let frozen = frozen.as_slice();
    let mut in_layout: BTreeMap<String, bool> = BTreeMap::new();
    let mut connected: BTreeMap<String, bool> = BTreeMap::new();
    let mut reconnect = Vec::new();
    let mut isolated: Vec<String> = Vec::new();
    let mut settling: Vec<String> = Vec::new();
    let mut rejoin = Vec::new();
    let mut plan = None;
    let mut garage_error = None;
    let read = match &o.garage {
        GarageView::Read(read) => Some(read.as_ref()),
        GarageView::Unavailable(why) => {
            garage_error = Some(why.clone());
            None
        }
    };
    if let Some(read) = read {
        for v in views {
            let Some(id) = &v.member.node_id else {
                continue;
            };
            let placed = read.layout.role(id).is_some_and(|r| {
                r.zone == v.member.role.zone
                    && r.capacity == v.member.role.capacity
                    && layout::tags::same_multiset(&r.tags, &v.member.role.tags)
            });
            in_layout.insert(v.member.name.clone(), placed);
            let seen = read.status.nodes.iter().find(|n| &n.id == id);
            let up = seen.is_some_and(|n| n.is_up);
            connected.insert(v.member.name.clone(), up);
            // Up at another address than the pod's: a stale connection to an old pod.
            let stale = seen.is_some_and(|n| {
                n.is_up && !v.external && !v.at_current_address(n.addr.as_deref())
            });
            // A member that restarted with a role: the others keep a dead connection to its
            // old address until four pings 15 s apart have failed, then reconnect. Table
            // syncs of a layout change made meanwhile can hang on the churn and leave the
            // history unsettled until Garage's next anti-entropy pass (10 minutes). A pod
            // seen running it without a role did not: no peer knew an older process of it.
            let restarted = stale || read.layout.role(id).is_some() && !v.ran_without_role(id);
            if restarted
                && v.started_at
                    .is_some_and(|t| o.now.duration_since(t).unsigned_abs() < RECONNECT_GRACE)
            {
                settling.push(v.member.name.clone());
            }
            if (!up || stale)
                && let Some(address) = &v.rpc_address
            {
                reconnect.push(format!("{id}@{address}"));
                // Only a stale member is asked to dial out itself: dialling a new member from
                // both sides at once makes Garage drop one of the two connections, and table
                // syncs in flight on it, until its next anti-entropy pass.
                if stale {
                    isolated.push(v.member.name.clone());
                }
            }
        }
        let peers: Vec<(String, String)> = views
            .iter()
            .filter_map(|v| {
                let id = v.member.node_id.as_ref()?;
                Some((
                    v.member.name.clone(),
                    format!("{id}@{}", v.rpc_address.as_ref()?),
                ))
            })
            .collect();
        for name in &isolated {
            let Some(host) = views
                .iter()
                .find(|v| &v.member.name == name)
                .and_then(|v| v.rpc_address.as_deref())
                .and_then(|a| a.rsplit_once(':'))
                .map(|(h, _)| h.to_owned())
            else {
                continue;
            };
            let others: Vec<String> = peers
                .iter()
                .filter(|(n, _)| n != name)
                .map(|(_, p)| p.clone())
                .collect();
            rejoin.push((host, others));
        }
        rejoin.extend(unproven_gateways(views, &peers));
        plan = Some(layout::plan_layout(&layout::Observed {
            replication_factor: s.replication_factor,
            members: layout_members,
            layout: &read.layout,
            history: &read.history,
            zone_redundancy: s.zone_redundancy,
            frozen,
        }));
    }
    GarageFacts {
        read,
        error: garage_error,
        in_layout,
        connected,
        reconnect,
        rejoin,
        settling,
        seen_without_role: unmarked_without_role(o, views, read),
        plan,
    }
}

/// The marks of the members whose pod runs their identity while the layout holds no role for
/// it, not marked so yet. None when Garage was not read, before the cluster has recorded a
/// layout version, or through a node that reports an older layout than the cluster was seen
/// at (one that has just started reports none, and every member would look role-less).
fn unmarked_without_role(
    o: &Observed,
    views: &[MemberView],
    read: Option<&GarageRead>,
) -> Vec<super::members::Mark> {
    let Some(read) = read else {
        return Vec::new();
    };
    let recorded = o.cluster.status.as_ref().and_then(|s| s.layout_version);
    if recorded.is_none() || super::decision::view_behind(o, Some(read)).is_some() {
        return Vec::new();
    }
    views
        .iter()
        .filter(|v| !v.external)
        .filter_map(|v| {
            let id = v.member.node_id.as_ref()?;
            let (pod, mark) = (v.pod_name.as_ref()?, v.mark.as_ref()?);
            (read.layout.role(id).is_none() && !v.ran_without_role(id)).then(|| {
                super::members::Mark {
                    pod: pod.clone(),
                    uid: mark.uid.clone(),
                    value: mark.value(id),
                }
            })
        })
        .collect()
}

/// Gateways whose pod runs an identity the operator has not recorded: each is asked to dial
/// its peers itself. A gateway that lost its metadata starts as a new identity that knows no
/// peer, so nobody would see it otherwise, and its role could not be handed to it. No peer
/// dials it back: the operator does not know its ID.
fn unproven_gateways(
    views: &[MemberView],
    peers: &[(String, String)],
) -> Vec<(String, Vec<String>)> {
    views
        .iter()
        .filter(|v| super::gateways::unproven(v))
        .filter_map(|v| {
            let (host, _) = v.rpc_address.as_deref()?.rsplit_once(':')?;
            let others: Vec<String> = peers
                .iter()
                .filter(|(n, _)| *n != v.member.name)
                .map(|(_, p)| p.clone())
                .collect();
            (!others.is_empty()).then(|| (host.trim_matches(['[', ']']).to_owned(), others))
        })
        .collect()
}

/// The drain's step, held while a member's connections are being replaced or a pod
/// replacement is in flight.
pub(super) fn hold_removal(
    o: &Observed,
    removal: removal::Removal,
    settling: &[String],
) -> removal::Removal {
    // A member Garage still sees at its previous address holds every layout change, the
    // drain's role removal included.
    let mut removal = removal;
    if !settling.is_empty()
        && let Some(Step::RemoveRole { .. } | Step::SwapRole { .. }) = removal.step
    {
        removal.step = Some(Step::Wait {
            reason: reason::REASON_WAITING_FOR_CLUSTER_HEALTH,
            message: format!(
                "{} restarted recently; the role removal waits until Garage has replaced its connections",
                settling.join(", ")
            ),
        });
    }
    // A pod replacement in flight finishes before a new drain starts.
    if o.cluster
        .status
        .as_ref()
        .is_some_and(|st| st.storage_rollout.is_some() && st.storage_drain.is_none())
        && let Some(Step::Record(_)) = removal.step
    {
        removal.step = Some(Step::Wait {
            reason: reason::REASON_WAITING_FOR_STORAGE_ROLLOUT,
            message: "a pod is being replaced by the storage rollout; the drain starts after it"
                .into(),
        });
    }
    removal
}

/// How long after a member's pod starts (when it already holds a role) layout changes wait:
/// four failed pings 15 s apart and the ping timeout before Garage drops the dead
/// connection, then its reconnection, with slack.
pub const RECONNECT_GRACE: Duration = Duration::from_secs(150);
