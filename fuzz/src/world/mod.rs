//! The observed world of one GarageCluster, built from fuzz bytes: its generated, gateway and
//! user-written GarageNodes, their pods and StatefulSets, Garage's layout, history, status and
//! health, the transaction records in the cluster's status and the drain proof's reads.
//!
//! The description ([`World`]) is small enums and flags; [`build`] turns it into the objects
//! the API server and Garage would return, the way the decide table tests build theirs
//! (`decide/src/fixtures.rs`). Every flag is false and every choice is its
//! first variant when the bytes run out, and that world is the converged one: every slot
//! below `replicas` exists with a proven identity, a Ready pod on the current revision and
//! its desired role, Garage sees everyone up and healthy, nothing is recorded.

use arbitrary::Arbitrary;
use k8s_openapi::jiff::Timestamp;
use reconciler::garage::NodeId;

mod build;

pub use build::{Built, Member, Refused, bare, build, proof, worker};

/// Auto slots the world describes (ordinals 0 to 5).
pub const SLOTS: usize = 6;
/// Most user-written GarageNodes.
pub const MAX_USERS: usize = 3;
/// Generated gateway slots the world describes (ordinals 0 to 2).
pub const GATEWAY_SLOTS: usize = 3;
/// The instant every world's clock counts from.
const EPOCH: i64 = 1_700_000_000;

/// The 64-hex node ID number `n`.
pub fn id(n: u8) -> NodeId {
    format!("{n:02x}{}", "0".repeat(62))
        .parse()
        .expect("64 hex digits")
}

/// The instant `seconds` after the world's epoch.
pub fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(EPOCH.saturating_add(seconds)).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// How a member's identity is recorded on its GarageNode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Identity {
    /// Its own ID, proven from its current pod.
    Known,
    /// Not discovered yet.
    Unknown,
    /// Another member's ID (a copied metadata directory).
    SameAs(u8),
    /// Its own ID, read from an older pod (not proven now).
    Stale,
    /// A value that is not a node ID.
    Garbage,
}

/// The member's pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum PodShape {
    /// Running and Ready.
    Running,
    /// No pod.
    Missing,
    /// Running, not Ready.
    NotReady,
    /// Being deleted.
    Terminating,
    /// Running without an IP yet.
    NoIp,
    /// Not scheduled yet.
    Pending,
}

/// The member's StatefulSet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum StsShape {
    /// Rendered from the current configuration and observed.
    Current,
    /// None.
    Missing,
    /// Its controller has not observed the latest template.
    NotObserved,
    /// Rendered from an older configuration.
    OldConfig,
    /// Mounts another admin token Secret.
    OtherSecret,
    /// Wants a newer revision than its pod runs.
    NewRevision,
}

/// The `acknowledge-lost-source` annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum AckLost {
    /// Absent.
    None,
    /// The member's own ID.
    Own,
    /// Another ID.
    Other,
    /// Not an ID.
    Garbage,
}

impl AckLost {
    /// The annotation's value on a node whose identity is `own` (its own in upper case: the
    /// reconciler and admission compare IDs without regard to case), `None` when absent.
    pub fn value(self, own: &NodeId) -> Option<String> {
        match self {
            AckLost::None => None,
            AckLost::Own => Some(own.to_string().to_ascii_uppercase()),
            AckLost::Other => Some(id(0x77).to_string()),
            AckLost::Garbage => Some("lost".to_owned()),
        }
    }
}

/// The nodes a drain proof verifies, as its snapshot records them: every positive-capacity
/// role of `layout` and each removed node that is not lost and Garage sees `up`, sorted.
pub fn verification_snapshot(
    layout: &reconciler::garage::ClusterLayout,
    removed: &[NodeId],
    lost: &[NodeId],
    up: impl Fn(&NodeId) -> bool,
) -> Vec<String> {
    let mut ids: Vec<&NodeId> = layout
        .roles
        .iter()
        .filter(|r| r.capacity.is_some_and(|c| c > 0))
        .map(|r| &r.id)
        .chain(removed.iter().filter(|t| !lost.contains(t) && up(t)))
        .collect();
    ids.sort();
    ids.dedup();
    ids.into_iter().map(ToString::to_string).collect()
}

/// The member's role in Garage's current layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Role {
    /// Exactly its desired role.
    Desired,
    /// No role.
    Absent,
    /// Another zone.
    OtherZone,
    /// Another capacity.
    OtherCapacity,
    /// One tag less.
    OtherTags,
    /// A gateway role.
    Gateway,
    /// A storage role of capacity 0.
    ZeroCapacity,
}

/// Where Garage sees the member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Addr {
    /// At its pod's address.
    Pod,
    /// At an older pod's address.
    Old,
    /// Address not reported.
    Unknown,
}

/// What Garage reports about one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub struct InGarage {
    /// Its role.
    pub role: Role,
    /// Not connected.
    pub down: bool,
    /// Its address.
    pub addr: Addr,
    /// Part of an older layout version still draining.
    pub draining: bool,
    /// Garage does not report it at all.
    pub unseen: bool,
}

/// One Auto slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub struct Slot {
    /// A slot below `replicas` does not exist.
    pub absent: bool,
    /// A slot at or above `replicas` exists (a scale-down in progress).
    pub extra: bool,
    /// Its identity.
    pub identity: Identity,
    /// Its pod.
    pub pod: PodShape,
    /// The pod started just now.
    pub started_recently: bool,
    /// The pod runs an older revision than its StatefulSet wants.
    pub old_revision: bool,
    /// Its StatefulSet.
    pub sts: StsShape,
    /// The GarageNode still carries the rendering of an older cluster spec.
    pub rendered_stale: bool,
    /// Annotated `drain=true`.
    pub drain: bool,
    /// The lost-source acknowledgement.
    pub ack_lost: AckLost,
    /// Being deleted.
    pub deleting: bool,
    /// Garage's view of it.
    pub garage: InGarage,
    /// A gateway's pod without its tier label (out of the gateway Service); storage slots
    /// ignore it.
    pub unserved: bool,
}

/// The shape of a user-written GarageNode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum UserShape {
    /// Storage on claims, run by the operator.
    Manual,
    /// A Garage process outside Kubernetes; `bad_id` declares no valid ID.
    External {
        /// The declared ID is not one.
        bad_id: bool,
    },
    /// A gateway: a capacity-less role, retired by a role-only transaction.
    Gateway,
    /// Storage with a pinned `spec.nodeId`.
    Pinned,
}

/// One user-written GarageNode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub struct UserNode {
    /// Its shape.
    pub shape: UserShape,
    /// Its identity.
    pub identity: Identity,
    /// Its pod.
    pub pod: PodShape,
    /// Annotated `drain=true`.
    pub drain: bool,
    /// The lost-source acknowledgement.
    pub ack_lost: AckLost,
    /// Being deleted.
    pub deleting: bool,
    /// Garage's view of it.
    pub garage: InGarage,
    /// Zone number.
    pub zone: u8,
    /// A gateway's pod without its tier label (out of the gateway Service).
    pub unserved: bool,
}

/// A role of a node that is no member of this cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub struct ForeignRole {
    /// A gateway role.
    pub gateway: bool,
    /// Connected.
    pub up: bool,
}

/// A change in Garage's staging area.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub struct Staged {
    /// Whose: an index into every ID of the world.
    pub target: u8,
    /// What.
    pub kind: StagedKind,
}

/// What a staged change does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum StagedKind {
    /// Removes the role.
    Remove,
    /// Assigns the member's desired role (an earlier pass staged it).
    AssignDesired,
    /// Assigns some other role.
    AssignOther,
}

/// Staged layout parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum StagedParameters {
    /// None.
    None,
    /// The current ones.
    Same,
    /// Different ones.
    Other,
}

/// The layout history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum History {
    /// Only the current version.
    Settled,
    /// An older version still draining; trackers reported or not, synced or not.
    Draining {
        /// Trackers are reported.
        trackers: bool,
        /// Every tracked node synced the current version.
        synced: bool,
    },
    /// A version status this client does not know.
    Unknown,
}

/// `GetClusterHealth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Health {
    /// Every storage node up, every partition fully replicated.
    Healthy,
    /// Degraded.
    Degraded,
    /// Unavailable.
    Unavailable,
    /// Did not answer.
    Missing,
    /// Reports healthy with counts that say otherwise.
    Inconsistent,
}

/// Who a recorded transaction names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum Actor {
    /// The Auto slot with this ordinal (modulo [`SLOTS`]).
    Slot(u8),
    /// The user-written GarageNode with this index.
    User(u8),
    /// A GarageNode that no longer exists.
    Gone,
}

/// `status.storageDrain`, as a pass of the operator would have written it.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub struct DrainRecord {
    /// Its actor.
    pub actor: Actor,
    /// The actor's UID is another incarnation's.
    pub uid_mismatch: bool,
    /// The source is acknowledged lost.
    pub lost: bool,
    /// The target hash does not match the node sets.
    pub hash_broken: bool,
    /// `completedAt` is set.
    pub completed: bool,
    /// Seconds since `startedAt`.
    pub started_ago: u16,
    /// Seconds since `quietSince`.
    pub quiet_since_ago: Option<u16>,
    /// Adopted repair workers: (node index, worker ID).
    pub repairs: Vec<(u8, u8)>,
    /// Repair baselines: (node index, worker ID).
    pub baselines: Vec<(u8, u8)>,
    /// `requiresEmptyQueue`.
    pub requires_empty_queue: bool,
    /// The proof's snapshot of the nodes to verify is taken, for the current layout.
    pub snapshot: bool,
}

/// `status.storageRollout`, as a pass of the operator would have written it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub struct RolloutRecord {
    /// Its actor.
    pub actor: Actor,
    /// The recorded previous pod is the actor's current pod (not replaced yet).
    pub previous_is_current: bool,
    /// The actor's workload was recreated since.
    pub workload_mismatch: bool,
    /// Retired workload incarnations remembered.
    pub retired: u8,
    /// The recorded node ID is not the actor's.
    pub id_mismatch: bool,
}

/// A background worker of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub struct Worker {
    /// Its ID.
    pub id: u8,
    /// Which worker.
    pub kind: WorkerKind,
    /// Its state.
    pub state: WorkerState,
    /// Errors since it started.
    pub errors: u8,
    /// Its queue.
    pub queue: u8,
    /// Its persistent errors.
    pub persistent: u8,
    /// Reports itself disabled.
    pub disabled: bool,
}

/// Which worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum WorkerKind {
    /// A Blocks repair.
    Repair,
    /// A block resync worker.
    Resync,
    /// Anything else.
    Other,
}

/// A worker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum WorkerState {
    /// Busy.
    Busy,
    /// Idle.
    Idle,
    /// Done.
    Done,
    /// Throttled.
    Throttled,
    /// A state this client does not know.
    Other,
}

/// The proof's reads of one node.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub struct NodeProof {
    /// Which node: an index into every ID of the world.
    pub node: u8,
    /// Its workers.
    pub workers: Vec<Worker>,
    /// Blocks in error.
    pub block_errors: u8,
}

/// One GarageCluster's world, as the fuzzer describes it.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub struct World {
    /// Keep the spec fields this version refuses; by default they are removed so that the
    /// sample manifests reach the decision.
    pub keep_unsupported: bool,
    /// Auto slots by ordinal.
    pub slots: [Slot; SLOTS],
    /// User-written GarageNodes (at most [`MAX_USERS`] are used).
    pub users: Vec<UserNode>,
    /// Roles of nodes that are no members (at most two are used).
    pub foreign: Vec<ForeignRole>,
    /// Garage's staging area (at most three changes are used).
    pub staged: Vec<Staged>,
    /// Staged parameters.
    pub staged_parameters: StagedParameters,
    /// The layout version (modulo 8).
    pub version: u8,
    /// The layout history.
    pub history: History,
    /// Garage's health.
    pub health: Health,
    /// One storage pod sees the cluster unhealthy from where it stands.
    pub one_view_unhealthy: bool,
    /// No storage pod answered.
    pub garage_unavailable: bool,
    /// The drain record, replacing whatever the manifest's status holds.
    pub drain: Option<DrainRecord>,
    /// The rollout record, replacing whatever the manifest's status holds.
    pub rollout: Option<RolloutRecord>,
    /// The drain proof's reads.
    pub proof: Option<Vec<NodeProof>>,
    /// Seconds after the epoch at which the pass observes.
    pub now: u16,
    /// Which config revisions exist: the current one, an older one, another cluster's.
    pub config_maps: (bool, bool, bool),
    /// Another GarageCluster annotation: `drain=true` on the cluster itself.
    pub cluster_drain: bool,
    /// Generated gateway slots by ordinal (`C-gateway-N`), used when the cluster has a gateway
    /// tier; last, so that a world whose bytes run out has every gateway below replicas.
    pub gateways: [Slot; GATEWAY_SLOTS],
}
