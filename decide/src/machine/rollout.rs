//! The storage rollout: identity-bearing pods (StatefulSet and pool DaemonSet alike run
//! `OnDelete`) are replaced by the cluster, one at a time across the whole GarageCluster,
//! recorded in `status.storageRollout` before the pod is deleted:
//!
//! 1. every member runs a Ready pod whose identity its GarageNode proved from that exact pod,
//!    Garage sees every member up with its committed role, every storage node and partition
//!    is healthy and the layout history has no migration in progress: the first outdated
//!    member (pools first, then GarageNodes, each by name) is recorded as the actor, with the
//!    UID of the pod to replace and the node ID it must come back with;
//! 2. that exact pod is deleted (UID precondition); its workload creates the replacement;
//! 3. the record clears only when the replacement (another UID, current revision) is Ready,
//!    its identity is rediscovered from it and equals the recorded one, Garage sees it up in
//!    its role, and the cluster is healthy and settled again. Then the next member may go.
//!
//! A member whose claim grew and whose file system grows only when the claim is mounted again
//! (`FileSystemResizePending`, raised after its pod started) is replaced the same way, though
//! its revision is current; a pod started after that is never replaced for it again.
//!
//! The claims the old pod mounts (those the operator generated) are recorded with their UIDs.
//! A recorded claim that is gone, being deleted or recreated under another UID stops the
//! transaction where it stands: the old pod is not deleted, and a replacement on other claims
//! never counts, whatever it reports (`ClaimReplaced`).
//!
//! A pod that is missing, terminating or not Ready while no record exists (someone deleted it
//! by hand) counts as the one replacement in flight: nothing else is deleted until it is back.
//! [`step`] is pure; the cluster controller observes, calls it and carries the step out.

use shared_types::conditions::{cluster as cc, reason};
use shared_types::garage_cluster::common::{PvcIdentity, StorageRolloutStatus};

use crate::conditions::Desired;
use garage_api_types::NodeId;

/// One identity-bearing member of the cluster and the pod that runs it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// GarageNode name.
    pub name: String,
    /// GarageNode UID.
    pub uid: String,
    /// GarageNode generation.
    pub generation: Option<i64>,
    /// Pool and Kubernetes Node, for a pool member.
    pub pool: Option<(String, String)>,
    /// The identity its GarageNode recorded.
    pub node_id: Option<NodeId>,
    /// Its GarageNode is suspended: its pod is not replaced (nor its recorded replacement
    /// advanced) until the suspension is lifted.
    pub suspended: bool,
    /// UID of the workload (StatefulSet or pool DaemonSet) that owns its pods.
    pub workload_uid: Option<String>,
    /// The revision its workload wants pods to run; `None` while the workload controller has
    /// not observed its latest spec (the revision is not known yet).
    pub desired_revision: Option<String>,
    /// Its pod, when one exists.
    pub pod: Option<PodState>,
    /// Garage sees its identity up.
    pub up: bool,
    /// Its identity holds a committed role in the layout.
    pub in_layout: bool,
    /// A claim its pod mounts grew, and the file system finishes growing only when a pod
    /// mounting it starts (`FileSystemResizePending` since after the pod started): the pod is
    /// replaced like an outdated one.
    pub resize_pending: bool,
}

/// A member's pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodState {
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// The revision it runs.
    pub revision: Option<String>,
    /// Ready condition True.
    pub ready: bool,
    /// Being deleted.
    pub terminating: bool,
    /// The member's GarageNode proved its identity from this exact pod UID.
    pub identity_proven: bool,
    /// UID of the workload controller that owns it.
    pub owner_uid: Option<String>,
    /// Names of the claims it mounts.
    pub claims: Vec<String>,
}

/// An operator-generated claim as the pass read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimState {
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
    /// Being deleted.
    pub terminating: bool,
}

/// At most this many replaced workload incarnations are remembered in one transaction; one
/// more fails closed: an entry is never evicted, because a late pod of
/// an evicted incarnation could then pass as the replacement.
pub const MAX_RETIRED_WORKLOADS: usize = 32;

/// True when recording `current` as the actor's workload would need one more retired
/// incarnation than [`MAX_RETIRED_WORKLOADS`] allows. The node controller asks this before
/// it creates a workload for the recorded actor.
pub fn retired_full(record: &StorageRolloutStatus) -> bool {
    record.retired_workload_uids.as_ref().map_or(0, Vec::len) >= MAX_RETIRED_WORKLOADS
}

/// Everything [`step`] decides from.
#[derive(Debug, Clone)]
pub struct Observed<'a> {
    /// The recorded transaction.
    pub record: Option<&'a StorageRolloutStatus>,
    /// Every identity-bearing member.
    pub members: &'a [Member],
    /// Every storage node and partition healthy.
    pub healthy: bool,
    /// The layout history has no version still migrating data.
    pub settled: bool,
    /// Garage could be read this pass.
    pub garage_read: bool,
    /// A drain transaction is recorded: it owns every pod until it ends.
    pub drain_active: bool,
    /// The cluster's generation.
    pub generation: Option<i64>,
    /// Content hash of the Garage configuration revision pods must run.
    pub config_hash: String,
    /// The operator-generated claims of the cluster's members.
    pub claims: &'a [ClaimState],
    /// The value of `garage.rajsingh.info/recover-storage-rollout` on the cluster: a new value
    /// asks for the recorded replacement to be made again ([`recovery`]).
    pub recovery_request: Option<&'a str>,
}

/// What the rollout does this pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Every member's pod runs its workload's current revision.
    Converged,
    /// Nothing to do yet; the condition says why.
    Wait {
        /// `StorageRolloutReady` reason.
        reason: &'static str,
        /// Sentence for the condition.
        message: String,
    },
    /// Write the record (before anything is deleted).
    Record(Box<StorageRolloutStatus>),
    /// Delete exactly this pod (the recorded actor's old pod).
    DeletePod {
        /// Pod name.
        name: String,
        /// Its UID, the delete's precondition.
        uid: String,
    },
    /// The replacement is proven: remove the record.
    Clear,
}

/// The next step.
pub fn step(o: &Observed<'_>) -> Step {
    match o.record {
        Some(record) => suspended_actor(o, record).unwrap_or_else(|| advance(o, record)),
        None => start(o),
    }
}

/// A recorded replacement whose member was suspended since waits, record kept, pod untouched.
fn suspended_actor(o: &Observed<'_>, record: &StorageRolloutStatus) -> Option<Step> {
    let actor = o
        .members
        .iter()
        .find(|m| Some(&m.uid) == record.garage_node_uid.as_ref())
        .filter(|m| m.suspended)?;
    Some(wait(
        reason::REASON_STORAGE_ROLLOUT_WAITING,
        format!(
            "the replacement of the pod of {} is recorded and goes on once its suspension is lifted",
            actor.name
        ),
    ))
}

fn start(o: &Observed<'_>) -> Step {
    // A suspended member's workload is not re-rendered either, so its revision may be
    // unknown as well as behind: it is left out of both and named when only it is left.
    let outdated: Vec<&Member> = o
        .members
        .iter()
        .filter(|m| !m.suspended && outdated(m))
        .collect();
    let unknown: Vec<&str> = o
        .members
        .iter()
        .filter(|m| !m.suspended && m.desired_revision.is_none())
        .map(|m| m.name.as_str())
        .collect();
    if outdated.is_empty() && unknown.is_empty() {
        let held: Vec<&str> = o
            .members
            .iter()
            .filter(|m| m.suspended && (m.desired_revision.is_none() || self::outdated(m)))
            .map(|m| m.name.as_str())
            .collect();
        if held.is_empty() {
            return Step::Converged;
        }
        return wait(
            reason::REASON_STORAGE_ROLLOUT_WAITING,
            format!(
                "the pods of {} are not replaced while suspended; the rollout finishes once the suspension is lifted",
                list(&held)
            ),
        );
    }
    if !unknown.is_empty() {
        return wait(
            reason::REASON_STORAGE_ROLLOUT_WAITING,
            format!(
                "the workloads of {} have not observed their latest template yet",
                list(&unknown)
            ),
        );
    }
    let behind = behind(&outdated);
    if o.drain_active {
        return wait(
            reason::REASON_STORAGE_ROLLOUT_WAITING,
            format!("{behind}; a drain is in progress and is finished first"),
        );
    }
    if let Some(why) = blocked(o, None) {
        return wait(
            reason::REASON_STORAGE_ROLLOUT_WAITING,
            format!("{behind}; the next pod is replaced once {why}"),
        );
    }
    let mut order: Vec<&Member> = outdated;
    order.sort_by_key(|m| (m.pool.is_none(), m.name.clone()));
    let Some(actor) = order.first() else {
        return Step::Converged;
    };
    let (Some(pod), Some(id), Some(workload)) = (&actor.pod, &actor.node_id, &actor.workload_uid)
    else {
        return wait(
            reason::REASON_STORAGE_ROLLOUT_WAITING,
            format!(
                "{behind}; the identity and workload of {} are not known yet",
                actor.name
            ),
        );
    };
    let mounted: Vec<&ClaimState> = pod
        .claims
        .iter()
        .filter_map(|n| o.claims.iter().find(|c| &c.name == n))
        .collect();
    if let Some(c) = mounted.iter().find(|c| c.terminating) {
        return wait(
            reason::REASON_CLAIM_REPLACED,
            format!(
                "{behind}; claim {} of {} is being deleted, so its pod is not replaced: the replacement could not start on it. Drain the member (annotate it garage.rajsingh.info/drain=true) to move its data; its claims are released after the proof",
                c.name, actor.name
            ),
        );
    }
    Step::Record(Box::new(StorageRolloutStatus {
        persistent_volume_claims: actor.pool.is_none().then(|| {
            mounted
                .iter()
                .map(|c| PvcIdentity {
                    name: Some(c.name.clone()),
                    uid: Some(c.uid.clone()),
                })
                .collect()
        }),
        cluster_generation: o.generation,
        desired_config_hash: Some(o.config_hash.clone()),
        desired_pod_spec_hash: actor.desired_revision.clone(),
        garage_node_generation: actor.generation,
        garage_node_id: Some(id.to_string()),
        garage_node_name: Some(actor.name.clone()),
        garage_node_uid: Some(actor.uid.clone()),
        kubernetes_node_name: actor.pool.as_ref().map(|(_, n)| n.clone()),
        node_local_pool_name: actor.pool.as_ref().map(|(p, _)| p.clone()),
        previous_pod_uid: Some(pod.uid.clone()),
        workload_uid: Some(workload.clone()),
        // A request made before this transaction is not one for it: only a later value is.
        recovery_request: o
            .recovery_request
            .filter(|n| !n.is_empty())
            .map(str::to_owned),
        ..Default::default()
    }))
}

fn advance(o: &Observed<'_>, record: &StorageRolloutStatus) -> Step {
    let Some(actor) = o
        .members
        .iter()
        .find(|m| Some(&m.uid) == record.garage_node_uid.as_ref())
    else {
        // The actor left (drained and deleted, or replaced by another object): nothing of
        // this transaction remains to finish.
        return Step::Clear;
    };
    if let Some(why) = claim_replaced(o, record) {
        return wait(
            reason::REASON_CLAIM_REPLACED,
            format!(
                "the rollout stops at {}: {why}. No pod is deleted and no layout change is made. Bring the claim back with its volume, or recover the member as lost (annotate it garage.rajsingh.info/drain=true and garage.rajsingh.info/acknowledge-lost-source=<its node ID>); the rollout goes on once the member has left",
                actor.name
            ),
        );
    }
    let previous = record.previous_pod_uid.as_deref();
    // The workload was deleted and created again during the transaction: the old
    // incarnation is remembered, so that none of its late pods passes as the replacement.
    if let (Some(current), Some(recorded)) = (&actor.workload_uid, &record.workload_uid)
        && current != recorded
    {
        let mut retired = record.retired_workload_uids.clone().unwrap_or_default();
        if !retired.contains(recorded) {
            retired.push(recorded.clone());
        }
        if retired.len() > MAX_RETIRED_WORKLOADS {
            return wait(
                reason::REASON_RETIRED_WORKLOAD_LIMIT,
                format!(
                    "the workload of {} was replaced more than {MAX_RETIRED_WORKLOADS} times during one rollout; nothing more is replaced until someone inspects it and clears status.storageRollout",
                    actor.name
                ),
            );
        }
        return Step::Record(Box::new(StorageRolloutStatus {
            workload_uid: Some(current.clone()),
            retired_workload_uids: Some(retired),
            ..record.clone()
        }));
    }
    let retired = record.retired_workload_uids.as_deref().unwrap_or_default();
    if let Some(pod) = &actor.pod
        && pod.owner_uid.as_ref().is_some_and(|o| retired.contains(o))
        && Some(pod.uid.as_str()) != previous
    {
        return rolling(format!(
            "replacing the pod of {}: pod {} belongs to a replaced incarnation of its workload and is never taken as the replacement; waiting for it to go",
            actor.name, pod.name
        ));
    }
    if let Some(step) = recovery(o, record, actor) {
        return step;
    }
    let label = format!(
        "replacing pod {} of {}",
        actor.pod.as_ref().map_or("", |p| p.name.as_str()),
        actor.name
    );
    match &actor.pod {
        Some(pod) if Some(pod.uid.as_str()) == previous && !pod.terminating => {
            return Step::DeletePod {
                name: pod.name.clone(),
                uid: pod.uid.clone(),
            };
        }
        Some(pod) if Some(pod.uid.as_str()) == previous => {
            return rolling(format!("{label}: the old pod is terminating"));
        }
        None => {
            return rolling(format!(
                "{label}: waiting for its workload to create the replacement"
            ));
        }
        // The workload's revision moved on after the replacement was made (the change was
        // changed again, or reverted): a replacement that is not Ready is the member already
        // down and is replaced again; a Ready one ends this transaction, and the member is
        // picked again, through every gate, as any outdated member.
        Some(pod)
            if actor.desired_revision.is_some()
                && pod.revision != actor.desired_revision
                && !pod.terminating =>
        {
            if pod.ready {
                return Step::Clear;
            }
            return Step::DeletePod {
                name: pod.name.clone(),
                uid: pod.uid.clone(),
            };
        }
        Some(pod) if pod.terminating => {
            return rolling(format!("{label}: the replacement is terminating"));
        }
        Some(_) => {}
    }
    let recorded: Option<NodeId> = record
        .garage_node_id
        .as_deref()
        .and_then(|i| i.parse().ok());
    if let (Some(want), Some(have)) = (&recorded, &actor.node_id)
        && want != have
    {
        // A different identity is never accepted as the replacement; stop here.
        return rolling(format!(
            "{label}: the replacement reports Garage node {} instead of {}; the rollout stops and the GarageNode reports the identity change",
            have.short(),
            want.short()
        ));
    }
    match blocked(o, Some(actor)) {
        Some(why) => rolling(format!("{label}: waiting until {why}")),
        None => Step::Clear,
    }
}

/// `recover-storage-rollout`: a value the record has not seen yet asks for the recorded
/// replacement to be made again. A replacement that is not Ready (the member is down already)
/// is recorded as the one to redo, then deleted, so its workload creates it again; one that is
/// Ready, or none yet, needs nothing and the request is only acknowledged. The old pod, a
/// terminating pod and a Ready one are never deleted here.
fn recovery(o: &Observed<'_>, record: &StorageRolloutStatus, actor: &Member) -> Option<Step> {
    let redo = actor.pod.as_ref().filter(|p| {
        Some(p.uid.as_str()) != record.previous_pod_uid.as_deref() && !p.terminating && !p.ready
    });
    let requested = o
        .recovery_request
        .filter(|n| !n.is_empty() && Some(*n) != record.recovery_request.as_deref());
    let marked = redo.filter(|p| record.recovery_pod_uid.as_deref() == Some(p.uid.as_str()));
    // A replacement is also not Ready when its peers are down (Garage's health needs a quorum
    // it can reach): it is made again only while every other member serves, so a redo never
    // takes down a process that may be holding its partitions.
    let others_down: Vec<&str> = o
        .members
        .iter()
        .filter(|m| m.uid != actor.uid)
        .filter(|m| !m.pod.as_ref().is_some_and(|p| p.ready && !p.terminating))
        .map(|m| m.name.as_str())
        .collect();
    if (redo.is_some() && requested.is_some() || marked.is_some()) && !others_down.is_empty() {
        return Some(rolling(format!(
            "the recover-storage-rollout request for {} waits until the pods of {} are Ready",
            actor.name,
            list(&others_down)
        )));
    }
    if let Some(nonce) = requested {
        return Some(Step::Record(Box::new(StorageRolloutStatus {
            recovery_request: Some(nonce.to_owned()),
            recovery_pod_name: redo.map(|p| p.name.clone()),
            recovery_pod_uid: redo.map(|p| p.uid.clone()),
            ..record.clone()
        })));
    }
    let pod = marked?;
    Some(Step::DeletePod {
        name: pod.name.clone(),
        uid: pod.uid.clone(),
    })
}

/// The Event text of a record written: a recovery request taken up (and whether a pod is made
/// again), or a pod recorded before it is replaced.
pub fn record_note(before: Option<&StorageRolloutStatus>, after: &StorageRolloutStatus) -> String {
    let member = after.garage_node_name.clone().unwrap_or_default();
    let before_request = before.and_then(|b| b.recovery_request.as_deref());
    match (&after.recovery_request, &after.recovery_pod_name) {
        (Some(request), pod) if before.is_some() && before_request != Some(request.as_str()) => {
            match pod {
                Some(pod) => format!(
                    "recover-storage-rollout {request:?}: pod {pod} of {member} is made again"
                ),
                None => format!(
                    "recover-storage-rollout {request:?} recorded: the replacement of {member} is not one to make again"
                ),
            }
        }
        _ => format!("pod of {member} recorded for replacement before it is deleted"),
    }
}

/// What happened to a claim recorded for the actor, or `None` while each is still the one
/// recorded.
fn claim_replaced(o: &Observed<'_>, record: &StorageRolloutStatus) -> Option<String> {
    record.persistent_volume_claims.iter().flatten().find_map(|r| {
        let name = r.name.as_deref().unwrap_or_default();
        match o.claims.iter().find(|c| c.name == name) {
            None => Some(format!("claim {name} is gone")),
            Some(c) if Some(c.uid.as_str()) != r.uid.as_deref() => Some(format!(
                "claim {name} was recreated (UID {} was recorded, {} is there now), so a replacement pod would run on a different disk",
                r.uid.as_deref().unwrap_or_default(),
                c.uid
            )),
            Some(c) if c.terminating => Some(format!("claim {name} is being deleted")),
            Some(_) => None,
        }
    })
}

/// Why the five gates do not hold across the cluster (for `actor`, the replacement must also
/// run the current revision), or `None` when they do.
fn blocked(o: &Observed<'_>, actor: Option<&Member>) -> Option<String> {
    let mut not_ready = Vec::new();
    let mut unproven = Vec::new();
    let mut down = Vec::new();
    for m in o.members {
        match &m.pod {
            Some(p) if p.ready && !p.terminating => {
                if !p.identity_proven || m.node_id.is_none() {
                    unproven.push(m.name.as_str());
                } else if !m.up || !m.in_layout {
                    down.push(m.name.as_str());
                }
            }
            _ => not_ready.push(m.name.as_str()),
        }
    }
    if let Some(a) = actor
        && a.pod.as_ref().and_then(|p| p.revision.as_ref()) != a.desired_revision.as_ref()
    {
        return Some(format!(
            "the replacement of {} runs the current revision",
            a.name
        ));
    }
    if !not_ready.is_empty() {
        return Some(format!("the pods of {} are Ready", list(&not_ready)));
    }
    if !unproven.is_empty() {
        return Some(format!(
            "the identities of {} are rediscovered from their current pods",
            list(&unproven)
        ));
    }
    if !o.garage_read {
        return Some("the Garage Admin API answers".into());
    }
    if !down.is_empty() {
        return Some(format!(
            "Garage sees {} up with their committed roles",
            list(&down)
        ));
    }
    if !o.healthy {
        return Some("every storage node and partition is healthy".into());
    }
    if !o.settled {
        return Some("the layout history has no data migration in progress".into());
    }
    None
}

fn names<'a>(ms: &[&'a Member]) -> Vec<&'a str> {
    ms.iter().map(|m| m.name.as_str()).collect()
}

/// What the outdated members wait for, as the start of a sentence.
fn behind(outdated: &[&Member]) -> String {
    let (resize, older): (Vec<&Member>, Vec<&Member>) = outdated
        .iter()
        .partition(|m| m.resize_pending && !revision_behind(m));
    let mut parts = Vec::new();
    if !older.is_empty() {
        parts.push(format!("{} run an older revision", list(&names(&older))));
    }
    if !resize.is_empty() {
        parts.push(format!(
            "{} need a restart to finish growing a file system",
            list(&names(&resize))
        ));
    }
    parts.join("; ")
}

fn outdated(m: &Member) -> bool {
    revision_behind(m) || (m.resize_pending && m.pod.is_some() && m.desired_revision.is_some())
}

fn revision_behind(m: &Member) -> bool {
    match (
        &m.desired_revision,
        m.pod.as_ref().and_then(|p| p.revision.as_ref()),
    ) {
        (Some(want), Some(have)) => want != have,
        (Some(_), None) => m.pod.is_some(),
        (None, _) => false,
    }
}

fn list(names: &[&str]) -> String {
    let mut v: Vec<&str> = names.to_vec();
    v.sort_unstable();
    if v.len() > 5 {
        format!("{} and {} more", v[..5].join(", "), v.len() - 5)
    } else {
        v.join(", ")
    }
}

fn rolling(message: String) -> Step {
    wait(reason::REASON_STORAGE_ROLLING_OUT, message)
}

fn wait(reason: &'static str, message: String) -> Step {
    Step::Wait { reason, message }
}

/// `StorageRolloutReady` for `step`.
pub fn condition(step: &Step, record: Option<&StorageRolloutStatus>) -> Desired {
    let (status, why, message) = match step {
        Step::Converged => (true, reason::REASON_CONVERGED, String::new()),
        Step::Wait { reason, message } => (false, *reason, message.clone()),
        Step::Record(r) => (
            false,
            reason::REASON_STORAGE_ROLLING_OUT,
            format!(
                "replacing the pod of {}",
                r.garage_node_name.clone().unwrap_or_default()
            ),
        ),
        Step::DeletePod { name, .. } => (
            false,
            reason::REASON_STORAGE_ROLLING_OUT,
            format!(
                "replacing pod {name} of {}",
                record
                    .and_then(|r| r.garage_node_name.clone())
                    .unwrap_or_default()
            ),
        ),
        Step::Clear => (
            false,
            reason::REASON_STORAGE_ROLLING_OUT,
            format!(
                "the replacement of {} is proven; looking for the next pod",
                record
                    .and_then(|r| r.garage_node_name.clone())
                    .unwrap_or_default()
            ),
        ),
    };
    Desired {
        type_: cc::CONDITION_STORAGE_ROLLOUT_READY,
        status,
        reason: why,
        message,
    }
}

#[cfg(test)]
mod tests;
