//! A member's layout capacity never runs ahead of its disks.
//!
//! Raising a volume's size raises the capacity the member's spec asks for at once, but the
//! claims behind it grow later (the node controller asks them to; the storage driver and the
//! kubelet grow the volume and its file system). Garage, told about space its disk does not
//! have yet, would place data there that it cannot hold. So while any data claim of a member
//! that already holds a role does not report the size its volume asks for (bound, with that
//! capacity and no resize pending), the member keeps the capacity its role has in the layout.
//! A member without a role yet gets what it asks: its claims are created at that size.
//!
//! The conditions roll up the members' own `StorageExpansionInProgress` and
//! `StorageExpansionBlocked` and name every member whose capacity is held. Pure.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::ResourceExt;
use shared_types::conditions::{cluster as cc, node as nc, reason};
use shared_types::garage_node::GarageNode;

use super::members::MemberView;
use super::observed::{GarageView, Observed};
use crate::conditions::Desired;
use crate::desired::{quantity, statefulset};
use crate::node::expansion::proves;
use garage_api_types::ClusterLayout;

/// A member whose capacity waits for its claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The member (its GarageNode's name).
    pub member: String,
    /// The capacity it keeps, in bytes.
    pub kept: u64,
    /// The capacity it asks for, in bytes.
    pub asked: u64,
    /// The claims that do not prove their size yet; empty when the member's disks are ready
    /// and it waits only for [`Held::behind`].
    pub claims: Vec<String>,
    /// The member whose capacity rises first: one member's capacity changes at a time.
    pub behind: Option<String>,
}

/// The data claims of `node` that do not yet prove the size their volume asks for, among
/// `claims`. Empty for a node without managed data claims (emptyDir or the user's own claims:
/// nothing the operator grows).
fn unproven(node: &GarageNode, claims: &[PersistentVolumeClaim]) -> Vec<String> {
    statefulset::managed_claims(node)
        .into_iter()
        .filter(|c| c.data)
        .filter(|c| {
            let want = quantity::to_bytes(&c.size.0).unwrap_or(u64::MAX);
            !claims
                .iter()
                .find(|p| p.name_any() == c.name)
                .is_some_and(|p| proves(p, want))
        })
        .map(|c| c.name)
        .collect()
}

/// The capacity the role of `v`'s identity has in `layout`.
fn role_capacity(v: &MemberView, layout: &ClusterLayout) -> Option<u64> {
    v.member
        .node_id
        .as_ref()
        .and_then(|id| layout.role(id))
        .and_then(|r| r.capacity)
}

/// The GarageNodes whose members can be held: the Auto group's and the user's.
pub fn member_nodes(o: &Observed) -> Vec<&GarageNode> {
    o.generated.values().chain(&o.user_nodes).collect()
}

/// [`hold`] with what this pass observed: its members' nodes, Garage's layout (nothing is held
/// while it could not be read) and the claims.
pub fn hold_observed(o: &Observed, views: &mut [MemberView]) -> Vec<Held> {
    let layout = match &o.garage {
        GarageView::Read(read) => Some(&read.layout),
        GarageView::Unavailable(_) => None,
    };
    hold(views, &member_nodes(o), layout, &o.claims)
}

/// Holds, in `views`, the capacity of every member that asks for more than its role has in
/// `layout` while its claims do not prove it; `nodes` are the members' GarageNodes. Returns the
/// members held.
pub fn hold(
    views: &mut [MemberView],
    nodes: &[&GarageNode],
    layout: Option<&ClusterLayout>,
    claims: &[PersistentVolumeClaim],
) -> Vec<Held> {
    let Some(layout) = layout else {
        return Vec::new();
    };
    let mut held = Vec::new();
    for v in views.iter_mut().filter(|v| !v.external && v.pool.is_none()) {
        let Some(kept) = role_capacity(v, layout) else {
            continue;
        };
        // A gateway asks for no capacity: nothing to hold.
        let Some(asked) = v.member.role.capacity else {
            continue;
        };
        if asked <= kept {
            continue;
        }
        let Some(node) = nodes.iter().find(|n| n.name_any() == v.member.name) else {
            continue;
        };
        let waiting = unproven(node, claims);
        if waiting.is_empty() {
            continue;
        }
        v.member.role.capacity = Some(kept);
        held.push(Held {
            member: v.member.name.clone(),
            kept,
            asked,
            claims: waiting,
            behind: None,
        });
    }
    one_at_a_time(views, layout, &mut held);
    held
}

/// Leaves at most one member's capacity rising in this pass: the others keep their role's
/// capacity, behind it. A capacity change moves partitions, and one member at a time keeps
/// each move small and attributable.
fn one_at_a_time(views: &mut [MemberView], layout: &ClusterLayout, held: &mut Vec<Held>) {
    let mut first: Option<String> = None;
    for v in views.iter_mut().filter(|v| !v.external && v.pool.is_none()) {
        let Some(kept) = role_capacity(v, layout) else {
            continue;
        };
        let Some(asked) = v.member.role.capacity.filter(|a| *a > kept) else {
            continue;
        };
        match &first {
            None => first = Some(v.member.name.clone()),
            Some(leader) => {
                held.push(Held {
                    member: v.member.name.clone(),
                    kept,
                    asked,
                    claims: Vec::new(),
                    behind: Some(leader.clone()),
                });
                v.member.role.capacity = Some(kept);
            }
        }
    }
}

/// The condition `type_` is `True` on `node`, with its message.
fn true_condition<'a>(node: &'a GarageNode, type_: &str) -> Option<&'a str> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
        .map(|c| c.message.as_str())
}

/// `StorageExpansionInProgress` and `StorageExpansionBlocked` for the cluster, each only while
/// true: from the members `held` and the members' own conditions.
pub fn conditions(held: &[Held], nodes: &[&GarageNode]) -> Vec<Desired> {
    let mut out = Vec::new();
    let mut growing: Vec<String> = held
        .iter()
        .map(|h| match &h.behind {
            Some(first) => format!(
                "{} keeps {} bytes of the {} it asks for until the capacity of {first} has risen",
                h.member, h.kept, h.asked
            ),
            None => format!(
                "{} keeps {} bytes of the {} it asks for until {} report the new size",
                h.member,
                h.kept,
                h.asked,
                h.claims.join(", ")
            ),
        })
        .collect();
    growing.extend(
        nodes
            .iter()
            .filter(|n| !held.iter().any(|h| h.member == n.name_any()))
            .filter_map(|n| {
                true_condition(n, nc::CONDITION_STORAGE_EXPANSION_IN_PROGRESS)
                    .map(|m| format!("{}: {m}", n.name_any()))
            }),
    );
    if !growing.is_empty() {
        out.push(Desired {
            type_: cc::CONDITION_STORAGE_EXPANSION_IN_PROGRESS,
            status: true,
            reason: if held.is_empty() {
                reason::REASON_RESIZING
            } else {
                reason::REASON_CAPACITY_HELD
            },
            message: growing.join("; "),
        });
    }
    let blocked: Vec<String> = nodes
        .iter()
        .filter_map(|n| {
            true_condition(n, nc::CONDITION_STORAGE_EXPANSION_BLOCKED)
                .map(|m| format!("{}: {m}", n.name_any()))
        })
        .collect();
    if !blocked.is_empty() {
        out.push(Desired {
            type_: cc::CONDITION_STORAGE_EXPANSION_BLOCKED,
            status: true,
            reason: reason::REASON_EXPANSION_REFUSED,
            message: blocked.join("; "),
        });
    }
    out
}

#[cfg(test)]
mod tests;
