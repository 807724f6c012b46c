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
use shared_types::conditions::{cluster as cc, reason};
use shared_types::garage_cluster::v1beta2::{GarageCluster, NodeLocalPoolSpec};
use shared_types::garage_node::GarageNode;
use shared_types::keys::label;

use crate::controller::cluster::pool_pins::{self, Pin};
use crate::controller::conditions::Desired;
use crate::controller::pool::membership::{self, GateCheck};
use crate::desired::config::ConfigRevision;
use crate::desired::hostpath_claim::{self, host_paths};
use crate::desired::pool::{self as desired_pool, ACTIVE, PoolInputs};
use crate::desired::secrets::SecretSource;
use crate::desired::{DesiredError, Settings, disk_layout, nodes};

/// Most Nodes the pools of one cluster may select (one Garage role each, below Garage's 256).
pub const MAX_POOL_MEMBERS: usize = 255;
/// Examples a condition message lists before it only counts.
const EXAMPLES: usize = 5;
/// Longest condition message.
const MAX_MESSAGE: usize = 4096;

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
    pub committed_roles: &'a [garage_admin::LayoutRole],
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
    let selected_total: usize = wanted.members.values().map(Vec::len).sum();
    // Facts that stop every membership change.
    let collisions = collisions(f.members);
    let too_many = selected_total > MAX_POOL_MEMBERS;
    let frozen = !collisions.is_empty() || too_many;

    let mut moves: Vec<String> = Vec::new();
    let mut waiting_old_pods: Vec<String> = Vec::new();
    let mut empty_pools: Vec<String> = Vec::new();
    let mut joining: Vec<String> = Vec::new();
    let mut unrepresented = 0usize;
    let mut retiring: Vec<String> = Vec::new();
    let mut ambiguous: Vec<String> = Vec::new();
    let mut claim_conflicts: Vec<String> = Vec::new();

    let mut path_conflicts: Vec<String> = Vec::new();
    let mut layout_refusals: Vec<String> = Vec::new();
    for pool in &s.pools {
        let name = pool.name.as_str();
        // A disk two Garage processes could mount: nothing is created or started for it.
        let clash = host_paths(pool).into_iter().find_map(|mine| {
            let other_pool = s
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
        if let Some(clash) = clash.or_else(|| own_overlap(pool)) {
            path_conflicts.push(clash);
            continue;
        }
        let key = desired_pool::activation_key(s, name);
        let selected = wanted.members.get(name).cloned().unwrap_or_default();
        let ds_name = desired_pool::daemonset_name(&s.name, name);
        // A disk the pool rolled out is never detached or remapped: nothing of it is updated.
        let same_name: Vec<&DaemonSet> = f
            .daemonsets
            .iter()
            .filter(|d| d.name_any() == ds_name)
            .collect();
        if let Err(why) = disk_layout_allowed(f, pool, &same_name) {
            layout_refusals.push(why);
            continue;
        }
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
        let orphans: Vec<&Pod> = pool_pods
            .iter()
            .filter(|p| {
                p.labels()
                    .get(label::LABEL_NODE_LOCAL_POOL)
                    .map(String::as_str)
                    == Some(name)
            })
            .filter(|p| {
                !p.owner_references().iter().any(|o| {
                    o.kind == "DaemonSet"
                        && current
                            .is_some_and(|d| d.metadata.uid.as_deref() == Some(o.uid.as_str()))
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
        if current.is_some() {
            plan.daemonsets.push(desired);
        } else if orphans.is_empty() && !ds_deleting {
            plan.create_daemonsets.push(desired);
            plan.needs_probe = true;
        }
        if !orphans.is_empty() {
            waiting_old_pods.extend(orphans.iter().map(|p| p.name_any()));
        }
        if selected.is_empty() {
            empty_pools.push(name.to_owned());
        }
        let members: BTreeMap<String, &GarageNode> = f
            .members
            .iter()
            .filter(|m| pool_of(m).as_deref() == Some(name))
            .filter_map(|m| host_of(m).map(|h| (h, m)))
            .collect();
        for host in &selected {
            let Some(node) = f.nodes.iter().find(|n| &n.name_any() == host) else {
                continue;
            };
            if let Some(other) = held_by_other_pool(f, &known_pools, name, host, node, &pool_pods) {
                moves.push(format!("{host} (still held by pool {other})"));
                continue;
            }
            let member = members.get(host);
            if member.is_some_and(|m| m.metadata.deletion_timestamp.is_some()) {
                // Its finalizer is taking the label away; it comes back after.
                joining.push(host.clone());
                continue;
            }
            // Another pool's claim on this Node's disks: nothing of this pool runs here.
            let claim_key = hostpath_claim::key(s, name);
            if let Some(who) = claimed_by_another(node, pool, &claim_key) {
                claim_conflicts.push(format!("pool {name} on {host} overlaps {who}"));
                continue;
            }
            if frozen {
                continue;
            }
            // The claim names the disk's identity once it is committed.
            let committed_id = member
                .filter(|m| f.in_layout.get(&m.name_any()) == Some(&true))
                .and_then(|m| m.status.as_ref()?.node_id.clone());
            let existing = node.annotations().get(&claim_key).map(String::as_str);
            match hostpath_claim::next(s, pool, existing, committed_id.as_deref()) {
                Ok(Some(value)) => plan.claims.push((host.clone(), claim_key.clone(), value)),
                Ok(None) => {}
                Err(why) => {
                    claim_conflicts.push(format!("pool {name} on {host}: {why}"));
                    continue;
                }
            }
            // A draining member keeps what it has; one acknowledged lost must not come back.
            let draining =
                member.is_some_and(|m| crate::controller::cluster::removal::drain_requested(m));
            if node.labels().get(&key).map(String::as_str) != Some(ACTIVE) && !draining {
                plan.activate.push((host.clone(), key.clone()));
                plan.needs_probe = true;
            }
            let Some(ds) = current else {
                joining.push(host.clone());
                unrepresented += usize::from(member.is_none());
                continue;
            };
            let ds_uid = ds.metadata.uid.clone().unwrap_or_default();
            let check = GateCheck {
                daemonset_uid: &ds_uid,
                activation: (&key, ACTIVE),
                selected: &selected,
                nodes: f.nodes,
                pool_pods: &pool_pods,
            };
            let member_name = desired_pool::garage_node_name(&s.name, name, host);
            // The claim covers every path by now: it already did, or it is written before
            // any release of this pass.
            for pod in pool_pods.iter().filter(|p| {
                membership::gated(p) && membership::target_node(p).as_deref() == Some(host)
            }) {
                if membership::may_release(pod, &check).is_ok() {
                    plan.release.push(Release {
                        pod: pod.name_any(),
                        node: host.clone(),
                        member: member_name.clone(),
                    });
                    plan.needs_probe = true;
                }
            }
            let scheduled = pool_pods
                .iter()
                .any(|p| membership::runs_on(p, name, host) && !membership::gated(p));
            match member {
                None if scheduled => {
                    let record = node
                        .annotations()
                        .get(&desired_pool::node_id_key(s, name))
                        .map(String::as_str);
                    let create =
                        |id: Option<&str>| desired_pool::member_node(f.cluster, s, pool, host, id);
                    match pool_pins::pin(s, name, host, record, f.committed_roles) {
                        Pin::Ambiguous(ids) => {
                            ambiguous.push(format!("{host} ({})", ids.join(", ")));
                        }
                        Pin::Fresh => plan.create_members.push(create(None)?),
                        Pin::To(id) => plan.create_members.push(create(Some(&id))?),
                    }
                    joining.push(host.clone());
                    unrepresented += 1;
                }
                None => {
                    joining.push(host.clone());
                    unrepresented += 1;
                }
                Some(m) => {
                    let placed = f.in_layout.get(&m.name_any()) == Some(&true);
                    if !placed {
                        joining.push(host.clone());
                    }
                    let id = m.status.as_ref().and_then(|st| st.node_id.clone());
                    if let (true, Some(id)) = (placed, id) {
                        let record_key = desired_pool::node_id_key(s, name);
                        if node.annotations().get(&record_key) != Some(&id) {
                            plan.record_ids.push((host.clone(), record_key, id));
                        }
                    }
                }
            }
        }
        // Members whose Node left the pool. A selector that matches nothing at all is
        // treated as a mistake, never as a request to drain the whole pool.
        if !selected.is_empty() {
            for (host, m) in &members {
                if !selected.contains(host) && m.metadata.deletion_timestamp.is_none() {
                    retiring.push(m.name_any());
                }
            }
        }
    }
    // Pools no longer declared: every member retires; the DaemonSet goes after the last.
    for pool in known_pools
        .iter()
        .filter(|p| !declared.contains(p.as_str()))
    {
        let members: Vec<&GarageNode> = f
            .members
            .iter()
            .filter(|m| pool_of(m).as_deref() == Some(pool.as_str()))
            .collect();
        retiring.extend(
            members
                .iter()
                .filter(|m| m.metadata.deletion_timestamp.is_none())
                .map(|m| m.name_any()),
        );
        if members.is_empty() {
            let ds_name = desired_pool::daemonset_name(&s.name, pool);
            if f.daemonsets.iter().any(|d| d.name_any() == ds_name) {
                plan.delete_daemonsets.push(ds_name);
            }
        }
    }
    // Activation labels nothing needs any more: the Node is not wanted by that pool and no
    // member of the pool stands on it (a member's own finalizer removes its label).
    for pool in &known_pools {
        let key = desired_pool::activation_key(s, pool);
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
    retiring.sort();
    plan.pending = unrepresented;
    plan.retire = retiring.clone();
    // Replacements first: retirement starts once every wanted member is in the layout.
    plan.retire_now = !frozen && joining.is_empty() && f.topology_ready;

    let (status, why, message) = if !path_conflicts.is_empty() {
        (
            false,
            reason::REASON_HOST_PATH_CONFLICT,
            format!(
                "{}. Two Garage processes must never share a HostPath; nothing is created or started for such a pool until the paths are disjoint",
                examples(&path_conflicts)
            ),
        )
    } else if !claim_conflicts.is_empty() {
        (
            false,
            reason::REASON_HOST_PATH_CONFLICT,
            format!(
                "{}. A HostPath claim stays on a Node until its pool's member there is gone or its cluster is destroyed; nothing of the claiming pool is started on such a Node. Choose other HostPaths, or remove a claim left by a cluster that is gone from the Node's annotations by hand",
                examples(&claim_conflicts)
            ),
        )
    } else if !layout_refusals.is_empty() {
        (
            false,
            reason::REASON_DISK_LAYOUT_CHANGE_BLOCKED,
            format!(
                "{}. A data path a pool rolled out is never removed, remapped or loosened in place: nothing of such a pool is updated. Restore the path (mark it readOnly: true to stop new blocks there), or remove the whole pool, wait until its GarageNodes, pods, DaemonSet and config revisions are gone, and recreate it with the new disks",
                examples(&layout_refusals)
            ),
        )
    } else if !collisions.is_empty() {
        (
            false,
            reason::REASON_IDENTITY_COLLISION,
            format!(
                "{}: each reports a Garage node ID another member also reports; they are one identity, not two replicas. Stop the duplicate process and give its Node a unique metadata directory. Pool membership changes are stopped",
                examples(&collisions)
            ),
        )
    } else if !ambiguous.is_empty() {
        (
            false,
            reason::REASON_IDENTITY_COLLISION,
            format!(
                "{}: several committed Garage roles are tagged for the same pool and Node, and the Node has no identity record saying which one its disk holds. No member is created there; remove the roles that are not this disk's (its metadata directory's node_key names the right one)",
                examples(&ambiguous)
            ),
        )
    } else if too_many {
        (
            false,
            reason::REASON_MEMBER_LIMIT_EXCEEDED,
            format!(
                "the pool selectors choose {selected_total} Nodes; one cluster holds at most {MAX_POOL_MEMBERS} node-local members. Nothing new is activated"
            ),
        )
    } else if !wanted.conflicts.is_empty() {
        let list: Vec<String> = wanted
            .conflicts
            .iter()
            .map(|(n, pools)| format!("{n} ({})", pools.join(", ")))
            .collect();
        (
            false,
            reason::REASON_SELECTOR_CONFLICT,
            format!(
                "Nodes selected by more than one pool are left out of every pool: {}",
                examples(&list)
            ),
        )
    } else if !moves.is_empty() {
        (
            false,
            reason::REASON_DIRECT_NODE_LOCAL_POOL_MOVE_BLOCKED,
            format!(
                "Nodes selected by a new pool while another still holds them: {}. Remove the Node from its old pool and wait for its GarageNode, activation label and pod to go before selecting it again",
                examples(&moves)
            ),
        )
    } else if !waiting_old_pods.is_empty() {
        (
            false,
            reason::REASON_WAITING_FOR_PREVIOUS_NODE_LOCAL_POOL_POD,
            format!(
                "pods of a pool DaemonSet that no longer exists still run: {}; the DaemonSet is recreated only after they are gone",
                examples(&waiting_old_pods)
            ),
        )
    } else if !empty_pools.is_empty() {
        (
            false,
            reason::REASON_WAITING_FOR_MEMBERS,
            format!(
                "pools {} select no Node; their members are kept. Label Nodes to match the selector, or remove the pool to drain it",
                examples(&empty_pools)
            ),
        )
    } else if !joining.is_empty() {
        (
            false,
            if retiring.is_empty() {
                reason::REASON_WAITING_FOR_MEMBERS
            } else {
                reason::REASON_WAITING_FOR_REPLACEMENT
            },
            format!(
                "members not in the layout yet on Nodes {}",
                examples(&joining)
            ),
        )
    } else if !retiring.is_empty() {
        (
            false,
            reason::REASON_DRAINING,
            format!(
                "leaving through prepared drains, one at a time: {}",
                examples(&retiring)
            ),
        )
    } else {
        (true, reason::REASON_CONVERGED, String::new())
    };
    plan.condition = Some(Desired {
        type_: cc::CONDITION_NODE_LOCAL_POOLS_READY,
        status,
        reason: why,
        message: cap(message),
    });
    Ok(plan)
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

/// At most five sorted examples and the count.
fn examples(items: &[String]) -> String {
    let mut sorted: Vec<&String> = items.iter().collect();
    sorted.sort();
    sorted.dedup();
    let shown: Vec<&str> = sorted.iter().take(EXAMPLES).map(|s| s.as_str()).collect();
    if sorted.len() > EXAMPLES {
        format!(
            "{} (and {} more, {} in all)",
            shown.join(", "),
            sorted.len() - EXAMPLES,
            sorted.len()
        )
    } else {
        shown.join(", ")
    }
}

/// A message cut to the condition limit on a character boundary.
fn cap(mut message: String) -> String {
    if message.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE - 3;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push_str("...");
    }
    message
}

#[cfg(test)]
#[path = "pools_tests.rs"]
mod tests;
