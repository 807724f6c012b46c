//! The prepared drain of one storage identity, recorded in the layout owner's
//! `status.storageDrain` before its first effect:
//!
//! 1. intent: the record names the actor GarageNode, the exact node ID and the pod that runs it;
//! 2. the role is removed in one layout version while the source keeps running;
//! 3. a Blocks repair is launched on every current positive-capacity destination and on the
//!    live source, and each repair worker is adopted into the record;
//! 4. once every repair is done, the history has no migration in progress, no block error is
//!    left, every enabled resync worker is idle (and, with `requiresEmptyQueue`, the resync
//!    queue is empty) and that held for a quiet period, `completedAt` is set.
//!
//! Only then may the actor be deleted (the webhook checks the record, SH-20). [`step`] is pure:
//! the cluster controller observes, calls it and carries the step out, always writing the
//! record before an effect that the record has to explain after a crash.

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use shared_types::conditions::reason;
use shared_types::drain::{self as contract, Phase};
use shared_types::garage_cluster::common::{DrainActor, DrainActorKind, StorageDrainStatus};

use garage_api_types::{
    ClusterHealth, ClusterLayout, HealthStatus, LayoutHistory, NodeId, WorkerInfo,
};

/// Name Garage gives a Blocks repair worker.
pub const REPAIR_WORKER: &str = "Block repair worker";
/// Prefix of Garage's block resync workers.
pub const RESYNC_WORKER: &str = "Block resync worker";

/// A storage GarageNode that asks to be drained (annotation `drain=true`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID of this incarnation.
    pub uid: String,
    /// Its node ID, proven from its running pod.
    pub node_id: Option<NodeId>,
    /// UID of the pod the ID was proven from.
    pub pod_uid: Option<String>,
    /// Lost-source facts, read whatever runs (or does not) for the node.
    pub lost: LostFacts,
    /// A capacity-less gateway leaving (its GarageNode is being deleted) or replacing its
    /// identity: a role-only retirement without block proof.
    pub gateway: bool,
    /// For a gateway that runs a new identity (its metadata was lost): that identity and the
    /// role it takes in the same layout version as the old one leaves.
    pub swap: Option<(NodeId, crate::layout::DesiredRole)>,
    /// A gateway whose pod still carries the gateway tier label, so the gateway Service still
    /// sends it requests.
    pub serving: bool,
}

/// What a lost-source recovery needs to know of a candidate, whether or not its pod runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LostFacts {
    /// The `acknowledge-lost-source` annotation: `None` when absent, `Err` with the value
    /// when it is not a 64-hex Garage node ID.
    pub acknowledged: Option<Result<NodeId, String>>,
    /// The persisted identity (`status.nodeId`), proven from a pod or not.
    pub recorded_id: Option<NodeId>,
    /// Name of the node's pod while it exists in the API, in any phase.
    pub pod: Option<String>,
    /// Another identity Garage sees at the node's pod address (a wiped or swapped metadata
    /// volume brought up a new one).
    pub replacement: Option<NodeId>,
}

/// What the proof reads from Garage, per node (only while the role is absent).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProofObservation {
    /// Workers of every node that answered.
    pub workers: BTreeMap<NodeId, Vec<WorkerInfo>>,
    /// Number of blocks in error, per node that answered.
    pub block_errors: BTreeMap<NodeId, usize>,
}

/// Everything [`step`] decides from.
#[derive(Debug, Clone)]
pub struct Observed<'a> {
    /// The recorded transaction.
    pub record: Option<&'a StorageDrainStatus>,
    /// Nodes that ask to be drained, in the order to drain them.
    pub candidates: &'a [Candidate],
    /// Whether the recorded actor still exists as that incarnation and still asks to drain.
    pub actor_requests: bool,
    /// The layout as just read.
    pub layout: &'a ClusterLayout,
    /// Its history.
    pub history: &'a LayoutHistory,
    /// Health as just read.
    pub health: Option<&'a ClusterHealth>,
    /// IDs Garage reports up.
    pub up: &'a [NodeId],
    /// `spec.replication.consistencyMode` is `consistent`.
    pub consistent: bool,
    /// Garage `replication_factor`.
    pub replication_factor: u32,
    /// Garage processes the operator cannot verify exist (external nodes, federation) and
    /// the policy is `Block`.
    pub unverified_peers: Option<String>,
    /// Such processes exist and the policy is `AssumeConsistent`: the proof then also waits
    /// for an empty resync queue.
    pub requires_empty_queue: bool,
    /// Proof reads, when the role is absent.
    pub proof: Option<&'a ProofObservation>,
    /// Now.
    pub now: Timestamp,
    /// How long nothing may change before the proof completes, as configured; never less
    /// than [`quiet_floor`].
    pub quiet: Duration,
    /// Garage's RPC timeout: a block a node learns it needs is checked after twice this.
    pub rpc_timeout: Duration,
    /// A new transaction ID, used only when intent is recorded.
    pub new_transaction_id: &'a str,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Nothing recorded, nothing requested.
    Idle,
    /// Not now; the condition says why. Nothing is written.
    Wait {
        /// Condition reason.
        reason: &'static str,
        /// Sentence for the condition.
        message: String,
    },
    /// Write this record (intent, or evidence of the proof) and nothing else.
    Record(StorageDrainStatus),
    /// Remove the role of `id` in layout version `version` (the record already names it).
    RemoveRole {
        /// Node ID.
        id: NodeId,
        /// The version to apply.
        version: u64,
    },
    /// Replace the role of the gateway identity `remove` (the record already names it) by
    /// `add`, in one layout version `version`.
    SwapRole {
        /// The old identity.
        remove: NodeId,
        /// The new identity's capacity-less role.
        add: garage_api_types::RoleChange,
        /// The version to apply.
        version: u64,
    },
    /// Advance, at layout version `version`, the acknowledgement of the retired gateway
    /// identities that will never run again (Garage's `skip-dead-nodes` without
    /// `allowMissingData`, taken only while they are the only nodes down).
    SkipRetiredAcks {
        /// The current layout version.
        version: u64,
    },
    /// Write the record, then launch a Blocks repair on each of `nodes`.
    LaunchRepairs {
        /// The record to write first.
        record: StorageDrainStatus,
        /// Nodes to launch a repair on.
        nodes: Vec<NodeId>,
    },
    /// Drop the record: cancelled before any role was removed, or completed and released.
    Clear,
}

/// The next step of the drain transaction.
pub fn step(o: &Observed<'_>) -> Step {
    match contract::phase(o.record) {
        Phase::Idle => start(o),
        Phase::Active => match o.record {
            Some(record) => advance(o, record),
            None => Step::Idle,
        },
        Phase::Completed if !o.actor_requests => Step::Clear,
        Phase::Completed => Step::Wait {
            reason: reason::REASON_COMPLETED,
            message: "the drain proof is complete; the drained GarageNode may be deleted".into(),
        },
    }
}

fn start(o: &Observed<'_>) -> Step {
    let Some(c) = o.candidates.first() else {
        return Step::Idle;
    };
    if c.gateway {
        return gateway::start(o, c);
    }
    if let Some(ack) = &c.lost.acknowledged {
        return lost::start(o, c, ack);
    }
    let (Some(id), Some(_)) = (&c.node_id, &c.pod_uid) else {
        return wait(
            reason::REASON_WAITING_FOR_DRAIN_SAFETY,
            format!(
                "{} asks to be drained but its Garage identity is not proven from a running pod yet; nothing is removed",
                c.name
            ),
        );
    };
    if let Some(why) = unsafe_to_remove(o, id) {
        return why;
    }
    Step::Record(intent(o, c, id, false))
}

/// The intent record naming `c` and its identity `id`; `lost` marks the source unavailable
/// (destination-only proof, no pod to track).
fn intent(o: &Observed<'_>, c: &Candidate, id: &NodeId, lost: bool) -> StorageDrainStatus {
    let ids = vec![id.to_string()];
    let unavailable = if lost { ids.clone() } else { Vec::new() };
    StorageDrainStatus {
        actor: Some(actor(c)),
        transaction_id: Some(o.new_transaction_id.to_owned()),
        started_at: Some(Time(o.now)),
        target_hash: Some(contract::target_hash(&ids, &ids, &unavailable)),
        role_removal_node_ids: Some(ids.clone()),
        removed_storage_node_ids: Some(ids),
        unavailable_source_node_ids: lost.then_some(unavailable),
        managed_pod_uids: c
            .pod_uid
            .clone()
            .filter(|_| !lost)
            .map(|uid| BTreeMap::from([(id.to_string(), uid)])),
        layout_version: i64::try_from(o.layout.version).ok(),
        // The schema requires the counters from the start.
        error_count: Some(0),
        queue_length: Some(0),
        requires_empty_queue: Some(o.requires_empty_queue),
        ..StorageDrainStatus::default()
    }
}

/// The record's actor: the candidate's GarageNode, this incarnation.
pub(crate) fn actor(c: &Candidate) -> DrainActor {
    DrainActor {
        api_version: Some("garage.rajsingh.info/v1beta1".into()),
        kind: Some(DrainActorKind::GarageNode),
        namespace: Some(c.namespace.clone()),
        name: Some(c.name.clone()),
        uid: Some(c.uid.clone()),
    }
}

/// Checks that hold for every removal, of a live or a lost source: the consistency mode, the
/// peers the operator cannot verify, and the replication factor.
pub(crate) fn refused_by_policy(o: &Observed<'_>, id: &NodeId) -> Option<Step> {
    if !o.consistent {
        return Some(wait(
            reason::REASON_UNSUPPORTED_CONSISTENCY_MODE,
            "a prepared drain needs spec.replication.consistencyMode: consistent; Garage drops old layout versions before data is safe in the other modes".into(),
        ));
    }
    if let Some(why) = &o.unverified_peers {
        return Some(wait(reason::REASON_UNVERIFIED_PEERS_BLOCKED, why.clone()));
    }
    let storage_after = o
        .layout
        .roles
        .iter()
        .filter(|r| r.capacity.is_some_and(|c| c > 0) && r.id != *id)
        .count();
    let rf = usize::try_from(o.replication_factor).unwrap_or(usize::MAX);
    if storage_after < rf.max(1) {
        return Some(wait(
            reason::REASON_REPLICATION_UNSAFE,
            format!(
                "removing node {} would leave {storage_after} storage role(s) for replication factor {}; add a storage member first, the drain resumes by itself once it is in the layout",
                id.short(),
                o.replication_factor
            ),
        ));
    }
    None
}

/// Why removing the role of `id` now would be unsafe, as a step that waits.
pub(crate) fn unsafe_to_remove(o: &Observed<'_>, id: &NodeId) -> Option<Step> {
    if let Some(why) = refused_by_policy(o, id) {
        return Some(why);
    }
    if !fully_healthy(o.health) {
        return Some(wait(
            reason::REASON_WAITING_FOR_CLUSTER_HEALTH,
            "a prepared drain starts only while every storage node is up and every partition is fully replicated".into(),
        ));
    }
    if !o.history.is_settled() {
        return Some(wait(
            reason::REASON_WAITING_FOR_LAYOUT_SYNC,
            "an older layout version is still being synced; the drain waits for the history to settle".into(),
        ));
    }
    // The removal of exactly this role, staged by a pass that stopped before applying it, is
    // ours to apply; anything else staged is someone else's.
    let ours = |c: &garage_api_types::StagedRoleChange| matches!(c, garage_api_types::StagedRoleChange::Remove { id: staged, .. } if staged == id);
    if !o.layout.staged_role_changes.iter().all(ours)
        || o.layout
            .staged_parameters
            .as_ref()
            .is_some_and(|p| *p != o.layout.parameters)
    {
        return Some(wait(
            reason::REASON_FOREIGN_STAGED_CHANGES,
            "Garage's staging area holds changes; the drain does not apply over them".into(),
        ));
    }
    None
}

fn advance(o: &Observed<'_>, record: &StorageDrainStatus) -> Step {
    if !contract::hash_consistent(record) {
        return wait(
            reason::REASON_NODE_DRAIN_BLOCKED,
            "status.storageDrain.targetHash does not match its node sets; no role is removed until the record is repaired".into(),
        );
    }
    if contract::role_only(record) {
        return gateway::advance(o, record);
    }
    let targets: Vec<NodeId> = record
        .removed_storage_node_ids
        .iter()
        .flatten()
        .filter_map(|i| i.parse().ok())
        .collect();
    let present: Vec<&NodeId> = targets
        .iter()
        .filter(|t| o.layout.role(t).is_some())
        .collect();
    let lost = lost::unavailable(record);
    if !lost.is_empty() {
        if !present.is_empty() && !o.actor_requests {
            // The operator never removes a lost role itself: nothing was removed by it.
            return Step::Clear;
        }
        if let Some(why) = lost::hold(o, record, &lost, &present) {
            return why;
        }
        return prove(o, record, &targets);
    }
    if let Some(id) = present.first() {
        if !o.actor_requests {
            // Nothing was removed yet: the cancellation is safe.
            return Step::Clear;
        }
        if let Some(why) = unsafe_to_remove(o, id) {
            return why;
        }
        // The garbage-collection gate counts from the removal, so an intent recorded a while
        // ago (the removal waited for health or a restart) is restamped before the removal.
        let stale = record
            .started_at
            .as_ref()
            .is_none_or(|t| o.now.duration_since(t.0).unsigned_abs() > RESTAMP_AFTER);
        if stale {
            let mut next = record.clone();
            next.started_at = Some(Time(o.now));
            return Step::Record(next);
        }
        return Step::RemoveRole {
            id: (*id).clone(),
            version: o.layout.version + 1,
        };
    }
    prove(o, record, &targets)
}

/// The block-resync barrier after the removal was committed.
fn prove(o: &Observed<'_>, record: &StorageDrainStatus, targets: &[NodeId]) -> Step {
    let lost = lost::unavailable(record);
    if !o.history.is_settled() {
        if !lost.is_empty() {
            return lost::unsettled(o, &lost);
        }
        return wait(
            reason::REASON_DRAINING,
            "the role is removed; Garage is migrating data off it (layout history not settled)"
                .into(),
        );
    }
    let Some(proof) = o.proof else {
        return wait(reason::REASON_DRAINING, "reading repair workers".into());
    };
    let verify = match verification_set(o, proof, &lost, targets) {
        ControlFlow::Continue(verify) => verify,
        ControlFlow::Break(step) => return step,
    };
    if let Some(step) = fresh_snapshot(o, record, proof, &verify) {
        return step;
    }
    let (next, launch, waiting) = match adopt_repairs(record, proof, &verify) {
        ControlFlow::Continue(found) => found,
        ControlFlow::Break(step) => return step,
    };
    if next.repair_worker_ids != record.repair_worker_ids {
        return Step::Record(next);
    }
    if !launch.is_empty() {
        return Step::LaunchRepairs {
            record: next,
            nodes: launch,
        };
    }
    if !waiting.is_empty() {
        return wait(
            reason::REASON_DRAINING,
            format!("Blocks repairs running on {}", waiting.join(", ")),
        );
    }
    quiet_barrier(o, record, next, proof, &verify, &lost)
}

/// The nodes whose repairs prove the drain: every positive-capacity role, plus the source
/// while it runs (a lost source cannot run a repair). Each must have answered.
fn verification_set(
    o: &Observed<'_>,
    proof: &ProofObservation,
    lost: &[NodeId],
    targets: &[NodeId],
) -> ControlFlow<Step, Vec<NodeId>> {
    let mut verify: Vec<NodeId> = o
        .layout
        .roles
        .iter()
        .filter(|r| r.capacity.is_some_and(|c| c > 0))
        .map(|r| r.id.clone())
        .collect();
    // A lost source cannot run a repair: the proof covers the destinations only.
    for t in targets.iter().filter(|t| !lost.contains(t)) {
        if o.up.contains(t) {
            verify.push(t.clone());
        } else {
            return ControlFlow::Break(wait(
                reason::REASON_DRAINING,
                format!(
                    "the drained node {} is not up; its pod must keep running until the proof completes",
                    t.short()
                ),
            ));
        }
    }
    verify.sort();
    verify.dedup();
    // Only a lost source's proof can get here with nothing to verify: every storage role
    // is gone. A proof over no node would complete by default while no copy of the data was
    // checked anywhere.
    if verify.is_empty() {
        return ControlFlow::Break(wait(
            reason::REASON_NODE_DRAIN_BLOCKED,
            "no storage role is left in the layout, so no copy of the lost node's data can be verified; add a storage member, the proof resumes once it holds a role".into(),
        ));
    }
    for n in &verify {
        if !proof.workers.contains_key(n) || !proof.block_errors.contains_key(n) {
            return ControlFlow::Break(wait(
                reason::REASON_DRAINING,
                format!(
                    "node {} did not answer for its workers and block errors",
                    n.short()
                ),
            ));
        }
    }
    ControlFlow::Continue(verify)
}

/// A new snapshot when the verified set or the layout changed: every node's newest worker
/// before the repairs this proof launches.
fn fresh_snapshot(
    o: &Observed<'_>,
    record: &StorageDrainStatus,
    proof: &ProofObservation,
    verify: &[NodeId],
) -> Option<Step> {
    let verify_strings: Vec<String> = verify.iter().map(ToString::to_string).collect();
    let snapshot_current = record.verification_node_ids.as_ref() == Some(&verify_strings)
        && record.layout_version == i64::try_from(o.layout.version).ok()
        && record.repair_baselines.is_some();
    if snapshot_current {
        return None;
    }
    let mut next = record.clone();
    next.verification_node_ids = Some(verify_strings);
    next.layout_version = i64::try_from(o.layout.version).ok();
    next.repair_baselines = Some(
        verify
            .iter()
            .map(|n| (n.to_string(), max_worker_id(&proof.workers[n])))
            .collect(),
    );
    next.repair_worker_ids = Some(BTreeMap::new());
    next.quiet_since = None;
    next.completed_at = None;
    Some(Step::LaunchRepairs {
        record: next,
        nodes: verify.to_vec(),
    })
}

/// The repair each verified node runs for this proof: adopted into the record once seen,
/// launched where none is, waited for while it runs. A node that restarted, lost its worker
/// or had a repair fail starts a new snapshot.
fn adopt_repairs(
    record: &StorageDrainStatus,
    proof: &ProofObservation,
    verify: &[NodeId],
) -> ControlFlow<Step, (StorageDrainStatus, Vec<NodeId>, Vec<String>)> {
    let baselines = record.repair_baselines.clone().unwrap_or_default();
    let adopted = record.repair_worker_ids.clone().unwrap_or_default();
    let mut next = record.clone();
    let mut launch = Vec::new();
    let mut waiting = Vec::new();
    for n in verify {
        let workers = &proof.workers[n];
        let baseline = baselines.get(n.as_str()).copied().unwrap_or(0);
        match adopted.get(n.as_str()) {
            None => {
                if max_worker_id(workers) < baseline {
                    // The node restarted: its worker IDs began again. Take a new snapshot.
                    next.repair_baselines = None;
                    return ControlFlow::Break(Step::Record(next));
                }
                let newest = workers
                    .iter()
                    .filter(|w| {
                        w.name == REPAIR_WORKER && i64::try_from(w.id).unwrap_or(0) > baseline
                    })
                    .map(|w| w.id)
                    .max();
                match newest {
                    Some(id) => {
                        next.repair_worker_ids
                            .get_or_insert_with(BTreeMap::new)
                            .insert(n.to_string(), i64::try_from(id).unwrap_or(i64::MAX));
                    }
                    None => launch.push(n.clone()),
                }
            }
            Some(id) => {
                let worker = workers
                    .iter()
                    .find(|w| i64::try_from(w.id).ok() == Some(*id));
                match worker {
                    None => {
                        next.repair_baselines = None;
                        return ControlFlow::Break(Step::Record(next));
                    }
                    Some(w) if w.state != garage_api_types::WorkerState::Done => {
                        waiting.push(format!("{} ({:?})", n.short(), w.state))
                    }
                    Some(w) if w.errors > 0 => {
                        // A repair that hit errors proves nothing; a clean one is relaunched.
                        next.repair_baselines = None;
                        return ControlFlow::Break(Step::Record(next));
                    }
                    Some(_) => {}
                }
            }
        }
    }
    ControlFlow::Continue((next, launch, waiting))
}

/// Every repair is done: the resync queues and block errors must be empty and stay so for
/// the quiet window, and with a live source until Garage has handed over what only it holds.
fn quiet_barrier(
    o: &Observed<'_>,
    record: &StorageDrainStatus,
    mut next: StorageDrainStatus,
    proof: &ProofObservation,
    verify: &[NodeId],
    lost: &[NodeId],
) -> Step {
    let queue: u64 = verify
        .iter()
        .flat_map(|n| proof.workers[n].iter())
        .filter(|w| w.name.starts_with(RESYNC_WORKER))
        .map(|w| w.queue_length.unwrap_or(0))
        .sum();
    let errors: u64 = verify
        .iter()
        .map(|n| {
            let persistent: u64 = proof.workers[n]
                .iter()
                .filter(|w| w.name.starts_with(RESYNC_WORKER))
                .map(|w| w.persistent_errors.unwrap_or(0))
                .sum();
            persistent + u64::try_from(proof.block_errors[n]).unwrap_or(u64::MAX)
        })
        .sum();
    // Garage's resync queue also holds deletions delayed by ten minutes, so its length alone
    // proves nothing; what must hold is that no enabled resync worker is working.
    let busy: Vec<String> = verify
        .iter()
        .filter(|n| {
            proof.workers[*n].iter().any(|w| {
                w.name.starts_with(RESYNC_WORKER)
                    && !w.freeform.iter().any(|f| f.contains("disabled"))
                    && w.state != garage_api_types::WorkerState::Idle
            })
        })
        .map(|n| n.short().to_owned())
        .collect();
    let queue_required_empty = record.requires_empty_queue == Some(true);
    next.queue_length = i64::try_from(queue).ok();
    next.error_count = i64::try_from(errors).ok();
    if errors > 0 || !busy.is_empty() || queue_required_empty && queue > 0 {
        next.quiet_since = None;
        if next != *record {
            return Step::Record(next);
        }
        return wait(
            reason::REASON_DRAINING,
            format!(
                "{errors} block error(s), {queue} block(s) queued for resync, resync busy on [{}]; waiting for them to clear",
                busy.join(", ")
            ),
        );
    }
    let Some(since) = record.quiet_since.as_ref().map(|t| t.0) else {
        next.quiet_since = Some(Time(o.now));
        return Step::Record(next);
    };
    let quiet = o.quiet.max(quiet_floor(o.rpc_timeout));
    let elapsed = o.now.duration_since(since).unsigned_abs();
    if elapsed < quiet {
        if next != *record {
            return Step::Record(next);
        }
        return wait(
            reason::REASON_DRAINING,
            format!(
                "repairs done and queues empty; quiet since {}, proven if still quiet at {} ({}s window)",
                whole_seconds(since),
                whole_seconds(since + quiet),
                quiet.as_secs()
            ),
        );
    }
    if lost.is_empty() {
        let removed = record.started_at.as_ref().map_or(o.now, |t| t.0);
        let since_removal = o.now.duration_since(removed).unsigned_abs();
        if since_removal < GC_GATE {
            if next != *record {
                return Step::Record(next);
            }
            return wait(
                reason::REASON_DRAINING,
                format!(
                    "repairs done and quiet; waiting until {}, when Garage has handed over the blocks only the source holds ({}s after the role was removed at {})",
                    whole_seconds(removed + GC_GATE),
                    GC_GATE.as_secs(),
                    whole_seconds(removed)
                ),
            );
        }
    }
    next.completed_at = Some(Time(o.now));
    Step::Record(next)
}

/// How long Garage waits before it deletes a block no longer referenced on a node, and with
/// it before a removed source pushes a block that only it holds to the nodes that need it
/// (`BLOCK_GC_DELAY` plus the 10 s Garage adds).
pub const GARAGE_BLOCK_GC_DELAY: Duration = Duration::from_secs(610);
/// Slack on top of Garage's own delays.
pub const QUIET_MARGIN: Duration = Duration::from_secs(30);
/// With a live source, the proof completes no sooner than this after the role removal: by
/// then the source has handed over every block only it held.
pub const GC_GATE: Duration =
    Duration::from_secs(GARAGE_BLOCK_GC_DELAY.as_secs() + QUIET_MARGIN.as_secs());
/// An intent older than this is restamped right before the role removal.
const RESTAMP_AFTER: Duration = Duration::from_secs(30);

/// The shortest quiet window that proves anything: a node that learns it needs a block checks
/// for it only after twice the RPC timeout, so the window must contain that moment. No
/// configuration shortens it. (A live source's own hand-over is covered by [`GC_GATE`].)
pub fn quiet_floor(rpc_timeout: Duration) -> Duration {
    2 * rpc_timeout + QUIET_MARGIN
}

fn max_worker_id(workers: &[WorkerInfo]) -> i64 {
    workers
        .iter()
        .map(|w| i64::try_from(w.id).unwrap_or(i64::MAX))
        .max()
        .unwrap_or(0)
}

/// Every storage node up and every partition fully replicated.
pub fn fully_healthy(health: Option<&ClusterHealth>) -> bool {
    health.is_some_and(|h| {
        h.status == HealthStatus::Healthy
            && h.storage_nodes > 0
            && h.storage_nodes_up == h.storage_nodes
            && h.partitions > 0
            && h.partitions_quorum == h.partitions
            && h.partitions_all_ok == h.partitions
    })
}

/// A moment as a waiting message names it: to the second, so that the message stays the same
/// from one pass to the next. A message that counted the seconds would change the status on
/// every pass, and every status write wakes the controllers for another pass.
fn whole_seconds(t: Timestamp) -> String {
    t.round(k8s_openapi::jiff::Unit::Second)
        .map_or_else(|_| t.to_string(), |t| t.to_string())
}

pub(crate) fn wait(reason: &'static str, message: String) -> Step {
    Step::Wait { reason, message }
}

mod gateway;
mod lost;
#[cfg(test)]
mod tests;
