//! Observed-state types for the GarageNode resource, filled in by the operator from Kubernetes and
//! from the Garage Admin API.

use crate::common::ClusterPhase;
use k8s_openapi::api::core::v1::SecretKeySelector;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Observed state of a GarageNode, as reported by the operator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GarageNodeStatus {
    /// Address at which the rest of the Garage cluster reaches this node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Always empty: Garage does not report a block error count per node. Kept only for
    /// compatibility.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_errors: Option<i32>,
    /// Garage Admin API endpoint the operator most recently used to manage this node's layout
    /// entry. Remembered so that deleting the node can still try to remove its layout role after
    /// the parent GarageCluster is gone, e.g. for an edge gateway attached through
    /// `spec.connectTo`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_admin_endpoint: Option<String>,
    /// Secret key, in this namespace, holding the Admin API token the operator most recently used
    /// with `clusterAdminEndpoint`. Lets deletion attempt a best-effort layout cleanup after the
    /// parent GarageCluster has been removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub cluster_admin_token_secret_ref: Option<SecretKeySelector>,
    /// Standard conditions for this node: `NodeDiscovered`, `InLayout`, `NodeConnected`,
    /// `Draining`, `DrainPrepared` (safe to delete), `Cycling` and `Suspended`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// Whether Garage currently sees this node as connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected: Option<bool>,
    /// Current step of a graceful replacement requested with the `garage.rajsingh.info/cycle`
    /// annotation; empty when none is running. Once set, the replacement node already exists, so
    /// after a restart or requeue the operator carries on with the swap instead of creating
    /// another.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle_phase: Option<CyclePhase>,
    /// Name of the replacement GarageNode created by the running cycle, which takes over this
    /// node's place in the layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle_sibling_name: Option<String>,
    /// Garage node ID discovered for the replacement GarageNode. The remaining steps of the cycle
    /// (its promotion and the drain proof for this node) are tied to exactly this identity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycle_sibling_node_id: Option<String>,
    /// Disk space of the filesystem holding data blocks. Garage reports a single figure even when
    /// several data paths are configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_partition: Option<PartitionStatus>,
    /// Always empty: Garage does not report which metadata database engine a node uses. Kept only
    /// for compatibility.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db_engine: Option<String>,
    /// Always empty: Garage does not report the features a node was built with. Kept only for
    /// compatibility.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub garage_features: Option<Vec<String>>,
    /// Hostname reported by the Garage process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Whether this node has a role in the current Garage cluster layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_layout: Option<bool>,
    /// Last time this node was observed as connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<Time>,
    /// Garage layout version in which this node was added.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_version: Option<i64>,
    /// PVCs that this controller has reserved for the node under its naming convention. Each entry
    /// holds either a hash of a secret nonce (claim created, UID not yet known) or the claim's
    /// exact UID once known; a matching name or annotation alone never counts as ownership. Claims
    /// from older layouts are recorded once, while their live StatefulSet and pod still show that
    /// they belong to this node.
    #[serde(rename = "managedPVCs", skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub managed_pv_cs: Option<Vec<ManagedPvc>>,
    /// Disk space of the filesystem holding Garage metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_partition: Option<PartitionStatus>,
    /// Garage node ID (public key) of this node, discovered from its pod or taken from the spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// The `metadata.generation` most recently processed by the operator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// UID of the pod whose Garage identity the operator last checked directly. Saved together with
    /// the first authenticated node ID and kept up to date, so that a replacement pod never
    /// inherits identity, connectivity or layout evidence gathered from the pod before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_pod_uid: Option<String>,
    /// Written by the GarageCluster controller, never by users. A non-zero value is the parent
    /// generation that intends to delete this node once its drain is prepared; a later change to
    /// the parent's spec voids the request before any role is removed. A drain asked for only
    /// through the `drain` annotation leaves this unset and stops after preparation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_deletion_request_generation: Option<i64>,
    /// Number of layout partitions assigned to this node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partitions: Option<i64>,
    /// Overall lifecycle phase of the node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<ClusterPhase>,
    /// Always empty: the Garage Admin API has no per-node repair status. Kept only for
    /// compatibility.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair_in_progress: Option<bool>,
    /// Always empty. Kept only for compatibility.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair_progress: Option<String>,
    /// Always empty. Kept only for compatibility.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair_type: Option<String>,
    /// Always empty: Garage reports partition counts and free disk space, not the bytes a node
    /// stores. Kept only for compatibility.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub stored_data: Option<Quantity>,
    /// Tags on this node's entry in the Garage layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Garage version running on this node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Zone this node actually has in the layout: `spec.zone`, or the value `spec.zoneFrom` read
    /// from the Kubernetes Node the pod runs on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}

/// Disk space of one filesystem used by Garage. For the data partition, Garage reports a single
/// figure even when several data paths are configured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PartitionStatus {
    /// Free space left on the filesystem.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub available: Option<Quantity>,
    /// Total size of the filesystem.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub total: Option<Quantity>,
    /// Share of the filesystem in use, as a percentage from 0 to 100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_percent: Option<i32>,
}

/// Reservation of one conventionally named PVC that the controller created or adopted for this
/// GarageNode.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "exactly one of uid and pendingReservationHash must be set", "rule": "has(self.uid) != has(self.pendingReservationHash)"}]))]
pub struct ManagedPvc {
    /// Name of the PersistentVolumeClaim.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub name: Option<String>,
    /// SHA-256 digest (64 lowercase hex characters) of a random nonce written onto the claim before
    /// its UID can be seen. It covers a crash between creating the claim and recording it, without
    /// revealing enough to let anyone else fake a reservation. Set exactly when `uid` is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "^[a-f0-9]{64}$"))]
    pub pending_reservation_hash: Option<String>,
    /// UID the API server gave the claim, recorded when the operator created it or safely took it
    /// over. Set exactly when `pendingReservationHash` is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

/// Step of a graceful node replacement requested with the `cycle` annotation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum CyclePhase {
    /// The replacement GarageNode is being created with a fresh identity.
    Provisioning,
    /// Waiting for the replacement's pod to be ready, connected and part of a settled layout.
    Syncing,
    /// This node's role is being removed and its data moved to the other nodes, the replacement
    /// included.
    Draining,
}
