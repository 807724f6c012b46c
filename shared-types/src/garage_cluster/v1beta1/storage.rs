//! Legacy `spec.storage` block of the v1beta1 GarageCluster, which holds the volume and Garage
//! storage settings that v1beta2 splits between `spec.storage` and `spec.gateway`.

use crate::garage_cluster::common::PvcRetentionPolicy;
use crate::garage_cluster::common::VolumeConfig;
use k8s_openapi::api::core::v1::EnvFromSource;
use k8s_openapi::api::core::v1::EnvVar;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Volumes and Garage storage options for the cluster's pods. For a storage cluster these map
/// to v1beta2 `spec.storage`; when `spec.gateway` is true only `metadata` and
/// `pvcRetentionPolicy` apply (they map to `spec.gateway`) and the remaining fields are rejected.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageConfig {
    /// Volume for object data blocks. Required for a storage cluster (with a `size` or
    /// `paths`) unless it is an EmptyDir; not allowed on a gateway, whose data is always an
    /// EmptyDir. Maps to v1beta2 `storage.data`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<VolumeConfig>,
    /// When true, Garage fsyncs data block writes to disk (Garage `data_fsync`). Storage
    /// clusters only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_fsync: Option<bool>,
    /// Additional environment variables for the Garage container of the storage pods (at most
    /// 256). Names that the operator sets itself, such as `GARAGE_CONFIG_FILE` and the RPC
    /// secret, admin token and metrics token variables, are refused. Storage clusters only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Additional ConfigMap or Secret sources of environment variables for the storage pods.
    /// Each entry needs a non-empty `prefix` that could not produce one of the
    /// operator-managed Garage variable names. Storage clusters only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Vec<EnvFromSource>>,
    /// Per-tier override of `spec.layoutPolicy` for the storage pods, `Auto` or `Manual`
    /// (not enforced by the schema in this version). Switching from Manual back to Auto is
    /// not allowed. Maps to v1beta2 `storage.layoutPolicy`; storage clusters only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_policy: Option<String>,
    /// Volume holding the node identity key and the metadata database. A storage cluster falls
    /// back to a 10Gi claim and a gateway to a 1Gi claim when omitted. `paths` is not allowed.
    /// Maps to v1beta2 `storage.metadata`, or `gateway.metadata` when `spec.gateway` is true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<VolumeConfig>,
    /// How often Garage takes automatic snapshots of the metadata database, written as one
    /// or more number+unit pairs (e.g. `6h`, `1d`, `1h 30m`); must add up to at least 10
    /// minutes. Unset means no automatic snapshots. Storage clusters only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "^(\\d+(\\.\\d+)?\\s*(ns|us|ms|s|m|h|d|w|M|y)\\s*)+$"))]
    pub metadata_auto_snapshot_interval: Option<String>,
    /// When true, Garage fsyncs metadata database writes (Garage `metadata_fsync`). Storage
    /// clusters only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_fsync: Option<bool>,
    /// Directory in which Garage stores metadata snapshots (Garage `metadata_snapshots_dir`).
    /// Storage clusters only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_snapshots_dir: Option<String>,
    /// Whether the StatefulSet deletes or keeps its PVCs when it is deleted or scaled down.
    /// Each setting is `Retain` or `Delete` (default `Retain`). If the block is omitted, storage
    /// claims are kept, whereas an edge gateway's metadata claims are deleted in both cases.
    /// Maps to v1beta2 `storage.pvcRetentionPolicy`, or `gateway.pvcRetentionPolicy` for a gateway.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pvc_retention_policy: Option<PvcRetentionPolicy>,
    /// RPC address that storage pods advertise to peers (Garage `rpc_public_addr`), reachable
    /// from outside the cluster. Use `{ordinal}` to get a distinct address per pod, e.g.
    /// `site-a-storage-{ordinal}.example.net:3901`. Maps to v1beta2 `storage.rpcPublicAddr`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_public_addr: Option<String>,
}
