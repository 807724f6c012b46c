//! Observed state reported for a v1beta1 GarageCluster. It mirrors the v1beta2 status, minus the
//! per-tier replica counters and other fields that exist only in v1beta2.

use crate::common::ClusterPhase;
use crate::garage_cluster::common::BlockErrorDetails;
use crate::garage_cluster::common::BuildInfo;
use crate::garage_cluster::common::ClusterEndpoints;
use crate::garage_cluster::common::ClusterHealth;
use crate::garage_cluster::common::FactorMigrationStatus;
use crate::garage_cluster::common::LayoutHistoryStatus;
use crate::garage_cluster::common::LayoutPreview;
use crate::garage_cluster::common::LifecycleStatus;
use crate::garage_cluster::common::OperationStatus;
use crate::garage_cluster::common::PvcHandoff;
use crate::garage_cluster::common::RemoteClusterStatus;
use crate::garage_cluster::common::RepairStatus;
use crate::garage_cluster::common::ScrubStatus;
use crate::garage_cluster::common::StorageDrainStatus;
use crate::garage_cluster::common::StorageRolloutStatus;
use crate::garage_cluster::common::StorageStats;
use crate::garage_cluster::common::WorkerStatus;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Observed state of the cluster, written by the operator. Fields that only v1beta2 reports
/// (per-tier replica counts, pending gateway tombstones, layout diagnosis, unreachable peers,
/// gateways missing from the layout and each node's tier) are not shown in this version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GarageClusterStatus {
    /// Repair operations currently running on the cluster's nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_repairs: Option<Vec<RepairStatus>>,
    /// Operator-owned authorizations for a retained PVC in Auto mode to be taken over by its
    /// replacement node, one entry per `pvcName`. Kept in this version so that converting the
    /// status cannot drop a replacement that is under way.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["pvcName"]))]
    pub auto_mode_pvc_handoffs: Option<Vec<PvcHandoff>>,
    /// Details about blocks that fail to sync: how many, when the last error happened, and the
    /// blocks with the most errors and their next retry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_error_details: Option<BlockErrorDetails>,
    /// Number of blocks that have synchronization errors, summed over all nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_errors: Option<i32>,
    /// Garage version, Rust toolchain version and compiled features reported by the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_info: Option<BuildInfo>,
    /// Identifier that Garage assigned to this cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// Standard Kubernetes conditions describing the cluster, one per `type`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// Nodes that held a storage role in an older layout version and are still handing their data
    /// to other nodes. A non-zero value means a layout change has not finished.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draining_nodes: Option<i64>,
    /// Addresses of the S3, K2V, web, admin, metrics and RPC endpoints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<ClusterEndpoints>,
    /// Progress of a replication factor change in flight. Present here too so that status
    /// conversion and deletion checks through v1beta1 do not lose or ignore it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factor_migration: Option<FactorMigrationStatus>,
    /// Health summary from Garage: whether the cluster is healthy and available, node counts, and
    /// how many partitions have quorum.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<ClusterHealth>,
    /// Outcome of the most recent action requested with an operation annotation, such as a metadata
    /// snapshot, a repair or a scrub command.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_operation: Option<OperationStatus>,
    /// Current layout version, the oldest version still acknowledged, and recent versions with
    /// their status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_history: Option<LayoutHistoryStatus>,
    /// What applying the staged layout would change: nodes added, removed or modified, zones
    /// affected, and the expected partition and data movement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_preview: Option<LayoutPreview>,
    /// Version of the layout currently in effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_version: Option<i64>,
    /// State of bucket lifecycle processing, such as when it last completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle_status: Option<LifecycleStatus>,
    /// One entry per Garage node belonging to this cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<NodeStatus>>,
    /// Most recent `metadata.generation` the operator has acted on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Overall state of the cluster, such as `Pending`, `Running`, `Ready`, `Degraded` or
    /// `Deleting`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<ClusterPhase>,
    /// Garage pods currently passing their readiness checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Connectivity and node counts of each federated remote site.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_clusters: Option<Vec<RemoteClusterStatus>>,
    /// Total number of Garage pods this cluster is expected to run, across storage and gateway
    /// pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub replicas: Option<i32>,
    /// Number of blocks waiting to be resynchronized, summed over all nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resync_queue_length: Option<i64>,
    /// Number of non-terminating pods matched by `scaleSelector`, as reported through the `/scale`
    /// subresource. For a storage cluster only the default StatefulSet group is counted (not
    /// node-local pools or gateways); for an edge gateway, its gateway pods are counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_replicas: Option<i32>,
    /// Serialized label selector for the pods counted in `scaleReplicas`, used by the `/scale`
    /// subresource. It is narrower than `selector` so that node-local pools or a unified gateway
    /// tier that only v1beta2 can show do not skew the v1beta1 scale status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_selector: Option<String>,
    /// Progress and findings of data scrubbing, overall and per node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scrub_status: Option<ScrubStatus>,
    /// Serialized label selector matching every pod this cluster manages. The `/scale` subresource
    /// uses `scaleSelector` instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub selector: Option<String>,
    /// Version of the staged layout that has not been applied yet, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged_layout_version: Option<i64>,
    /// How many node roles the staged, not yet applied, layout contains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged_roles: Option<i32>,
    /// Operator-owned record of the one cluster-wide removal of storage capacity in progress,
    /// including the evidence that its blocks have been migrated. Other layout changes wait while
    /// it is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_drain: Option<StorageDrainStatus>,
    /// Operator-owned record of the single managed pod replacement that is currently in progress.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_rollout: Option<StorageRolloutStatus>,
    /// Cluster-wide capacity (total, used, available) and partition health.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_stats: Option<StorageStats>,
    /// Number of Garage nodes in this cluster plus all federated remote sites.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_nodes: Option<i64>,
    /// Number of Garage background workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_count: Option<i32>,
    /// Background worker details: busy, idle and errored counts, recent worker errors and the
    /// current worker variables.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkerStatus>,
    /// Number of background workers reporting errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers_failed: Option<i32>,
}

/// Observed state of one Garage node of the cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// Storage capacity the node has in the layout; empty for gateway nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub capacity: Option<Quantity>,
    /// True while Garage currently sees this node as reachable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected: Option<bool>,
    /// Free space left on the node's data disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub data_disk_available: Option<Quantity>,
    /// Total size of the node's data disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub data_disk_total: Option<Quantity>,
    /// True when the node is a gateway that stores no object data.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<bool>,
    /// Free space left on the node's metadata disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub metadata_disk_available: Option<Quantity>,
    /// Total size of the node's metadata disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub metadata_disk_total: Option<Quantity>,
    /// Garage node ID, which is the node's public key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// Pod that hosts this Garage node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// Garage version reported by the node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Zone this node occupies in the Garage layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}
