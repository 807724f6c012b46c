//! The GarageCluster decision: a pure function of [`Observed`] and the cluster's settings.
//! It chooses the objects to ensure, the Auto members to create, the peers to reconnect, the
//! one layout change of this pass, the status and conditions, and when to look again.
//! What Garage's reads say of the members is in `garage_facts`, the `Ready` verdict in
//! `readiness`, free disk space and the hold it puts on new drains and rollouts in `capacity`,
//! and the config revisions to prune in `stale_configs`.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::ResourceExt;
use shared_types::conditions::{cluster as cc, common, reason};
use shared_types::garage_cluster::v1beta2::GarageClusterStatus;
use shared_types::garage_node::GarageNode;

use super::garage_facts::{GarageFacts, garage_facts, hold_removal};
use super::members::{self, MemberView};
use super::observed::{GarageRead, GarageView, Observed};
use super::pool_members::pools_and_leavers;
use super::readiness::Readiness;
use super::rollout_pass::{RolloutInputs, rollout_pass};
use super::status;
use super::volume_attributes::volume_attributes;
use super::{capacity, expansion, removal};
use crate::conditions::Desired;
use crate::config::Config;
use crate::desired::config::ConfigRevision;
use crate::desired::{DesiredError, Settings, network_policy, nodes, pdb, secrets};
use crate::layout::{self, HoldReason, Plan};
use crate::machine::drain::Step;
use crate::machine::rollout as machine_rollout;
use crate::note::Note;
use crate::pools::plan as pools;
use garage_api_types::{HealthStatus, RoleChange};

pub use super::garage_facts::RECONNECT_GRACE;

/// A layout version to stage and apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayoutChange {
    /// Changes to stage now.
    pub stage: Vec<RoleChange>,
    /// Every change the apply must commit.
    pub intended: Vec<RoleChange>,
    /// The version to apply.
    pub version: u64,
    /// True for the first storage version.
    pub bootstrap: bool,
    /// Layout parameters (the zone redundancy) to stage with it, when they change.
    pub parameters: Option<garage_api_types::LayoutParameters>,
}

/// Everything one pass does, decided before anything is written.
#[derive(Debug, Clone)]
pub struct Decision {
    /// Generate the RPC secret Secret when it does not exist.
    pub rpc_secret: bool,
    /// Generate the admin token Secret when it does not exist.
    pub admin_token: bool,
    /// The config revision to publish.
    pub config: ConfigRevision,
    /// The revisions of members that advertise an RPC address of their own, to publish too.
    pub node_configs: Vec<ConfigRevision>,
    /// Services to ensure.
    pub services: Vec<Service>,
    /// The storage PDB to ensure.
    pub pdb: Option<PodDisruptionBudget>,
    /// The gateway PDB to ensure, beside a gateway tier.
    pub gateway_pdb: Option<PodDisruptionBudget>,
    /// The Garage pods' NetworkPolicy: ensured when the install turns it on, removed otherwise.
    pub network_policy: network_policy::Plan,
    /// Generated GarageNodes to converge (existing slots).
    pub update_nodes: Vec<GarageNode>,
    /// Generated GarageNodes to create (new slots).
    pub create_nodes: Vec<GarageNode>,
    /// `id@host:port` of members Garage does not see up, or sees at an address their pod no
    /// longer has.
    pub reconnect: Vec<String>,
    /// Members to ask, through their own Admin API (`host` of the pod), to connect to every
    /// other member: a restarted pod can be isolated while the others keep a stale connection
    /// to its old address, which no connect from their side replaces.
    pub rejoin: Vec<(String, Vec<String>)>,
    /// Pods to annotate `seen-without-role` with the node ID (the second) they run while the
    /// layout holds no role for it.
    pub seen_without_role: Vec<super::members::Mark>,
    /// The layout change of this pass.
    pub layout: Option<LayoutChange>,
    /// The drain transaction's step, when it acts this pass.
    pub drain: Option<Step>,
    /// The user asked for Garage's skip-dead-nodes recovery: `Some(allow_missing_data)`.
    pub skip_dead_nodes: Option<bool>,
    /// Generated GarageNodes to ask to drain (Auto scale-down).
    pub annotate_drain: Vec<String>,
    /// Generated GarageNodes whose drain is proven, to delete.
    pub delete_nodes: Vec<String>,
    /// Gateway pods to take out of the gateway Service (tier label removed): leaving
    /// gateways' and those whose running identity holds no role.
    pub unserve_pods: Vec<String>,
    /// Gateway pods to put back into the gateway Service (tier label restored): their running
    /// identity is the one their GarageNode records and holds its role.
    pub serve_pods: Vec<String>,
    /// The removal of stale gateway roles, when `autoApply` allows it and the list was
    /// recorded by an earlier pass.
    pub remove_tombstones: Option<LayoutChange>,
    /// A generated gateway beyond `spec.gateway.replicas` to delete: its finalizer holds its
    /// workload until its role has left the layout.
    pub delete_gateway: Option<String>,
    /// Generated GarageNodes to hand to the user (Auto -> Manual): controller reference and
    /// `managed-by` label removed, identity and role untouched.
    pub eject: Vec<String>,
    /// What the node-local pools ask for.
    pub pools: pools::PoolPlan,
    /// The storage rollout's step, when it acts this pass.
    pub rollout: Option<machine_rollout::Step>,
    /// Config revisions no pod or workload template mounts any more: delete.
    pub prune_configs: Vec<String>,
    /// RPC Services a publicEndpoint made that it no longer asks for (name, UID): delete.
    pub delete_services: Vec<(String, String)>,
    /// `spec.workers` variables to set, on the members that report another value.
    pub worker_variables: Vec<super::workers::SetVariable>,
    /// The one-shot operational annotation this pass runs.
    pub operation: Option<super::operations::Pending>,
    /// The Go operator's Admin API token to revoke, unpin and forget.
    pub go_token: Option<super::go_token::Revoke>,
    /// The graceful cycle of a member: its sibling, status, drain request, promotion and
    /// deletion.
    pub cycle: super::cycle::Cycle,
    /// Members whose GarageNode `connected` or `inLayout` changed.
    pub member_facts: Vec<super::member_status::MemberFacts>,
    /// Status to publish (conditions merged by act).
    pub status: GarageClusterStatus,
    /// Conditions this controller owns.
    pub conditions: Vec<Desired>,
    /// The ServiceMonitor of `spec.monitoring`.
    pub service_monitor: crate::desired::service_monitor::Plan,
    /// Events to publish.
    pub notes: Vec<Note>,
    /// When to look again.
    pub requeue: Duration,
}

/// Condition types the cluster controller owns.
pub const OWNED: &[&str] = &[
    common::CONDITION_READY,
    shared_types::conditions::node::CONDITION_SUSPENDED,
    cc::CONDITION_STORAGE_SCALE_DOWN_BLOCKED,
    cc::CONDITION_STORAGE_TOPOLOGY_READY,
    cc::CONDITION_STORAGE_ROLLOUT_READY,
    cc::CONDITION_STORAGE_DRAIN_READY,
    cc::CONDITION_NODE_LOCAL_POOLS_READY,
    cc::CONDITION_STORAGE_VOLUME_ATTRIBUTES_READY,
    cc::CONDITION_STORAGE_CAPACITY_LOW,
    cc::CONDITION_STORAGE_EXPANSION_IN_PROGRESS,
    cc::CONDITION_STORAGE_EXPANSION_BLOCKED,
    cc::CONDITION_SERVICE_MONITOR_READY,
    cc::CONDITION_QUORUM_AT_RISK,
    cc::CONDITION_GATEWAY_LAYOUT_DEGRADED,
    cc::CONDITION_GATEWAY_TOMBSTONES,
    cc::CONDITION_PEER_UNREACHABLE,
    cc::CONDITION_PUBLIC_ENDPOINT_READY,
];

/// The decision for a live cluster with valid settings.
pub fn decide(o: &Observed, s: &Settings, t: &Config) -> Result<Decision, DesiredError> {
    let cluster = o.cluster.as_ref();
    let rpc = secrets::rpc_secret_source(cluster, s);
    let admin = secrets::admin_token_source(cluster, s);
    let metrics = crate::desired::credentials::metrics_token_source(cluster, s);
    let (mut update_nodes, extra) = super::rendered::generated_members(o, s)?;
    let gateways = super::gateways::plan(o, s)?;
    update_nodes.extend(gateways.update);
    let (config, node_configs) = super::rendered::revisions(o, s, &update_nodes)?;
    let mut m = membership(o, s, t, &config, &rpc, &admin)?;
    let recorded = o.cluster.status.as_ref();
    let drain_recorded = recorded.is_some_and(|st| st.storage_drain.is_some());
    let rollout_recorded = recorded.is_some_and(|st| st.storage_rollout.is_some());
    let removal = std::mem::take(&mut m.removal);
    let p = placement(
        o,
        s,
        t,
        &m.views,
        removal,
        drain_recorded || rollout_recorded,
    )?;
    let st = standing(o, &m, &p, &extra);
    let cycle = super::cycle::decide(o, s, &m.views, p.facts.read)?;
    let mut conditions = member_conditions(o, &m, &p, st.conditions);
    let notes = [p.notes, p.capacity.note.clone().into_iter().collect()].concat();
    let drain_starts = !drain_recorded && matches!(p.removal.step, Some(Step::Record(_)));
    let inputs = RolloutInputs {
        views: &m.views,
        read: p.facts.read,
        pools: &m.pools,
        config: &config,
        admin_secret: &admin.name,
        metrics_secret: metrics.as_ref().map(|m| m.name.as_str()),
        update_nodes: &update_nodes,
        node_configs: &node_configs,
    };
    let layout_changes = p.layout_change.is_some();
    let r = rollout_pass(o, s, &inputs, drain_starts, layout_changes, &p.capacity);
    conditions.push(r.condition);
    let metrics_copy = metrics.as_ref().map(|m| m.name.as_str());
    let busy = drain_recorded || rollout_recorded || layout_changes || p.drain_acts || r.acts;
    let mut tombstones = super::tombstones::decide(o, s, p.facts.read, busy);
    let (mut status, service_monitor) = super::reported::reported(
        o,
        s,
        (&m.views, &p.facts),
        (st.ready_members, st.wanted_members),
        (metrics_copy, &tombstones),
        &mut conditions,
    )?;
    let (services, delete_services) = super::rendered::cluster_services(o, s)?;
    status.layout_diagnosis = status::diagnosis(&conditions);
    let pools_busy = m.pools.condition.as_ref().is_some_and(|c| !c.status);
    let creating = !p.slots.create.is_empty() || !gateways.create.is_empty();
    let converged = st.ready
        && r.step == machine_rollout::Step::Converged
        && extra.is_empty()
        && !(creating || layout_changes || pools_busy);
    let requeue = Pace {
        acting: layout_changes || creating || p.drain_acts || r.acts,
        waiting: !p.removal.annotate.is_empty()
            || !p.removal.delete.is_empty()
            || pools_busy
            || rollout_recorded
            || cycle.busy && !drain_recorded
            || !m.held.is_empty(),
        draining: drain_recorded,
        settled: converged
            || !extra.is_empty() && st.ready_members >= st.wanted_members && p.slots.topology_ready,
    }
    .requeue(t);
    let side = super::rendered::side_objects(o, s, t)?;
    Ok(Decision {
        rpc_secret: rpc.generated,
        admin_token: admin.generated,
        config,
        node_configs,
        services,
        delete_services,
        pdb: m.pdb,
        gateway_pdb: side.gateway_pdb,
        network_policy: side.network_policy,
        update_nodes,
        create_nodes: p.create_nodes.into_iter().chain(gateways.create).collect(),
        reconnect: p.facts.reconnect,
        rejoin: p.facts.rejoin,
        seen_without_role: p.facts.seen_without_role,
        layout: p.layout_change,
        // A requested skip-dead-nodes recovery goes first and removes its annotations, which
        // moves the cluster's resourceVersion that the drain record's write is conditioned
        // on: the drain step waits for the pass after it.
        drain: p
            .removal
            .step
            .clone()
            .filter(|_| p.drain_acts && super::recovery::requested(cluster).is_none()),
        skip_dead_nodes: super::recovery::requested(cluster),
        annotate_drain: p.removal.annotate,
        delete_nodes: p.removal.delete,
        delete_gateway: gateways.delete,
        unserve_pods: p.removal.serving.unserve,
        serve_pods: p.removal.serving.serve,
        remove_tombstones: retired_gateways(o, &mut tombstones, p.facts.read, busy),
        eject: side.eject,
        pools: m.pools,
        rollout: Some(r.step).filter(|_| r.acts),
        prune_configs: r.prune_configs,
        worker_variables: worker_variables(cluster, &m.views, p.facts.read),
        operation: super::operations::next(o, drain_recorded || rollout_recorded),
        go_token: super::go_token::revoke(cluster, o.go_token.as_ref()),
        cycle,
        member_facts: super::member_status::changed(o, &m.views, p.facts.read),
        status,
        conditions,
        service_monitor,
        notes,
        requeue,
    })
}

/// The conditions of the members' standing, removal, pools, volumes, capacity and growth.
fn member_conditions(
    o: &Observed,
    m: &Membership,
    p: &Placement<'_>,
    standing: Vec<Desired>,
) -> Vec<Desired> {
    let mut conditions = standing;
    conditions.extend(p.removal.conditions.iter().cloned());
    conditions.extend(m.pools.condition.clone());
    conditions.extend(volume_attributes(o));
    conditions.extend(p.capacity.condition.clone());
    conditions.extend(expansion::conditions(&m.held, &expansion::member_nodes(o)));
    conditions
}

/// The `spec.workers` variables to set on this cluster's members (external ones included:
/// they are storage nodes of the same layout; suspended ones left as they are).
fn worker_variables(
    cluster: &shared_types::garage_cluster::v1beta2::GarageCluster,
    views: &[MemberView],
    read: Option<&GarageRead>,
) -> Vec<super::workers::SetVariable> {
    let Some(read) = read else {
        return Vec::new();
    };
    let ids: Vec<garage_api_types::NodeId> = views
        .iter()
        .filter(|v| !v.suspended)
        .filter_map(|v| v.member.node_id.clone())
        .collect();
    let wanted = super::workers::wanted(cluster.spec.workers.as_ref());
    super::workers::to_set(&wanted, &ids, &read.worker_variables)
}

/// `Ready` and `StorageTopologyReady`, and the member counts they rest on.
struct Standing {
    ready: bool,
    /// Members whose pod is Ready.
    ready_members: usize,
    /// Members the cluster should have.
    wanted_members: usize,
    conditions: Vec<Desired>,
}

fn standing(o: &Observed, m: &Membership, p: &Placement<'_>, extra: &[String]) -> Standing {
    // An edge's members are the edge's to report.
    let own: Vec<MemberView> = m
        .views
        .iter()
        .filter(|v| v.edge.is_none())
        .cloned()
        .collect();
    let views = &own;
    let read = p.facts.read;
    let missing = &p.slots.missing;
    let ready_members = views.iter().filter(|v| v.ready).count();
    let identified = views
        .iter()
        .filter(|v| v.ready && v.member.node_id.is_some())
        .count();
    let all_in_layout = !views.is_empty()
        && views
            .iter()
            .all(|v| p.facts.in_layout.get(&v.member.name) == Some(&true));
    let wanted_members = views.len() + missing.len() + m.pools.pending;
    let verdict = Readiness {
        unsupported: &m.unsupported,
        wanted_members,
        identified,
        retired_claims: super::readiness::retired_claims(expansion::member_nodes(o)),
        plan: p.plan.as_ref(),
        joining: !all_in_layout || !missing.is_empty(),
        extra,
        garage_error: p.facts.error.as_deref(),
        healthy: healthy_everywhere(read),
        health: read.and_then(|r| r.health.as_ref()),
    }
    .verdict();
    let ready = verdict.0;
    let topology_converged = all_in_layout && missing.is_empty();
    Standing {
        ready,
        ready_members,
        wanted_members,
        conditions: ready_and_topology(verdict, topology_converged),
    }
}

/// What Garage says and what the layout does this pass.
struct Placement<'a> {
    /// Garage's facts about the members.
    facts: GarageFacts<'a>,
    /// The layout planner's verdict, after the holds of this pass.
    plan: Option<Plan>,
    /// The layout change to make, when one may be made.
    layout_change: Option<LayoutChange>,
    /// Events of the layout decision.
    notes: Vec<Note>,
    /// The removal, held while members settle or disks run low.
    removal: removal::Removal,
    /// The disks' free space.
    capacity: capacity::Assessment,
    /// The drain writes a step this pass.
    drain_acts: bool,
    /// Auto membership.
    slots: AutoSlots,
    /// Generated members to create.
    create_nodes: Vec<GarageNode>,
}

/// Garage's facts, the removal's holds, the layout write and the Auto slots. A recorded
/// drain or rollout (`transaction_recorded`) holds every other layout writer: one
/// transaction at a time.
fn placement<'a>(
    o: &'a Observed,
    s: &Settings,
    t: &Config,
    views: &[MemberView],
    removal: removal::Removal,
    transaction_recorded: bool,
) -> Result<Placement<'a>, DesiredError> {
    let cluster = o.cluster.as_ref();
    // A suspended member's layout entry is frozen: the planner checks it for identity
    // collisions but never assigns or changes its role (role removals are the drain's).
    let layout_members: Vec<layout::Member> = views.iter().map(|v| v.member.clone()).collect();

    let mut facts = garage_facts(o, s, views, &layout_members);
    let plan = facts.plan.take();
    let settling = &facts.settling;
    let read = facts.read;
    let removal = hold_removal(o, removal, settling);
    let capacity = capacity::of_pass(o, views, t.storage_capacity_low_percent);
    let drain_recorded = o
        .cluster
        .status
        .as_ref()
        .is_some_and(|st| st.storage_drain.is_some());
    let removal = capacity.hold_drain(removal, drain_recorded);
    let drain_acts = matches!(
        removal.step,
        Some(
            Step::Record(_)
                | Step::RemoveRole { .. }
                | Step::SwapRole { .. }
                | Step::SkipRetiredAcks { .. }
                | Step::LaunchRepairs { .. }
                | Step::Clear
        )
    );
    // A recorded drain or rollout holds every other layout writer (one transaction at a time).
    let (plan, layout_change, notes) = layout_write(
        plan,
        settling,
        view_behind(o, read).as_deref(),
        transaction_recorded || drain_acts,
    );

    let slots = auto_slots(
        o,
        s,
        views,
        read,
        &facts.in_layout,
        plan.as_ref(),
        facts.error.is_some(),
    );
    let create_nodes = slots
        .create
        .iter()
        .map(|ordinal| nodes::auto_storage_node(cluster, s, *ordinal))
        .collect::<Result<Vec<_>, _>>()?;

    Ok(Placement {
        facts,
        plan,
        layout_change,
        notes,
        removal,
        capacity,
        drain_acts,
        slots,
        create_nodes,
    })
}

/// The members of this pass and what follows from them alone.
struct Membership {
    /// Members that are planned and counted (those on their way out removed).
    views: Vec<MemberView>,
    /// User GarageNodes of a shape this operator does not run.
    unsupported: Vec<String>,
    /// Members whose capacity waits for their claims to grow.
    held: Vec<expansion::Held>,
    /// The storage PodDisruptionBudget.
    pdb: Option<PodDisruptionBudget>,
    /// The node-local pools' plan.
    pools: pools::PoolPlan,
    /// The removal (drain) of members that leave; taken by [`placement`].
    removal: removal::Removal,
}

/// Who the members are: their views with capacity held until claims grow, the disruption
/// budget counted over them, the pools' plan, and the removal of those that leave.
fn membership(
    o: &Observed,
    s: &Settings,
    t: &Config,
    config: &ConfigRevision,
    rpc: &secrets::SecretSource,
    admin: &secrets::SecretSource,
) -> Result<Membership, DesiredError> {
    let cluster = o.cluster.as_ref();
    let (mut views, unsupported) = member_views(o, s);
    // Capacity never runs ahead of the disks: held before anything plans with it.
    let held = expansion::hold_observed(o, &mut views);
    // Counted before members on their way out are dropped: their pods still run.
    let planned = views
        .iter()
        .filter(|v| !v.external && v.member.role.capacity.is_some())
        .count();
    let pdb = pdb::storage_pdb(cluster, s, pdb::storage_members(planned, s, &o.pods))?;
    let (pools, extra_nodes) = pools_and_leavers(o, s, &views, config, rpc, admin)?;
    let read_now = match &o.garage {
        GarageView::Read(read) => Some(read.as_ref()),
        GarageView::Unavailable(_) => None,
    };
    let removal = removal::decide(
        o,
        s,
        &views,
        &extra_nodes,
        read_now,
        t.drain_quiet,
        &o.transaction_id,
    );
    // Members on their way out are neither planned nor counted.
    views.retain(|v| !removal.excluded.contains(&v.member.name));
    Ok(Membership {
        views,
        unsupported,
        held,
        pdb,
        pools,
        removal,
    })
}

/// Healthy as every member sees it: Garage's connections are per node, and a member that
/// has not reached the others yet fails the requests it serves.
fn healthy_everywhere(read: Option<&GarageRead>) -> bool {
    read.and_then(|r| r.health.as_ref())
        .is_some_and(|h| h.status == HealthStatus::Healthy)
        && read.is_some_and(|r| r.every_view_healthy)
}

/// `Ready` from its verdict, and `StorageTopologyReady`.
fn ready_and_topology(
    (ready, reason, message): (bool, &'static str, String),
    topology_converged: bool,
) -> Vec<Desired> {
    vec![
        Desired {
            type_: common::CONDITION_READY,
            status: ready,
            reason,
            message,
        },
        Desired {
            type_: cc::CONDITION_STORAGE_TOPOLOGY_READY,
            status: topology_converged,
            reason: if topology_converged {
                reason::REASON_CONVERGED
            } else {
                reason::REASON_ADDING_MEMBERS
            },
            message: String::new(),
        },
    ]
}

/// How soon a pass looks again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pace {
    /// This pass writes a step of a transaction or creates members: the next step is due
    /// as soon as the write lands.
    acting: bool,
    /// A transaction, a pool or a claim's growth is in progress and waits on others.
    waiting: bool,
    /// A recorded drain waits on Garage: its repairs, its quiet window, the block hand-over.
    draining: bool,
    /// Converged, or only members beyond the wanted count remain, all ready and placed.
    settled: bool,
}

impl Pace {
    fn requeue(self, t: &Config) -> Duration {
        if self.acting {
            Duration::from_millis(500)
        } else if self.waiting {
            t.short_requeue
        } else if self.draining {
            // Each look asks every member for its status, health and workers, and Garage
            // checks the token of every request with argon2: while only the drain waits, it
            // is looked at no more often than `drain_requeue`.
            t.short_requeue.max(t.drain_requeue)
        } else if !self.settled {
            t.short_requeue
        } else {
            t.resync
        }
    }
}

/// The capacity-less roles to remove this pass: the cluster's own stale gateways', else
/// (when those leave the pass's layout change free) a connected edge's retired members'.
fn retired_gateways(
    o: &Observed,
    tombstones: &mut super::tombstones::Tombstones,
    read: Option<&GarageRead>,
    busy: bool,
) -> Option<LayoutChange> {
    tombstones
        .remove
        .take()
        .or_else(|| super::edge::retire(o, read, busy))
}

/// Every member's view: the generated default group, pool members and user GarageNodes (in
/// name order), and the user GarageNodes whose shape this operator does not run.
fn member_views(o: &Observed, s: &Settings) -> (Vec<MemberView>, Vec<String>) {
    let mut views: Vec<MemberView> = o
        .generated
        .iter()
        .filter(|(ordinal, _)| **ordinal < s.replicas || s.manual)
        .filter_map(|(_, gn)| members::member(gn, &o.pods, s, !s.manual))
        .collect();
    // Pool members stand beside the default group; a deleting one has left already.
    views.extend(
        o.pool_members
            .iter()
            .filter(|gn| gn.metadata.deletion_timestamp.is_none())
            .filter_map(|gn| members::member(gn, &o.pods, s, true)),
    );
    views.extend(
        super::gateways::members(o, s).filter_map(|gn| members::member(gn, &o.pods, s, false)),
    );
    // The gateways of the edge clusters connected to this one join its layout too.
    views.extend(o.edges.iter().flat_map(members::edge_members));
    let mut unsupported: Vec<String> = Vec::new();
    let mut user: Vec<&GarageNode> = o.user_nodes.iter().collect();
    user.sort_by_key(|n| n.name_any());
    for gn in user {
        if gn.metadata.deletion_timestamp.is_some() {
            continue;
        }
        match members::member(gn, &o.pods, s, false) {
            Some(view) => views.push(view),
            None => unsupported.push(gn.name_any()),
        }
    }
    (views, unsupported)
}

/// Which Auto slots are missing and which to create this pass.
struct AutoSlots {
    /// Every member is in the layout and the planner has nothing to do.
    topology_ready: bool,
    /// Ordinals below `replicas` without a GarageNode.
    missing: Vec<u32>,
    /// Ordinals to create now.
    create: Vec<u32>,
}

/// Auto membership: every slot at bootstrap, then one at a time once the topology settled.
fn auto_slots(
    o: &Observed,
    s: &Settings,
    views: &[MemberView],
    read: Option<&GarageRead>,
    in_layout: &BTreeMap<String, bool>,
    plan: Option<&Plan>,
    garage_error: bool,
) -> AutoSlots {
    let placed = |name: &str| in_layout.get(name) == Some(&true);
    let bootstrap =
        o.generated.is_empty() || read.is_some() && views.iter().all(|v| !placed(&v.member.name));
    let topology_ready =
        matches!(plan, Some(Plan::Converged)) && views.iter().all(|v| placed(&v.member.name));
    let missing: Vec<u32> = (0..s.replicas)
        .filter(|o2| !o.generated.contains_key(o2))
        .collect();
    let create: Vec<u32> = if bootstrap && !garage_error || o.generated.is_empty() {
        missing.clone()
    } else if topology_ready {
        missing.iter().copied().take(1).collect()
    } else {
        Vec::new()
    };
    AutoSlots {
        topology_ready,
        missing,
        create,
    }
}

/// Why the Garage node this pass reads through cannot be trusted with a layout write: it
/// reports an older layout version than the cluster was already seen at (a pod that has just
/// started and not yet joined its peers answers with an empty layout, for one). Writing
/// through it would stage a layout beside the cluster's instead of after it.
pub(super) fn view_behind(o: &Observed, read: Option<&GarageRead>) -> Option<String> {
    let read = read?;
    let recorded = o.cluster.status.as_ref()?.layout_version?;
    let seen = i64::try_from(read.layout.version).unwrap_or(i64::MAX);
    (seen < recorded).then(|| {
        format!(
            "the Garage node answering reports layout version {seen}, but version {recorded} was seen before: it has not caught up with its peers, so no layout change is made through it"
        )
    })
}

/// The plan as it stands once recently restarted members are waited for and a Garage view
/// that is `behind` the cluster is refused, the layout change of this pass (none while a
/// `transaction` holds the layout), and warnings for holds the user must resolve.
fn layout_write(
    mut plan: Option<Plan>,
    settling: &[String],
    behind: Option<&str>,
    transaction: bool,
) -> (Option<Plan>, Option<LayoutChange>, Vec<Note>) {
    if let (Some(why), Some(Plan::Apply { .. })) = (behind, &plan) {
        plan = Some(Plan::Hold {
            reason: HoldReason::HistoryNotSettled,
            message: why.to_owned(),
        });
    }
    if !settling.is_empty() && matches!(plan, Some(Plan::Apply { .. })) {
        plan = Some(Plan::Hold {
            reason: HoldReason::HistoryNotSettled,
            message: format!(
                "{} restarted recently; layout changes wait until Garage has replaced its connections ({} s after the pod started)",
                settling.join(", "),
                RECONNECT_GRACE.as_secs()
            ),
        });
    }
    let layout_change = match &plan {
        _ if transaction => None,
        Some(Plan::Apply {
            stage,
            intended,
            apply_version,
            bootstrap,
            parameters,
        }) => Some(LayoutChange {
            stage: stage.clone(),
            intended: intended.clone(),
            version: *apply_version,
            bootstrap: *bootstrap,
            parameters: parameters.clone(),
        }),
        _ => None,
    };
    let mut notes = Vec::new();
    if let Some(Plan::Hold { message, reason: r }) = &plan
        && matches!(
            r,
            HoldReason::ForeignStagedChanges
                | HoldReason::IdentityCollision
                | HoldReason::RoleLimit
        )
    {
        notes.push(Note::warning(
            hold_reason(*r),
            "HoldLayout",
            message.clone(),
        ));
    }
    (plan, layout_change, notes)
}

/// The condition a cluster whose settings cannot be used reports; nothing else happens.
pub fn refuse(
    o: &Observed,
    e: &DesiredError,
    t: &Config,
) -> (GarageClusterStatus, Vec<Desired>, Duration) {
    let mut status = o.cluster.status.clone().unwrap_or_default();
    let (reason, phase, _) = e.reported_as();
    status.phase = Some(phase);
    let wanted = vec![Desired {
        type_: common::CONDITION_READY,
        status: false,
        reason,
        message: e.to_string(),
    }];
    status.layout_diagnosis = status::diagnosis(&wanted);
    (status, wanted, t.resync)
}

pub(super) fn hold_reason(r: HoldReason) -> &'static str {
    match r {
        HoldReason::ForeignStagedChanges => reason::REASON_FOREIGN_STAGED_CHANGES,
        HoldReason::IdentityCollision => reason::REASON_IDENTITY_COLLISION,
        HoldReason::RoleLimit => reason::REASON_GARAGE_ROLE_LIMIT_EXCEEDED,
        HoldReason::HistoryNotSettled | HoldReason::WaitingForMembers => {
            reason::REASON_LAYOUT_NOT_READY
        }
    }
}
