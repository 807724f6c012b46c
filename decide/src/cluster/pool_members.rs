//! The node-local pools' part of the GarageCluster decision: the pools' plan for this pass,
//! which of their members hold their role in the committed layout, and the members to take
//! out of the layout in order (the default group's surplus first, then retiring pool members).

use std::collections::BTreeMap;

use kube::ResourceExt;
use shared_types::garage_node::GarageNode;

use super::members::MemberView;
use super::observed::{GarageView, Observed};
use super::removal;
use crate::desired::config::ConfigRevision;
use crate::desired::{DesiredError, Settings, secrets};
use crate::layout::{self, Plan};
use crate::pools::plan as pools;

/// What the node-local pools ask for, and the members to take out of the layout, in order:
/// the default group's surplus (highest ordinal first), then retiring pool members.
pub(super) fn pools_and_leavers<'a>(
    o: &'a Observed,
    s: &Settings,
    views: &[MemberView],
    config: &ConfigRevision,
    rpc: &secrets::SecretSource,
    admin: &secrets::SecretSource,
) -> Result<(pools::PoolPlan, Vec<&'a GarageNode>), DesiredError> {
    let cluster = o.cluster.as_ref();
    let mut extra_nodes: Vec<&GarageNode> = o
        .generated
        .iter()
        .filter(|(ordinal, _)| **ordinal >= s.replicas && !s.manual)
        .map(|(_, gn)| gn)
        .collect();
    extra_nodes.reverse();
    // Pool members leave the same way, after the default group's surplus: a started one
    // always continues, the next starts only once its replacements are in the layout.
    let pool_in_layout = pool_placement(o, views);
    let pools = pools::decide(&pools::PoolFacts {
        cluster,
        settings: s,
        config,
        rpc_secret: rpc,
        admin_token: admin,
        nodes: &o.k8s_nodes,
        daemonsets: &o.daemonsets,
        config_maps: &o.config_maps,
        pods: &o.pods,
        members: &o.pool_members,
        in_layout: &pool_in_layout.0,
        topology_ready: pool_in_layout.1,
        foreign_paths: &o.foreign_paths,
        gate: o.gate.as_ref(),
        committed_roles: match &o.garage {
            GarageView::Read(read) => &read.layout.roles,
            GarageView::Unavailable(_) => &[],
        },
    })?;
    extra_nodes.extend(o.pool_members.iter().filter(|gn| {
        pools.retire.contains(&gn.name_any()) && (pools.retire_now || removal::drain_requested(gn))
    }));
    Ok((pools, extra_nodes))
}

/// Which pool members hold their desired role in the committed layout, and whether the
/// layout is settled with every member placed (the add-before-remove gate for retirements).
fn pool_placement(o: &Observed, views: &[MemberView]) -> (BTreeMap<String, bool>, bool) {
    let GarageView::Read(read) = &o.garage else {
        return (BTreeMap::new(), false);
    };
    let placed = |v: &MemberView| {
        v.member.node_id.as_ref().is_some_and(|id| {
            read.layout.role(id).is_some_and(|r| {
                r.zone == v.member.role.zone
                    && r.capacity == v.member.role.capacity
                    && layout::tags::same_multiset(&r.tags, &v.member.role.tags)
            })
        })
    };
    let map = views
        .iter()
        .filter(|v| v.pool.is_some())
        .map(|v| (v.member.name.clone(), placed(v)))
        .collect();
    let members: Vec<layout::Member> = views.iter().map(|v| v.member.clone()).collect();
    let settled = matches!(
        layout::plan_layout(&layout::Observed {
            replication_factor: o
                .cluster
                .spec
                .replication
                .as_ref()
                .and_then(|r| r.factor)
                .and_then(|f| u32::try_from(f).ok())
                .unwrap_or(3),
            members: &members,
            layout: &read.layout,
            history: &read.history,
            // Placement of roles only: the parameters are the coordinator's own business.
            zone_redundancy: None,
            frozen: &[],
        }),
        Plan::Converged
    );
    (map, settled && views.iter().all(placed))
}
