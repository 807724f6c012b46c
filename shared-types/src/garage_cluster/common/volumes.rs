//! Volume, disruption-budget and claim-retention settings for the pods an operator-managed
//! GarageCluster runs (storage metadata/data and gateway metadata).

use crate::common::VolumeType;
use k8s_openapi::api::core::v1::PersistentVolumeClaimSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Volume backing one role of the managed pods: `storage.metadata`, `storage.data` or
/// `gateway.metadata`. It becomes a PersistentVolumeClaim per pod unless `type` is EmptyDir.
/// While the group has running replicas, `size` may only grow and `volumeAttributesClassName`
/// may change; other changes require scaling to zero first in a separate update.
/// On `gateway.metadata` it defaults to a 1Gi claim, `paths` is not allowed, and the field is
/// rejected under a Manual layout policy; an edge gateway's metadata can only be changed
/// after its replicas are scaled to zero. Gateway data is always an EmptyDir.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "!has(self.volumeAttributesClassName) || !has(self.type) || self.type == 'PersistentVolumeClaim'", "message": "volumeAttributesClassName is only valid for PersistentVolumeClaim volumes"}]))]
pub struct VolumeConfig {
    /// Access modes requested for each claim, such as `ReadWriteOnce`. Not allowed with
    /// EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_modes: Option<Vec<String>>,
    /// Annotations added to each generated claim. Not allowed with EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Labels added to each generated claim. Not allowed with EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Several data directories, each with its own capacity and optional volume, for nodes
    /// with multiple disks. Accepted only on `storage.data`, and not with EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<DataPath>>,
    /// Label selector that binds newly created claims to existing PersistentVolumes. With a
    /// selector no volume is provisioned dynamically, and `storageClassName` has to match the
    /// chosen volumes. Not allowed with EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub selector: Option<LabelSelector>,
    /// Requested capacity of each claim, or the size limit of an EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub size: Option<Quantity>,
    /// StorageClass used for the generated claims; the cluster default class when unset. Not
    /// allowed with EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// `PersistentVolumeClaim` (default) or `EmptyDir`. An EmptyDir is wiped whenever the pod
    /// is replaced, losing the node identity (metadata) or stored objects (data).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "PersistentVolumeClaim"))]
    pub type_: Option<VolumeType>,
    /// Name of a cluster-scoped VolumeAttributesClass set on every claim generated for this
    /// volume. Its driver must match the StorageClass provisioner; the operator does not check
    /// that the class exists. Only valid for PersistentVolumeClaim volumes. Unlike
    /// `storageClassName` it can change while replicas are running: bound claims are updated
    /// in place, asking the CSI driver to modify the volume. Removing a configured value from
    /// a live volume is rejected. Needs Kubernetes 1.34+ (or 1.31-1.33 with the feature
    /// enabled) and a CSI driver that supports ModifyVolume.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 253, "minLength" = 1, "pattern" = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"))]
    pub volume_attributes_class_name: Option<String>,
    /// Deprecated and unsupported. Kept only so existing objects still decode: new or changed
    /// values are rejected, and an old unchanged value is tolerated only until removed. A raw
    /// claim template could copy a node identity or attach two nodes to one disk; use the
    /// explicit fields above, or a GarageNode whose storage names an `existingClaim`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_claim_template_spec: Option<PersistentVolumeClaimSpec>,
}

/// One data directory of a multi-disk storage node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DataPath {
    /// Space Garage may use in this directory. Required unless `readOnly` is true.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub capacity: Option<Quantity>,
    /// Mount path of the directory inside the container, as listed in Garage's data
    /// directories.
    pub path: String,
    /// Marks the directory as a read-only source during a disk migration: Garage still reads
    /// existing blocks from it but places no new ones there. The volume itself stays mounted
    /// writable, because Garage keeps a marker file in it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Volume that backs this directory, a claim per pod unless `type` is EmptyDir. A claim
    /// field it leaves unset (storageClassName, accessModes, selector, labels, annotations)
    /// is the top-level data volume's, and without a size it is sized by `capacity`, then by
    /// the top-level size. Its `type` and `volumeAttributesClassName` are never taken from the
    /// top level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume: Option<DataPathVolumeConfig>,
}

/// Volume backing a single data directory; the same options as a top-level volume, without
/// `paths`. Shape changes follow the same rules while replicas are running.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "!has(self.volumeAttributesClassName) || !has(self.type) || self.type == 'PersistentVolumeClaim'", "message": "volumeAttributesClassName is only valid for PersistentVolumeClaim volumes"}]))]
pub struct DataPathVolumeConfig {
    /// Access modes requested for the claim, such as `ReadWriteOnce`. Not allowed with
    /// EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_modes: Option<Vec<String>>,
    /// Annotations added to the generated claim. Not allowed with EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Labels added to the generated claim. Not allowed with EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Label selector that binds newly created claims to existing PersistentVolumes. With a
    /// selector no volume is provisioned dynamically, and `storageClassName` has to match the
    /// chosen volumes. Not allowed with EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub selector: Option<LabelSelector>,
    /// Requested capacity of the claim, or the size limit of an EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub size: Option<Quantity>,
    /// StorageClass used for the generated claim; the cluster default class when unset. Not
    /// allowed with EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// `PersistentVolumeClaim` (default) or `EmptyDir`; an EmptyDir loses its contents when the
    /// pod is replaced.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "PersistentVolumeClaim"))]
    pub type_: Option<VolumeType>,
    /// Name of a cluster-scoped VolumeAttributesClass set on every claim generated for this
    /// data path. Its driver must match the StorageClass provisioner; the operator does not
    /// check that the class exists. Only valid for PersistentVolumeClaim volumes. Unlike
    /// `storageClassName` it can change while replicas are running: bound claims are updated
    /// in place, asking the CSI driver to modify the volume. Removing a configured value from
    /// a live volume is rejected. Needs Kubernetes 1.34+ (or 1.31-1.33 with the feature
    /// enabled) and a CSI driver that supports ModifyVolume.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 253, "minLength" = 1, "pattern" = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"))]
    pub volume_attributes_class_name: Option<String>,
    /// Deprecated and unsupported. Kept only so existing objects still decode: new or changed
    /// values are rejected, and an old unchanged value is tolerated only until removed. Use the
    /// explicit fields above, or a GarageNode whose storage names an `existingClaim`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_claim_template_spec: Option<PersistentVolumeClaimSpec>,
}

/// PodDisruptionBudget for a tier's pods. For storage it limits how many nodes voluntary
/// evictions can take down together; gateways hold no object data, so there it only keeps
/// request serving available. If neither bound is set, the operator chooses one (for Auto
/// groups, all replicas but one must stay available; otherwise one pod may be unavailable).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodDisruptionBudgetConfig {
    /// Whether the PodDisruptionBudget is created. Defaults to true.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub enabled: Option<bool>,
    /// Largest number (or percentage, e.g. `25%`) of pods that may be disrupted at once. Set
    /// either this or `minAvailable`, not both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Number (or percentage) of pods that must stay up during voluntary disruptions. Set
    /// either this or `maxUnavailable`, not both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
}

/// What happens to the generated PersistentVolumeClaims when their StatefulSet is deleted or
/// scaled down (the StatefulSet's `persistentVolumeClaimRetentionPolicy`). For gateways left
/// without a policy, edge gateway StatefulSets delete their claims while unified gateway
/// StatefulSets keep them; a policy set explicitly applies to both.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PvcRetentionPolicy {
    /// Fate of the claims when the StatefulSet is deleted: `Retain` (default) or `Delete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Retain"))]
    pub when_deleted: Option<PvcRetention>,
    /// Fate of the claims of removed pods when the StatefulSet is scaled down: `Retain`
    /// (default) or `Delete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Retain"))]
    pub when_scaled: Option<PvcRetention>,
}

/// Retention action for a PersistentVolumeClaim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum PvcRetention {
    /// Leave the claim, and the data on its volume, in place.
    Retain,
    /// Delete the claim; its volume follows the StorageClass reclaim policy.
    Delete,
}
