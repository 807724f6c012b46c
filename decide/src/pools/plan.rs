//! The cluster's node-local pools, decided purely: which Nodes get (or lose) a pool's
//! activation label, which DaemonSets to ensure or retire, which gated pods may start, which
//! scheduled pods become GarageNodes, which identities are recorded on their Nodes, which
//! members retire through the drain transaction, and `NodeLocalPoolsReady`.
//!
//! Nothing destructive is decided here without a fact behind it: a member leaves only through
//! the drain transaction (the caller hands [`PoolPlan::retire`] to it once replacements are
//! in the layout), a pool whose selector matches no Node keeps its members, a Node selected
//! by a second pool while the first still holds it is left alone, and two members reporting
//! one Garage ID stop every membership change.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::ResourceExt;
use shared_types::conditions::reason;
use shared_types::garage_cluster::v1beta2::{GarageCluster, NodeLocalPoolSpec};
use shared_types::garage_node::GarageNode;
use shared_types::keys::label;

use crate::conditions::Desired;
use crate::desired::config::ConfigRevision;
use crate::desired::hostpath_claim::{self, host_paths};
use crate::desired::pool::{self as desired_pool, ACTIVE, PoolInputs};
use crate::desired::secrets::SecretSource;
use crate::desired::{DesiredError, Settings, disk_layout, nodes};
use crate::pools::blockers::{Blocker, Blockers};
use crate::pools::capability::Verdict;
use crate::pools::membership::{self, GateCheck};
use crate::pools::pins::{self, Pin};

/// Most Nodes the pools of one cluster may select (one Garage role each, below Garage's 256).
pub const MAX_POOL_MEMBERS: usize = 255;

/// A gated pool pod that may start now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// The pod.
    pub pod: String,
    /// The Kubernetes Node it is pinned to.
    pub node: String,
    /// The GarageNode that will stand for it.
    pub member: String,
}

/// Everything the pools ask for this pass.
#[derive(Debug, Clone, Default)]
pub struct PoolPlan {
    /// Config revisions of pools with several data directories, created before any
    /// DaemonSet mounts them (immutable; never pruned while current).
    pub configs: Vec<ConfigRevision>,
    /// DaemonSets to update: each was observed live, and is only patched (never created
    /// again) if it is still there when the pass acts.
    pub daemonsets: Vec<DaemonSet>,
    /// DaemonSets to create: none existed and no pod of an earlier one remained.
    pub create_daemonsets: Vec<DaemonSet>,
    /// DaemonSets of pools no longer declared and without members: delete.
    pub delete_daemonsets: Vec<String>,
    /// `(Node, label key)` to set to [`ACTIVE`].
    pub activate: Vec<(String, String)>,
    /// `(Node, label key)` to remove: Nodes that carry a pool's activation but hold no
    /// member of it and are not wanted by it.
    pub deactivate: Vec<(String, String)>,
    /// Gated pods to release.
    pub release: Vec<Release>,
    /// Member GarageNodes to create.
    pub create_members: Vec<GarageNode>,
    /// `(Node, annotation key, node ID)` identity records to write.
    pub record_ids: Vec<(String, String, String)>,
    /// `(Node, annotation key, claim)` HostPath claims to write, before anything that lets a
    /// pool pod run on the Node.
    pub claims: Vec<(String, String, String)>,
    /// Members whose Node left their pool (or whose pool was removed), in the order they
    /// leave through the drain transaction.
    pub retire: Vec<String>,
    /// Replacements are in the layout: the next retirement may start (one already started
    /// always continues).
    pub retire_now: bool,
    /// Selected Nodes that have no member GarageNode yet.
    pub pending: usize,
    /// `NodeLocalPoolsReady`, when the cluster has or had pools.
    pub condition: Option<Desired>,
    /// Some write above changes what may run on a Node: the capability probe must hold.
    pub needs_probe: bool,
    /// The writes above wait for a fresh proof that the scheduling gate fences pods: run the
    /// probe (act does, and the next pass decides from its verdict).
    pub run_probe: bool,
}

/// What the pool decision reads.
pub struct PoolFacts<'a> {
    /// The cluster.
    pub cluster: &'a GarageCluster,
    /// Its settings.
    pub settings: &'a Settings,
    /// The shared config revision pool pods with one data HostPath mount.
    pub config: &'a ConfigRevision,
    /// RPC secret.
    pub rpc_secret: &'a SecretSource,
    /// Admin token.
    pub admin_token: &'a SecretSource,
    /// Every Kubernetes Node.
    pub nodes: &'a [Node],
    /// The cluster's pool DaemonSets.
    pub daemonsets: &'a [DaemonSet],
    /// The cluster's config revisions (pool revisions record their disk layout).
    pub config_maps: &'a [ConfigMap],
    /// The cluster's pods.
    pub pods: &'a [Pod],
    /// Generated pool members.
    pub members: &'a [GarageNode],
    /// Member name to whether its role is in the committed layout as desired.
    pub in_layout: &'a BTreeMap<String, bool>,
    /// Every desired member is in the layout and the layout is converged.
    pub topology_ready: bool,
    /// `(who, path)` HostPaths other clusters' pools mount.
    pub foreign_paths: &'a [(String, String)],
    /// The roles of the committed layout (empty when Garage could not be read): a new member
    /// whose Node lost its identity record recovers the role tagged for it.
    pub committed_roles: &'a [garage_api_types::LayoutRole],
    /// What the scheduling-gate probe last established in this namespace (a proof only while
    /// fresh); `None` when it has not run.
    pub gate: Option<&'a Verdict>,
}

/// The pools' plan.
pub fn decide(f: &PoolFacts<'_>) -> Result<PoolPlan, DesiredError> {
    let s = f.settings;
    let mut plan = PoolPlan::default();
    let declared: BTreeSet<&str> = s.pools.iter().map(|p| p.name.as_str()).collect();
    let known_pools: BTreeSet<String> = declared
        .iter()
        .map(|p| (*p).to_owned())
        .chain(f.members.iter().filter_map(pool_of))
        .chain(
            f.daemonsets
                .iter()
                .filter_map(|d| d.labels().get(label::LABEL_NODE_LOCAL_POOL).cloned()),
        )
        .collect();
    if known_pools.is_empty() {
        return Ok(plan);
    }
    let pool_pods: Vec<Pod> = f
        .pods
        .iter()
        .filter(|p| p.labels().contains_key(label::LABEL_NODE_LOCAL_POOL))
        .cloned()
        .collect();
    let wanted = membership::membership(&s.pools, f.nodes);
    let mut blockers = Blockers::default();
    let frozen = freezes(f, &wanted, &mut blockers);
    let scope = Scope {
        f,
        known_pools: &known_pools,
        pool_pods: &pool_pods,
        frozen,
    };
    let mut unrepresented = 0usize;
    for pool in &s.pools {
        let selected = wanted.members.get(&pool.name).cloned().unwrap_or_default();
        unrepresented += plan_pool(&scope, pool, &selected, &mut plan, &mut blockers)?;
    }
    retire_undeclared(f, &known_pools, &declared, &mut plan, &mut blockers);
    deactivate_unneeded(f, &known_pools, &wanted, &mut plan);
    plan.pending = unrepresented;
    plan.retire = blockers.retiring();
    // Replacements first: retirement starts once every wanted member is in the layout.
    plan.retire_now = !frozen && !blockers.joining() && f.topology_ready;
    plan.condition = Some(blockers.condition());
    Ok(hold_for_probe(plan, f.gate))
}

/// Nothing that lets a pool pod run somewhere, or takes that away, is written without a fresh
/// proof that the scheduling gate fences pods. Without one the pools' writes wait: the plan
/// asks for the probe, `NodeLocalPoolsReady` says why, and what the rest of the cluster's
/// decision reads (retirements, pending members) stays as decided.
pub fn hold_for_probe(plan: PoolPlan, gate: Option<&Verdict>) -> PoolPlan {
    if !plan.needs_probe || matches!(gate, Some(Verdict::Proven(_))) {
        return plan;
    }
    let (why, message) = match gate {
        Some(Verdict::Unavailable { reason, message }) => (*reason, message.clone()),
        Some(Verdict::Pending(message)) => {
            (reason::REASON_SCHEDULING_GATE_PROBE_PENDING, message.clone())
        }
        _ => (
            reason::REASON_SCHEDULING_GATE_PROBE_PENDING,
            "proving that the API server keeps and the scheduler honours Pod scheduling gates before anything is created or released for the pools".to_owned(),
        ),
    };
    let condition = plan.condition.map(|mut c| {
        c.status = false;
        c.reason = why;
        c.message = message;
        c
    });
    PoolPlan {
        retire: plan.retire,
        retire_now: plan.retire_now,
        pending: plan.pending,
        condition,
        needs_probe: true,
        run_probe: true,
        ..PoolPlan::default()
    }
}

/// What the pools' pass reads throughout.
struct Scope<'a> {
    f: &'a PoolFacts<'a>,
    /// Pools declared, or still holding members or a DaemonSet.
    known_pools: &'a BTreeSet<String>,
    /// The cluster's pool pods.
    pool_pods: &'a [Pod],
    /// A fact that stops every membership change holds.
    frozen: bool,
}

/// Facts that stop every membership change: two members with one identity, or more Nodes
/// selected than one cluster holds. Selector conflicts are reported too. True when frozen.
fn freezes(f: &PoolFacts<'_>, wanted: &membership::Membership, blockers: &mut Blockers) -> bool {
    let collisions = collisions(f.members);
    let selected_total: usize = wanted.members.values().map(Vec::len).sum();
    let too_many = selected_total > MAX_POOL_MEMBERS;
    if too_many {
        blockers.push(Blocker::TooMany(selected_total));
    }
    for (n, pools) in &wanted.conflicts {
        blockers.push(Blocker::SelectorConflict(format!(
            "{n} ({})",
            pools.join(", ")
        )));
    }
    let frozen = !collisions.is_empty() || too_many;
    blockers
        .0
        .extend(collisions.into_iter().map(Blocker::Collision));
    frozen
}

/// A disk two Garage processes could mount: another pool's, another cluster's, or the
/// pool's own twice.
fn path_clash(f: &PoolFacts<'_>, pool: &NodeLocalPoolSpec) -> Option<String> {
    let name = pool.name.as_str();
    let clash = host_paths(pool).into_iter().find_map(|mine| {
        let other_pool = f
            .settings
            .pools
            .iter()
            .filter(|p| p.name != pool.name)
            .find_map(|p| {
                host_paths(p)
                    .into_iter()
                    .find(|theirs| overlap(&mine, theirs))
                    .map(|theirs| format!("pool {}'s {theirs}", p.name))
            });
        other_pool
            .or_else(|| {
                f.foreign_paths
                    .iter()
                    .find(|(_, theirs)| overlap(&mine, theirs))
                    .map(|(who, theirs)| format!("{theirs} of {who}"))
            })
            .map(|with| format!("pool {name}: {mine} overlaps {with}"))
    });
    clash.or_else(|| own_overlap(pool))
}

/// One declared pool: its disks checked, its DaemonSet and config planned, each selected
/// Node planned, and the members whose Node left it retired. Returns the selected Nodes
/// without a member yet.
fn plan_pool(
    sc: &Scope<'_>,
    pool: &NodeLocalPoolSpec,
    selected: &[String],
    plan: &mut PoolPlan,
    blockers: &mut Blockers,
) -> Result<usize, DesiredError> {
    let f = sc.f;
    let s = f.settings;
    let name = pool.name.as_str();
    // A disk two Garage processes could mount: nothing is created or started for it.
    if let Some(clash) = path_clash(f, pool) {
        blockers.push(Blocker::PathConflict(clash));
        return Ok(0);
    }
    let ds_name = desired_pool::daemonset_name(&s.name, name);
    // A disk the pool rolled out is never detached or remapped: nothing of it is updated.
    let same_name: Vec<&DaemonSet> = f
        .daemonsets
        .iter()
        .filter(|d| d.name_any() == ds_name)
        .collect();
    if let Err(why) = disk_layout_allowed(f, pool, &same_name) {
        blockers.push(Blocker::LayoutRefused(why));
        return Ok(0);
    }
    let current = plan_daemonset(sc, pool, &ds_name, plan, blockers)?;
    if selected.is_empty() {
        blockers.push(Blocker::EmptyPool(name.to_owned()));
    }
    let members: BTreeMap<String, &GarageNode> = f
        .members
        .iter()
        .filter(|m| pool_of(m).as_deref() == Some(name))
        .filter_map(|m| host_of(m).map(|h| (h, m)))
        .collect();
    let here = PoolHere {
        pool,
        key: desired_pool::activation_key(s, name),
        selected,
        current,
        members: &members,
    };
    let mut unrepresented = 0;
    for host in selected {
        unrepresented += plan_host(sc, &here, host, plan, blockers)?;
    }
    // Members whose Node left the pool. A selector that matches nothing at all is treated
    // as a mistake, never as a request to drain the whole pool.
    if !selected.is_empty() {
        for (host, m) in &members {
            if !selected.contains(host) && m.metadata.deletion_timestamp.is_none() {
                blockers.push(Blocker::Retiring(m.name_any()));
            }
        }
    }
    Ok(unrepresented)
}

/// The pool's config revision and DaemonSet: updated while current, created when none
/// exists and no pod of an earlier one remains. Returns the current DaemonSet.
fn plan_daemonset<'a>(
    sc: &Scope<'a>,
    pool: &NodeLocalPoolSpec,
    ds_name: &str,
    plan: &mut PoolPlan,
    blockers: &mut Blockers,
) -> Result<Option<&'a DaemonSet>, DesiredError> {
    let f = sc.f;
    let s = f.settings;
    // A DaemonSet being deleted is not current: its pods are old ones.
    let current = f
        .daemonsets
        .iter()
        .find(|d| d.name_any() == ds_name && d.metadata.deletion_timestamp.is_none());
    let ds_deleting = f
        .daemonsets
        .iter()
        .any(|d| d.name_any() == ds_name && d.metadata.deletion_timestamp.is_some());
    // Pods of a DaemonSet that no longer exists fence the pool until they are gone.
    let orphans: Vec<&Pod> = sc
        .pool_pods
        .iter()
        .filter(|p| p.labels().get(label::LABEL_NODE_LOCAL_POOL) == Some(&pool.name))
        .filter(|p| {
            !p.owner_references().iter().any(|o| {
                o.kind == "DaemonSet"
                    && current.is_some_and(|d| d.metadata.uid.as_deref() == Some(o.uid.as_str()))
            })
        })
        .collect();
    let own_config = desired_pool::config_revision(f.cluster, s, pool)?;
    let desired = desired_pool::daemonset(PoolInputs {
        cluster: f.cluster,
        settings: s,
        pool,
        config: own_config.as_ref().unwrap_or(f.config),
        rpc_secret: f.rpc_secret,
        admin_token: f.admin_token,
    })?;
    plan.configs.extend(own_config);
    if let Some(current) = current {
        // The update names the version this decision checked (its disk layout among the
        // rest): the API server refuses it if the DaemonSet changed or went since.
        let mut desired = desired;
        desired.metadata.resource_version = current.metadata.resource_version.clone();
        plan.daemonsets.push(desired);
    } else if orphans.is_empty() && !ds_deleting {
        plan.create_daemonsets.push(desired);
        plan.needs_probe = true;
    }
    for p in orphans {
        blockers.push(Blocker::OldPod(p.name_any()));
    }
    Ok(current)
}

/// One declared pool as the Nodes it selects see it.
struct PoolHere<'a> {
    pool: &'a NodeLocalPoolSpec,
    /// The pool's activation label key.
    key: String,
    /// The Nodes the pool selects.
    selected: &'a [String],
    /// Its DaemonSet, when current.
    current: Option<&'a DaemonSet>,
    /// Its members by Node.
    members: &'a BTreeMap<String, &'a GarageNode>,
}

/// One selected Node of a pool: its disk claim, its activation, its gated pods' release and
/// its member's creation or identity record. Returns 1 when the Node has no member yet.
fn plan_host(
    sc: &Scope<'_>,
    here: &PoolHere<'_>,
    host: &str,
    plan: &mut PoolPlan,
    blockers: &mut Blockers,
) -> Result<usize, DesiredError> {
    let f = sc.f;
    let s = f.settings;
    let name = here.pool.name.as_str();
    let Some(node) = f.nodes.iter().find(|n| n.name_any() == host) else {
        return Ok(0);
    };
    if let Some(other) = held_by_other_pool(f, sc.known_pools, name, host, node, sc.pool_pods) {
        blockers.push(Blocker::Move(format!(
            "{host} (still held by pool {other})"
        )));
        return Ok(0);
    }
    let member = here.members.get(host).copied();
    if member.is_some_and(|m| m.metadata.deletion_timestamp.is_some()) {
        // Its finalizer is taking the label away; it comes back after.
        blockers.push(Blocker::Joining(host.to_owned()));
        return Ok(0);
    }
    // Another pool's claim on this Node's disks: nothing of this pool runs here.
    let claim_key = hostpath_claim::key(s, name);
    if let Some(who) = claimed_by_another(node, here.pool, &claim_key) {
        blockers.push(Blocker::ClaimConflict(format!(
            "pool {name} on {host} overlaps {who}"
        )));
        return Ok(0);
    }
    if sc.frozen {
        return Ok(0);
    }
    // The claim names the disk's identity once it is committed.
    let committed_id = member
        .filter(|m| f.in_layout.get(&m.name_any()) == Some(&true))
        .and_then(|m| m.status.as_ref()?.node_id.clone());
    let existing = node.annotations().get(&claim_key).map(String::as_str);
    match hostpath_claim::next(s, here.pool, existing, committed_id.as_deref()) {
        Ok(Some(value)) => plan
            .claims
            .push((host.to_owned(), claim_key.clone(), value)),
        Ok(None) => {}
        Err(why) => {
            blockers.push(Blocker::ClaimConflict(format!(
                "pool {name} on {host}: {why}"
            )));
            return Ok(0);
        }
    }
    // A draining member keeps what it has; one acknowledged lost must not come back.
    let draining = member.is_some_and(crate::cluster::removal::drain_requested);
    if node.labels().get(&here.key).map(String::as_str) != Some(ACTIVE) && !draining {
        plan.activate.push((host.to_owned(), here.key.clone()));
        plan.needs_probe = true;
    }
    let Some(ds) = here.current else {
        blockers.push(Blocker::Joining(host.to_owned()));
        return Ok(usize::from(member.is_none()));
    };
    release_gated(sc, here, ds, host, plan);
    plan_member(sc, here, node, host, member, plan, blockers)
}

/// Gated pods of the pool on `host` that pass every check may start; the claim covers every
/// path by now (it already did, or it is written before any release of this pass).
fn release_gated(
    sc: &Scope<'_>,
    here: &PoolHere<'_>,
    ds: &DaemonSet,
    host: &str,
    plan: &mut PoolPlan,
) {
    let s = sc.f.settings;
    let ds_uid = ds.metadata.uid.clone().unwrap_or_default();
    let check = GateCheck {
        daemonset_uid: &ds_uid,
        activation: (&here.key, ACTIVE),
        selected: here.selected,
        nodes: sc.f.nodes,
        pool_pods: sc.pool_pods,
    };
    let member_name = desired_pool::garage_node_name(&s.name, &here.pool.name, host);
    for pod in sc
        .pool_pods
        .iter()
        .filter(|p| membership::gated(p) && membership::target_node(p).as_deref() == Some(host))
    {
        if membership::may_release(pod, &check).is_ok() {
            plan.release.push(Release {
                pod: pod.name_any(),
                node: host.to_owned(),
                member: member_name.clone(),
            });
            plan.needs_probe = true;
        }
    }
}

/// The member on `host`: created once its pod is scheduled (pinned to the identity its
/// Node or the layout records), its identity recorded on the Node once it is placed.
/// Returns 1 when the Node has no member yet.
fn plan_member(
    sc: &Scope<'_>,
    here: &PoolHere<'_>,
    node: &Node,
    host: &str,
    member: Option<&GarageNode>,
    plan: &mut PoolPlan,
    blockers: &mut Blockers,
) -> Result<usize, DesiredError> {
    let f = sc.f;
    let s = f.settings;
    let name = here.pool.name.as_str();
    let scheduled = sc
        .pool_pods
        .iter()
        .any(|p| membership::runs_on(p, name, host) && !membership::gated(p));
    let Some(m) = member else {
        if scheduled {
            let record = node
                .annotations()
                .get(&desired_pool::node_id_key(s, name))
                .map(String::as_str);
            let create =
                |id: Option<&str>| desired_pool::member_node(f.cluster, s, here.pool, host, id);
            match pins::pin(s, name, host, record, f.committed_roles) {
                Pin::Ambiguous(ids) => {
                    blockers.push(Blocker::Ambiguous(format!("{host} ({})", ids.join(", "))));
                }
                Pin::Fresh => plan.create_members.push(create(None)?),
                Pin::To(id) => plan.create_members.push(create(Some(&id))?),
            }
        }
        blockers.push(Blocker::Joining(host.to_owned()));
        return Ok(1);
    };
    let placed = f.in_layout.get(&m.name_any()) == Some(&true);
    if !placed {
        blockers.push(Blocker::Joining(host.to_owned()));
    }
    let id = m.status.as_ref().and_then(|st| st.node_id.clone());
    if let (true, Some(id)) = (placed, id) {
        let record_key = desired_pool::node_id_key(s, name);
        if node.annotations().get(&record_key) != Some(&id) {
            plan.record_ids.push((host.to_owned(), record_key, id));
        }
    }
    Ok(0)
}

/// Pools no longer declared: every member retires; the DaemonSet goes after the last.
fn retire_undeclared(
    f: &PoolFacts<'_>,
    known_pools: &BTreeSet<String>,
    declared: &BTreeSet<&str>,
    plan: &mut PoolPlan,
    blockers: &mut Blockers,
) {
    let s = f.settings;
    for pool in known_pools
        .iter()
        .filter(|p| !declared.contains(p.as_str()))
    {
        let members: Vec<&GarageNode> = f
            .members
            .iter()
            .filter(|m| pool_of(m).as_deref() == Some(pool.as_str()))
            .collect();
        for m in members
            .iter()
            .filter(|m| m.metadata.deletion_timestamp.is_none())
        {
            blockers.push(Blocker::Retiring(m.name_any()));
        }
        if members.is_empty() {
            let ds_name = desired_pool::daemonset_name(&s.name, pool);
            if f.daemonsets.iter().any(|d| d.name_any() == ds_name) {
                plan.delete_daemonsets.push(ds_name);
            }
        }
    }
}

/// Activation labels nothing needs any more: the Node is not wanted by that pool and no
/// member of the pool stands on it (a member's own finalizer removes its label).
fn deactivate_unneeded(
    f: &PoolFacts<'_>,
    known_pools: &BTreeSet<String>,
    wanted: &membership::Membership,
    plan: &mut PoolPlan,
) {
    for pool in known_pools {
        let key = desired_pool::activation_key(f.settings, pool);
        let wanted_here = wanted.members.get(pool).cloned().unwrap_or_default();
        for node in f.nodes {
            let host = node.name_any();
            let active = node.labels().contains_key(&key);
            let has_member = f.members.iter().any(|m| {
                pool_of(m).as_deref() == Some(pool.as_str())
                    && host_of(m).as_deref() == Some(host.as_str())
            });
            if active && !has_member && !wanted_here.contains(&host) {
                plan.deactivate.push((host, key.clone()));
            }
        }
    }
}

/// Who else claims a HostPath of `pool` on `node` (any claim but the one keyed `own`), when
/// some claim overlaps; an unreadable claim overlaps everything.
fn claimed_by_another(node: &Node, pool: &NodeLocalPoolSpec, own: &str) -> Option<String> {
    let mine = host_paths(pool);
    hostpath_claim::others(node, own)
        .into_iter()
        .find(|(_, theirs)| {
            theirs
                .as_ref()
                .is_none_or(|theirs| mine.iter().any(|m| theirs.iter().any(|t| overlap(m, t))))
        })
        .map(|(who, _)| who)
}

/// Two HostPaths of the pool itself that overlap (metadata and data, or two data paths).
fn own_overlap(pool: &NodeLocalPoolSpec) -> Option<String> {
    let paths = host_paths(pool);
    paths.iter().enumerate().find_map(|(i, a)| {
        paths[..i]
            .iter()
            .find(|b| overlap(a, b))
            .map(|b| format!("pool {}: {a} overlaps its own {b}", pool.name))
    })
}

/// Whether `pool`'s desired disk layout keeps every disk its DaemonSet (`same_name`, live or
/// being deleted) and its retained config revisions record, and whether the DaemonSet's
/// record agrees with the HostPaths its template actually mounts. A DaemonSet from before the
/// record existed is judged by its mounts alone. The error names the field and the breach.
fn disk_layout_allowed(
    f: &PoolFacts<'_>,
    pool: &NodeLocalPoolSpec,
    same_name: &[&DaemonSet],
) -> Result<(), String> {
    let field = format!("spec.storage.nodeLocalPools[{:?}]", pool.name);
    let to = disk_layout::of_pool(pool);
    let mut rolled_out: Vec<(String, disk_layout::DiskLayout)> = Vec::new();
    for ds in same_name {
        let who = format!("DaemonSet {}", ds.name_any());
        let actual =
            disk_layout::mounted(ds).map_err(|e| format!("pool {}: {who}: {e}", pool.name))?;
        if let Some(record) = disk_layout::recorded(ds.metadata.annotations.as_ref()) {
            let record = record.map_err(|e| format!("pool {}: {who}: {e}", pool.name))?;
            if !disk_layout::matches_mounts(&record, &actual) {
                return Err(format!(
                    "pool {}: {who} mounts other HostPaths than its recorded disk layout says; the operator cannot tell which is true. Restore the DaemonSet's volumes or record as the operator wrote them",
                    pool.name
                ));
            }
            rolled_out.push((format!("{who}'s record"), record));
        }
        rolled_out.push((format!("{who}'s mounts"), actual));
    }
    for cm in f
        .config_maps
        .iter()
        .filter(|cm| cm.labels().get(label::LABEL_NODE_LOCAL_POOL) == Some(&pool.name))
    {
        if let Some(record) = disk_layout::recorded(cm.metadata.annotations.as_ref()) {
            let who = format!("config revision {}", cm.name_any());
            let record = record.map_err(|e| format!("pool {}: {who}: {e}", pool.name))?;
            rolled_out.push((who, record));
        }
    }
    // Each breach once, with the first record that shows it.
    let mut breaches: BTreeMap<String, &str> = BTreeMap::new();
    for (who, from) in &rolled_out {
        for v in disk_layout::violations(&field, from, &to) {
            breaches.entry(v).or_insert(who);
        }
    }
    if breaches.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = breaches
        .into_iter()
        .map(|(v, who)| format!("{v} (rolled out per {who})"))
        .collect();
    Err(list.join("; "))
}

/// True when one path is the other or lies inside it (compared by path components).
fn overlap(a: &str, b: &str) -> bool {
    let parts = |p: &str| -> Vec<String> {
        p.split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .map(str::to_owned)
            .collect()
    };
    let (a, b) = (parts(a), parts(b));
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

/// The pool of a generated member.
fn pool_of(m: &GarageNode) -> Option<String> {
    match nodes::shape(m) {
        Ok(nodes::NodeShape::Pool { pool, .. }) => Some(pool),
        _ => None,
    }
}

/// The Kubernetes Node of a generated member.
fn host_of(m: &GarageNode) -> Option<String> {
    match nodes::shape(m) {
        Ok(nodes::NodeShape::Pool { node, .. }) => Some(node),
        _ => None,
    }
}

/// Another pool of this cluster that still holds `host`: its activation label, a member or a
/// pod there. The label counts as ownership before any pod or member exists.
fn held_by_other_pool(
    f: &PoolFacts<'_>,
    pools: &BTreeSet<String>,
    pool: &str,
    host: &str,
    node: &Node,
    pool_pods: &[Pod],
) -> Option<String> {
    pools
        .iter()
        .filter(|p| p.as_str() != pool)
        .find_map(|other| {
            let label = node
                .labels()
                .contains_key(&desired_pool::activation_key(f.settings, other));
            let member = f.members.iter().any(|m| {
                pool_of(m).as_deref() == Some(other.as_str()) && host_of(m).as_deref() == Some(host)
            });
            let pod = pool_pods.iter().any(|p| {
                p.labels().get(label::LABEL_NODE_LOCAL_POOL) == Some(other)
                    && (membership::target_node(p).as_deref() == Some(host)
                        || p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(host))
            });
            (label || member || pod).then(|| other.clone())
        })
}

/// Members that report a node ID another member reports too.
fn collisions(members: &[GarageNode]) -> Vec<String> {
    let mut by_id: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for m in members {
        if let Some(id) = m.status.as_ref().and_then(|s| s.node_id.clone()) {
            by_id.entry(id).or_default().push(m.name_any());
        }
    }
    let mut out: Vec<String> = by_id
        .into_values()
        .filter(|names| names.len() > 1)
        .flatten()
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests;
