//! Observed state of a `v1beta2` GarageCluster: replica counts, Garage health and layout telemetry,
//! per-node details, and the operator's in-flight safety records.

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

/// Observed state of a GarageCluster, maintained by the operator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GarageClusterStatus {
    /// Garage repair jobs currently running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_repairs: Option<Vec<RepairStatus>>,
    /// Controller-managed permissions letting a retained Auto-mode claim be bound again after its
    /// GarageNode slot was scaled down and later recreated. Matching is by exact UID; an entry is
    /// removed once the replacement has bound the claim.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["pvcName"]))]
    pub auto_mode_pvc_handoffs: Option<Vec<PvcHandoff>>,
    /// Details on blocks that failed to resync.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_error_details: Option<BlockErrorDetails>,
    /// Number of blocks with resync errors, summed over all nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_errors: Option<i32>,
    /// Build information of the Garage binary in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_info: Option<BuildInfo>,
    /// Identifier of the Garage cluster, taken from the smallest node ID seen and kept stable while
    /// that node remains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_id: Option<String>,
    /// Standard Kubernetes conditions describing the cluster, one per type.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// Number of nodes still moving data off an older layout version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draining_nodes: Option<i64>,
    /// Addresses of the cluster's services.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<ClusterEndpoints>,
    /// Progress of a replication-factor migration; absent if none has ever run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub factor_migration: Option<FactorMigrationStatus>,
    /// Operator-owned gateway GarageNodes that currently lack their capacity-less role in the
    /// layout. Without that role a gateway keeps no local copy of S3 authentication data, so signed
    /// requests may fail with "No such key". Drives the `GatewayLayoutDegraded` condition; empty
    /// when every gateway has its role.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_nodes_not_in_layout: Option<Vec<String>>,
    /// Gateway pods that are Ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_ready_replicas: Option<i32>,
    /// Desired number of gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_replicas: Option<i32>,
    /// Health summary reported by Garage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health: Option<ClusterHealth>,
    /// Result of the latest operation requested through an annotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_operation: Option<OperationStatus>,
    /// One-line description of the most serious current health problem (for example quorum at risk,
    /// stale remote clusters, or a federation misconfiguration), shown as a column by `kubectl
    /// get`. Empty when the cluster is healthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_diagnosis: Option<String>,
    /// Summary of the layout version history.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_history: Option<LayoutHistoryStatus>,
    /// Predicted changes if the staged layout were applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_preview: Option<LayoutPreview>,
    /// Layout version currently applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_version: Option<i64>,
    /// Bucket lifecycle worker status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle_status: Option<LifecycleStatus>,
    /// Details for each Garage node in the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<NodeStatus>>,
    /// Latest `metadata.generation` the operator has processed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Leftover gateway layout roles waiting to be removed. Filled in when the operator finds such
    /// roles but may not remove them itself, for example because `layoutManagement.autoApply` is
    /// off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_gateway_tombstones: Option<Vec<String>>,
    /// High-level lifecycle phase of the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<ClusterPhase>,
    /// Number of Ready Garage pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// State of each federated remote cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_clusters: Option<Vec<RemoteClusterStatus>>,
    /// Total Garage pods this cluster targets, storage and gateway combined.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub replicas: Option<i32>,
    /// Block resync queue depth summed across all nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resync_queue_length: Option<i64>,
    /// Pod count exposed through the scale subresource: non-terminating pods of the default
    /// Auto-managed storage group only (node-local pools, Manual GarageNodes and unified gateways
    /// are not counted). On a gateway-only cluster it counts gateway pods, solely so the older
    /// v1beta1 scale view keeps working; scaling a gateway-only cluster through v1beta2 is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_replicas: Option<i32>,
    /// Serialized label selector matching exactly the pods counted in `scaleReplicas`: normally the
    /// default storage group, or the gateway pods on a gateway-only cluster. Kept separate from
    /// `selector` so pods outside the scalable group cannot stop the scale subresource from
    /// converging.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale_selector: Option<String>,
    /// State of the data scrub.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scrub_status: Option<ScrubStatus>,
    /// Serialized label selector matching every pod this cluster manages. Not used by the scale
    /// subresource.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub selector: Option<String>,
    /// Version that the staged layout changes will get once applied; unset when nothing is staged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged_layout_version: Option<i64>,
    /// Number of role changes waiting in the staged layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged_roles: Option<i32>,
    /// The active cluster-wide storage drain, if any: removal of storage roles together with proof
    /// that their blocks were migrated. While set, no other layout change proceeds until the
    /// recorded actor finishes its handoff.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_drain: Option<StorageDrainStatus>,
    /// Storage identities that are connected and have a committed role in the Garage layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_ready_replicas: Option<i32>,
    /// Total storage identities across the default group, Manual GarageNodes and node-local pools.
    /// See `scaleReplicas` for the narrower count used by the scale subresource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_replicas: Option<i32>,
    /// Record of the single managed storage or gateway pod the operator is currently replacing;
    /// absent when no replacement is in progress.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_rollout: Option<StorageRolloutStatus>,
    /// Cluster-wide capacity and partition totals.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_stats: Option<StorageStats>,
    /// Number of nodes in this cluster plus all remote clusters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_nodes: Option<i64>,
    /// Peers that have been down longer than the unreachable threshold, each shown as
    /// `<shortNodeId> (down <duration>)`. Drives the `PeerUnreachable` condition; empty when every
    /// peer is reachable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable_peers: Option<Vec<String>>,
    /// Total number of Garage background workers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_count: Option<i32>,
    /// Detailed background worker information.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkerStatus>,
    /// Number of background workers in an error state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers_failed: Option<i32>,
}

/// Observed state of a single Garage node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// Storage capacity assigned to the node in the layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub capacity: Option<Quantity>,
    /// Whether the node is currently connected to the cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected: Option<bool>,
    /// Free space on the node's data disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub data_disk_available: Option<Quantity>,
    /// Size of the node's data disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub data_disk_total: Option<Quantity>,
    /// True if the node is a gateway with no storage capacity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<bool>,
    /// Free space on the node's metadata disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub metadata_disk_available: Option<Quantity>,
    /// Size of the node's metadata disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub metadata_disk_total: Option<Quantity>,
    /// Garage node ID, which is the node's public key in hex.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// Name of the pod running the node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// Tier the node belongs to: `storage` or `gateway`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    /// Garage version running on the node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Zone assigned to the node in the layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}
