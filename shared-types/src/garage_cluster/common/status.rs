//! Status sub-objects shared by the GarageCluster API versions: Garage health, layout, worker and
//! repair telemetry, plus the durable drain, rollout and PVC handoff records the operator keeps in
//! status.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A Garage repair job currently running on one node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RepairStatus {
    /// Garage node ID of the node executing the repair.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// Free-form progress text reported by Garage for this repair.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// Time at which the repair job began.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// Which repair procedure is running, such as `Tables`, `Blocks` or `Scrub`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

/// Controller-owned permission for one retained Auto-mode PersistentVolumeClaim to be bound again
/// by the GarageNode that replaces a deleted slot. Only the exact UIDs recorded here count;
/// matching names, labels or annotations are never enough to adopt a claim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PvcHandoff {
    /// UID of the deleted GarageNode that originally held the claim.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub previous_garage_node_uid: Option<String>,
    /// Name of the retained claim; also the key of this list entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub pvc_name: Option<String>,
    /// UID of the retained claim. A claim recreated under the same name does not match.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub pvc_uid: Option<String>,
    /// UID of the new GarageNode that may take over the claim. Empty until the replacement has been
    /// created and its UID recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replacement_garage_node_uid: Option<String>,
    /// Hash of a random nonce that the operator stamps on the replacement GarageNode it creates. It
    /// lets the operator recognise its own replacement if it restarts after creating the object but
    /// before recording its UID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replacement_reservation_hash: Option<String>,
    /// Auto-mode slot the claim belongs to, for example `<cluster>-storage-2`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub slot_name: Option<String>,
}

/// Breakdown of the blocks Garage has failed to resync.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockErrorDetails {
    /// Number of blocks currently in an error state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    /// Time of the most recent block error seen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error_at: Option<Time>,
    /// The blocks with the most failures, listed for troubleshooting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_errors: Option<Vec<BlockErrorEntry>>,
}

/// One block that Garage could not resync.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockErrorEntry {
    /// Hash identifying the block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_hash: Option<String>,
    /// How many resync attempts for this block have failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_count: Option<i32>,
    /// Time of the latest resync attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_attempt: Option<Time>,
    /// Error message from the latest failed attempt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Time at which Garage will next try to resync the block.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_retry: Option<Time>,
}

/// Build details reported by the running Garage binary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BuildInfo {
    /// Cargo feature flags compiled into Garage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub features: Option<Vec<String>>,
    /// Version of rustc that Garage was compiled with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rust_version: Option<String>,
    /// Garage release version string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Addresses at which the cluster's services can be reached.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterEndpoints {
    /// Address of the Garage Admin API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin: Option<String>,
    /// Address of the K2V API, when K2V is enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k2v: Option<String>,
    /// Address where Prometheus metrics are served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics: Option<String>,
    /// Address of Garage's inter-node RPC port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc: Option<String>,
    /// Address of the S3-compatible API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s3: Option<String>,
    /// Address of the static website endpoint, when web hosting is enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web: Option<String>,
}

/// Progress of a coordinated replication-factor change requested with the
/// `garage.rajsingh.info/purge-cluster-layout` annotation. Absent if no such migration has ever
/// run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FactorMigrationStatus {
    /// Time the migration reached `Completed` or `Failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
    /// Whether the request included the `force` option, which bypasses the checks for dangerous
    /// consistency mode and pending gateway tombstones. Recorded at start so the choice survives
    /// after the annotation has been consumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub force: Option<bool>,
    /// Replication factor in effect before the migration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_factor: Option<i64>,
    /// Human-readable detail about the current phase, or the reason for failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Step the migration is currently in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<FactorMigrationPhase>,
    /// Time the current phase was entered. Each phase has its own stuck timeout measured from here,
    /// so one hung step (for example a node that never reports its ID again after restarting) fails
    /// the migration without waiting on an overall deadline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_started_at: Option<Time>,
    /// Unique ID of this migration. The per-node init container uses it to name a marker file, so
    /// each node's on-disk cluster layout is deleted only once even if the pod restarts again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purge_id: Option<String>,
    /// Time the migration began.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// Replication factor the migration is moving to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_factor: Option<i64>,
}

/// Cluster health as reported by Garage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterHealth {
    /// True when enough nodes are reachable for every partition to reach quorum, so the cluster can
    /// serve requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available: Option<bool>,
    /// Number of known nodes that are currently connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected_nodes: Option<i64>,
    /// True only when Garage reports the cluster fully healthy, with no node missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthy: Option<bool>,
    /// Number of nodes Garage knows about, connected or not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_nodes: Option<i64>,
    /// Total number of partitions in the layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<i64>,
    /// Partitions whose replicas are all on connected nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions_all_ok: Option<i64>,
    /// Partitions that have a quorum of replicas on connected nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions_quorum: Option<i64>,
    /// Overall health string from Garage: `healthy`, `degraded` or `unavailable`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Number of nodes holding a storage (non-gateway) role in the layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_nodes: Option<i64>,
    /// Number of those storage nodes that are currently up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_nodes_ok: Option<i64>,
}

/// Outcome of the most recent operation requested through an operational annotation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationStatus {
    /// Failure message; set only when `succeeded` is false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether the operation finished without error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub succeeded: Option<bool>,
    /// Time the operation was started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub triggered_at: Option<Time>,
    /// Operation that was run, such as `Snapshot`, `Repair:<type>`, `Scrub:<command>` or
    /// `RevertLayout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

/// Summary of Garage's layout version history.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LayoutHistoryStatus {
    /// Layout version currently in force.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_version: Option<i64>,
    /// Lowest layout version that every node has acknowledged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ack: Option<i64>,
    /// Up to 64 layout versions (the current one, any still draining, and recent past ones), kept
    /// for troubleshooting. This is a truncated view; the operator's safety checks always read the
    /// full history from Garage instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxItems" = 64))]
    pub versions: Option<Vec<LayoutVersionSummary>>,
}

/// One entry of the layout version history.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LayoutVersionSummary {
    /// Number of gateway roles in this version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_nodes: Option<i64>,
    /// State of this version: `Current`, `Draining` or `Historical`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Number of storage roles in this version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_nodes: Option<i64>,
    /// Layout version number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

/// Predicted effect of applying the layout changes that are currently staged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LayoutPreview {
    /// Human-readable estimate of how much data would move.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_transfer_estimate: Option<String>,
    /// Node IDs that the staged changes would add to the layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes_added: Option<Vec<String>>,
    /// Node IDs whose role settings (zone, capacity or tags) would change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes_modified: Option<Vec<String>>,
    /// Node IDs that the staged changes would remove from the layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes_removed: Option<Vec<String>>,
    /// Estimated number of partitions that would move between nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition_transfers: Option<i32>,
    /// Zones touched by the staged changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones_affected: Option<Vec<String>>,
}

/// State of Garage's bucket lifecycle processing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleStatus {
    /// Time the lifecycle worker last finished a pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_completed: Option<Time>,
}

/// Observed state of one federated remote cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteClusterStatus {
    /// Whether the remote cluster is currently reachable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected: Option<bool>,
    /// Number of the remote cluster's nodes that are up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthy_nodes: Option<i64>,
    /// Time of the last successful contact with the remote cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<Time>,
    /// Name of the remote cluster as configured in `spec.remoteClusters`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Number of nodes known in the remote cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<i64>,
    /// Garage zone assigned to the remote cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}

/// State of Garage's data scrub (block integrity check) across the cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScrubStatus {
    /// Corrupted blocks detected by the latest scrub.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrupted_blocks: Option<i32>,
    /// Time the last scrub finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_completed: Option<Time>,
    /// Time the next scrub is due to start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_run: Option<Time>,
    /// Scrub state of each node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_statuses: Option<Vec<NodeScrubStatus>>,
    /// Whether scrubbing is paused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Human-readable scrub progress.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// True while at least one node is scrubbing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<bool>,
    /// Current scrub tranquility setting; higher values slow the scrub down to reduce load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tranquility_level: Option<i64>,
}

/// Scrub state of one node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeScrubStatus {
    /// Errors the scrub has found on this node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors_found: Option<i32>,
    /// Items verified so far on this node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items_checked: Option<i64>,
    /// Garage node ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// How far the scrub has got on this node, as a percentage from 0 to 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<i64>,
    /// Whether this node is currently scrubbing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub running: Option<bool>,
}

/// Durable record of the one cluster-wide transaction that removes storage roles from the layout
/// and proves their blocks reached the remaining nodes. While it exists, every other layout change
/// is held back until the recorded actor finishes its Kubernetes handoff.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageDrainStatus {
    /// The object allowed to advance this transaction.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub actor: Option<DrainActor>,
    /// Time the migration proof finished: the tracked repair workers completed without errors and
    /// every enabled resync worker passed the final checks. The record stays in place until the
    /// actor completes its handoff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<Time>,
    /// Block resync errors summed over the verification nodes at the last observation.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub error_count: Option<i64>,
    /// Garage layout version at which the verification nodes and counters were observed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub layout_version: Option<i64>,
    /// Map from full Garage node ID to the Kubernetes Pod UID of each locally managed process when
    /// this round of evidence began. A replaced pod invalidates the evidence, since Garage worker
    /// IDs and counters start over with the process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_pod_uids: Option<BTreeMap<String, String>>,
    /// Block resync queue depth summed over the verification nodes. Informational only, because
    /// Garage also queues delayed garbage collection; completion relies on finished repairs and
    /// idle resync workers unless `requiresEmptyQueue` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub queue_length: Option<i64>,
    /// Start of the quiet window, set once every tracked repair worker has finished cleanly and
    /// resync error baselines are recorded. After the window (670 seconds by default, covering
    /// Garage's delayed resync) every resync worker must be idle and error-free before any process
    /// may be stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quiet_since: Option<Time>,
    /// Sorted IDs of the positive-capacity roles being removed, which need block migration proof.
    /// Written before the layout change is applied so the safety gate survives operator restarts
    /// and Admin API failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub removed_storage_node_ids: Option<Vec<String>>,
    /// Highest worker ID on each node, keyed by node ID, taken before the operator starts its
    /// `blocks` repair there. Saved before the launch so the resulting repair worker can still be
    /// identified after a crash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair_baselines: Option<BTreeMap<String, i64>>,
    /// ID of the `blocks` repair worker, newer than the baseline, seen completing cleanly on each
    /// verification node, keyed by node ID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair_worker_ids: Option<BTreeMap<String, i64>>,
    /// True when some verification node is not known to use this cluster's RPC timeout (for example
    /// an unverified or federated peer). The resync queue must then also reach zero before the
    /// proof can complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub requires_empty_queue: Option<bool>,
    /// Persistent error counter of every enabled block resync worker, keyed `<nodeId>/<workerId>`,
    /// captured once all repairs have finished. Any increase sends the proof back to the repair
    /// stage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resync_error_baselines: Option<BTreeMap<String, i64>>,
    /// Sorted IDs of every layout role the actor may remove, including capacity-less gateway roles
    /// during a whole-cluster drain.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub role_removal_node_ids: Option<Vec<String>>,
    /// Time the removal intent was durably recorded, before any layout change was applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub started_at: Option<Time>,
    /// Fingerprint (`sha256:` prefixed) of the normalized target lists. Status writes check both
    /// this and `transactionId`, so an outdated reconcile cannot overwrite a newer target set from
    /// the same actor.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub target_hash: Option<String>,
    /// Random ID that tells apart successive drains by the same actor UID.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub transaction_id: Option<String>,
    /// Sorted subset of `removedStorageNodeIds` whose process and disks were acknowledged as
    /// permanently lost. These nodes cannot run a repair scan; instead the proof covers every
    /// surviving positive-capacity node, after an administrator has removed the dead role with
    /// Garage's own recovery tools. Data that was stored only on these nodes may be lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable_source_node_ids: Option<Vec<String>>,
    /// Sorted IDs of the live removed sources and current positive-capacity destinations whose
    /// completed block repairs make up this proof.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verification_node_ids: Option<Vec<String>>,
}

/// Identifies the exact Kubernetes object that owns a storage drain.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrainActor {
    /// API version of the actor object.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub api_version: Option<String>,
    /// Kind of actor: a GarageCluster for a whole-cluster drain, or a GarageNode for permanently
    /// removing one storage member.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub kind: Option<DrainActorKind>,
    /// Name of the actor object.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub name: Option<String>,
    /// Namespace of the actor object.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub namespace: Option<String>,
    /// UID of the actor. A recreated object with the same name is a different actor.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub uid: Option<String>,
}

/// Durable record of the single managed storage or gateway pod the operator is currently replacing
/// during a one-at-a-time rollout. Absent when no replacement is in progress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageRolloutStatus {
    /// Latest GarageCluster generation whose settings were published into the actor's desired pod
    /// template.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_generation: Option<i64>,
    /// Revision hash of the Garage configuration the replacement pod must run.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub desired_config_hash: Option<String>,
    /// Revision hash of the pod template the replacement pod must use.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub desired_pod_spec_hash: Option<String>,
    /// Latest generation of the actor's GarageNode published into its workload; for a node-local
    /// pool actor, this is the generated GarageNode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub garage_node_generation: Option<i64>,
    /// Garage node ID reported by the actor before its pod was deleted. The replacement must come
    /// back with this same ID; a different ID is never accepted as completing the rollout.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub garage_node_id: Option<String>,
    /// GarageNode of a StatefulSet-backed actor (PVC, SMB or gateway). Used instead of
    /// `nodeLocalPoolName` and `kubernetesNodeName`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub garage_node_name: Option<String>,
    /// UID of the actor's GarageNode, recorded for both StatefulSet and node-local pool actors.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub garage_node_uid: Option<String>,
    /// Kubernetes Node hosting a node-local pool actor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes_node_name: Option<String>,
    /// UID of that Kubernetes Node, whose HostPath storage was checked. Empty for StatefulSet
    /// actors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes_node_uid: Option<String>,
    /// Entry of `spec.storage.nodeLocalPools` the actor belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_local_pool_name: Option<String>,
    /// Exact claims (name and UID) mounted by the pod chosen for replacement. If any of them is
    /// recreated or being deleted, the rollout stops rather than start a pod on empty storage or
    /// under a new Garage identity. Empty for node-local pool actors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claims: Option<Vec<PvcIdentity>>,
    /// UID of the pod selected for replacement, saved before it is deleted. A pod with this UID
    /// never counts as the replacement.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub previous_pod_uid: Option<String>,
    /// Name of a failed replacement pod chosen to be deleted and retried. Written before the delete
    /// and kept until that pod is gone, so the retry is safe across operator or API failures. Empty
    /// when no retry is pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_pod_name: Option<String>,
    /// UID of the pod named in `recoveryPodName`; empty when no retry is pending.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_pod_uid: Option<String>,
    /// Latest `garage.rajsingh.info/recover-storage-rollout` annotation value the operator acted on
    /// by deleting a failed replacement again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_request: Option<String>,
    /// UIDs of earlier StatefulSet or DaemonSet instances replaced while fenced. Pods they own are
    /// never accepted as the replacement, and node-local pool recovery waits for those pods to
    /// disappear instead of deleting healthy members. Holds at most 32 entries; recovery stops
    /// rather than go beyond that.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxItems" = 32))]
    pub retired_workload_uids: Option<Vec<String>>,
    /// True when the StatefulSet's PVC retention policy keeps claims if the StatefulSet is deleted.
    /// Always false for node-local pool actors; when false, the operator refuses to recreate a
    /// missing StatefulSet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stateful_set_workload_recreation_safe: Option<bool>,
    /// True while a recreated StatefulSet or DaemonSet has been adopted but is still kept from
    /// scheduling its first pod (zero replicas, or a node selector that matches nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_fenced: Option<bool>,
    /// UID of the StatefulSet or DaemonSet currently allowed to create and replace the actor's pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub workload_uid: Option<String>,
}

/// Exact identity of one claim mounted by the pod being replaced, captured before the pod is
/// deleted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PvcIdentity {
    /// Claim name, in the cluster's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub name: Option<String>,
    /// UID of the claim that held the actor's metadata or data when it was selected.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub uid: Option<String>,
}

/// Cluster-wide storage capacity and partition totals.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageStats {
    /// Free storage summed over all nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub available_capacity: Option<Quantity>,
    /// Partitions with all their replicas available.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthy_partitions: Option<i32>,
    /// Storage capacity summed over all nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub total_capacity: Option<Quantity>,
    /// Number of partitions in the layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_partitions: Option<i32>,
    /// Storage in use, summed over all nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub used_capacity: Option<Quantity>,
}

/// Summary of Garage background workers across the cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerStatus {
    /// Workers currently doing work.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy: Option<i32>,
    /// Workers reporting errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errored: Option<i32>,
    /// Details for each worker that is reporting errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<WorkerError>>,
    /// Workers with nothing to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<i32>,
    /// Number of background workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<i32>,
    /// Current values of Garage's tunable worker variables (such as `resync-tranquility`), by name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variables: Option<BTreeMap<String, String>>,
}

/// A background worker that is reporting errors.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerError {
    /// Errors in a row since the worker last succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consecutive_errors: Option<i32>,
    /// Most recent error message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Seconds elapsed since the most recent error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error_secs_ago: Option<i64>,
    /// Worker name as shown by Garage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Garage's numeric ID for the worker.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_id: Option<i64>,
}

/// Steps of a replication-factor migration, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum FactorMigrationPhase {
    /// Checking that the cluster meets the migration's preconditions.
    Validating,
    /// Suspending the storage GarageNodes and stopping all storage pods.
    ScalingDown,
    /// Restarting pods with an init container that deletes each node's on-disk cluster layout once.
    Purging,
    /// Waiting for pods to become Ready and confirming every node's layout was purged.
    Verifying,
    /// Applying a fresh layout for all storage nodes at the new factor.
    RebuildingLayout,
    /// Running a table repair, waiting for the cluster to become healthy, then removing the
    /// temporary changes.
    Converging,
    /// The migration finished successfully.
    Completed,
    /// The migration stopped because of an error, a timed-out phase or an abort request; temporary
    /// changes are undone.
    Failed,
}

/// Kind of object that can own a storage drain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum DrainActorKind {
    /// A whole-cluster drain performed before deleting a GarageCluster.
    GarageCluster,
    /// Permanent removal of a single storage member.
    GarageNode,
}
