//! The types of cluster-wide and per-node status: health, status, statistics, node info,
//! connecting nodes.

use serde::{Deserialize, Serialize};

use super::nodes::NodeId;

/// `GET /health` of one node: whether it can serve requests with quorum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeHealth {
    /// 200: the node is ready.
    Ready,
    /// 503: the node runs but cannot serve (no layout yet, or no quorum). The text is Garage's.
    NotReady(String),
}

/// `GetClusterHealth`: the cluster as seen from the answering node.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterHealth {
    /// `healthy`, `degraded` or `unavailable`.
    pub status: HealthStatus,
    /// Nodes this node has had a connection to since it started.
    pub known_nodes: u64,
    /// Nodes this node is connected to now.
    pub connected_nodes: u64,
    /// Storage nodes in the current layout.
    pub storage_nodes: u64,
    /// Storage nodes connected now (`storageNodesOk` before Garage 2.1).
    #[serde(alias = "storageNodesOk")]
    pub storage_nodes_up: u64,
    /// Partitions in the layout (always 256).
    pub partitions: u64,
    /// Partitions with a write quorum available.
    pub partitions_quorum: u64,
    /// Partitions with every storage node connected.
    pub partitions_all_ok: u64,
}

/// The `status` of [`ClusterHealth`].
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "String")]
pub enum HealthStatus {
    /// Connected to every storage node.
    Healthy,
    /// Not connected to every storage node, but every partition has a write quorum.
    Degraded,
    /// Some partition has no write quorum.
    Unavailable,
    /// A value this client does not know; treat as not healthy.
    Other(String),
}

impl From<String> for HealthStatus {
    fn from(s: String) -> Self {
        match s.as_str() {
            "healthy" => Self::Healthy,
            "degraded" => Self::Degraded,
            "unavailable" => Self::Unavailable,
            _ => Self::Other(s),
        }
    }
}

/// `GetClusterStatus`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Current layout version.
    pub layout_version: u64,
    /// Nodes connected, in the current layout, or in an older layout still draining.
    pub nodes: Vec<NodeStatus>,
}

/// One node of [`ClusterStatus`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// The node's id.
    pub id: NodeId,
    /// Garage version, when known.
    #[serde(default)]
    pub garage_version: Option<String>,
    /// RPC address other nodes use.
    #[serde(default)]
    pub addr: Option<String>,
    /// Hostname.
    #[serde(default)]
    pub hostname: Option<String>,
    /// Whether the answering node is connected to it.
    pub is_up: bool,
    /// For a disconnected node, seconds since last contact; absent for the answering node
    /// itself and for nodes never seen since it started.
    #[serde(default)]
    pub last_seen_secs_ago: Option<u64>,
    /// Its role in the current layout.
    #[serde(default)]
    pub role: Option<NodeRole>,
    /// Whether it is part of an older layout version and still draining data.
    pub draining: bool,
    /// Space on its data partition(s).
    #[serde(default)]
    pub data_partition: Option<FreeSpace>,
    /// Space on its metadata partition.
    #[serde(default)]
    pub metadata_partition: Option<FreeSpace>,
    /// Approximate resync queue length (Garage 2.5+ reports it here).
    #[serde(default)]
    pub resync_queue_len: Option<u64>,
}

/// A role as the cluster status and node info report it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRole {
    /// Zone name.
    pub zone: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Capacity in bytes; `None` for a gateway.
    #[serde(default)]
    pub capacity: Option<u64>,
}

/// Total and available bytes of a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct FreeSpace {
    /// Bytes available.
    pub available: u64,
    /// Bytes in total.
    pub total: u64,
}

/// `GetClusterStatistics`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatistics {
    /// Human-readable statistics; do not parse.
    pub freeform: String,
    /// Number of buckets (newer Garage only).
    #[serde(default)]
    pub bucket_count: Option<u64>,
    /// Objects in all buckets (newer Garage only).
    #[serde(default)]
    pub total_object_count: Option<u64>,
    /// Bytes of objects in all buckets, before compression and replication.
    #[serde(default)]
    pub total_object_bytes: Option<u64>,
    /// Space available for object data in the cluster.
    #[serde(default)]
    pub data_avail: Option<u64>,
    /// Space available for metadata in the cluster.
    #[serde(default)]
    pub metadata_avail: Option<u64>,
    /// True when disconnected nodes make the availability figures imprecise.
    #[serde(default)]
    pub incomplete_avail_info: Option<bool>,
}

/// `GetNodeInfo`, per node.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeInfo {
    /// The node's id (matches the key it is reported under).
    pub node_id: NodeId,
    /// Garage version.
    pub garage_version: String,
    /// Build features.
    #[serde(default)]
    pub garage_features: Option<Vec<String>>,
    /// rustc version Garage was built with.
    pub rust_version: String,
    /// Metadata engine (`lmdb`, `sqlite`, `fjall`).
    pub db_engine: String,
    /// Hostname (newer Garage only).
    #[serde(default)]
    pub hostname: Option<String>,
    /// RPC address (newer Garage only).
    #[serde(default)]
    pub addr: Option<String>,
    /// Whether the node is connected (newer Garage only).
    #[serde(default)]
    pub is_up: Option<bool>,
    /// Whether it is draining (newer Garage only).
    #[serde(default)]
    pub draining: Option<bool>,
    /// Its layout role (newer Garage only).
    #[serde(default)]
    pub role: Option<NodeRole>,
    /// Data partition space (newer Garage only).
    #[serde(default)]
    pub data_partition: Option<FreeSpace>,
    /// Metadata partition space (newer Garage only).
    #[serde(default)]
    pub metadata_partition: Option<FreeSpace>,
    /// S3 and K2V connection parameters (newer Garage only).
    #[serde(default)]
    pub connection_parameters: Option<ConnectionParameters>,
}

/// Connection parameters a node advertises for S3 clients.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionParameters {
    /// S3 region.
    pub region: String,
    /// S3 endpoint URL.
    #[serde(default)]
    pub s3_endpoint: Option<String>,
    /// Whether clients must use path-style addressing.
    #[serde(default)]
    pub s3_use_path_style: Option<bool>,
    /// K2V endpoint URL.
    #[serde(default)]
    pub k2v_endpoint: Option<String>,
}

/// `GetNodeStatistics`, per node.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatistics {
    /// Human-readable statistics; do not parse.
    pub freeform: String,
    /// Block manager counters (newer Garage only).
    #[serde(default)]
    pub block_manager_stats: Option<BlockManagerStats>,
    /// Metadata table counters (newer Garage only).
    #[serde(default)]
    pub table_stats: Option<Vec<TableStats>>,
}

/// Block manager counters of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockManagerStats {
    /// Reference counter entries.
    pub rc_entries: u64,
    /// Blocks waiting in the resync queue.
    pub resync_queue_len: u64,
    /// Blocks with resync errors.
    pub resync_errors: u64,
}

/// Counters of one metadata table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TableStats {
    /// Table name.
    pub table_name: String,
    /// Items stored.
    pub items: u64,
    /// Merkle tree size.
    pub merkle_items: u64,
    /// Merkle update queue length.
    pub merkle_queue_len: u64,
    /// Remote insert queue length.
    pub insert_queue_len: u64,
    /// Garbage collection queue length.
    pub gc_queue_len: u64,
}

/// The outcome of connecting to one peer (`ConnectClusterNodes`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ConnectResult {
    /// Whether the connection was made.
    pub success: bool,
    /// Why not.
    #[serde(default)]
    pub error: Option<String>,
}
