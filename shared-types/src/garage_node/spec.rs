//! Desired-state types for the GarageNode resource: one Garage storage or gateway identity and the
//! per-node settings layered over its parent GarageCluster.

use super::GarageNodeStatus;
use crate::common::ClusterReference;
use crate::common::LoggingConfig;
use crate::common::MaintenanceConfig;
use crate::common::PublicEndpointConfig;
use crate::common::VolumeType;
use crate::common::ZoneSource;
use k8s_openapi::api::core::v1::Affinity;
use k8s_openapi::api::core::v1::EnvFromSource;
use k8s_openapi::api::core::v1::EnvVar;
use k8s_openapi::api::core::v1::LocalObjectReference;
use k8s_openapi::api::core::v1::PodSecurityContext;
use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::api::core::v1::SecurityContext;
use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Desired state of a GarageNode, the resource that stands for a single Garage process identity and
/// its role in the cluster layout.
///
/// Create GarageNodes yourself when nodes need individual treatment: different disk sizes or
/// storage classes per node, per-node CPU and memory, precise zone placement, or Garage processes
/// running outside this Kubernetes cluster (VMs, bare metal, other clusters). The operator also
/// creates GarageNodes of its own for Auto-managed storage groups, unified gateways and node-local
/// pools, so every identity goes through the same layout and drain lifecycle. For a uniform group
/// of PVC-backed nodes, letting the operator manage them (layoutPolicy: Auto) is usually simpler.
///
/// Pod settings left unset here are taken from the parent GarageCluster.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "garage.rajsingh.info",
    version = "v1beta1",
    kind = "GarageNode",
    namespaced,
    status = "GarageNodeStatus",
    shortname = "gn",
    category = "garage",
    doc = "One Garage node: a storage or gateway process with its own identity, either run by the operator or running elsewhere and only registered in the layout.",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.clusterRef.name"}"#,
    printcolumn = r#"{"name":"Zone","type":"string","jsonPath":".status.zone"}"#,
    printcolumn = r#"{"name":"Capacity","type":"string","jsonPath":".spec.capacity"}"#,
    printcolumn = r#"{"name":"Gateway","type":"boolean","jsonPath":".spec.gateway"}"#,
    printcolumn = r#"{"name":"Connected","type":"boolean","jsonPath":".status.connected"}"#,
    printcolumn = r#"{"name":"InLayout","type":"boolean","jsonPath":".status.inLayout"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "capacity is required for non-gateway managed nodes", "rule": "self.gateway || has(self.external) || has(self.capacity)"}]))]
pub struct GarageNodeSpec {
    /// Affinity and anti-affinity rules for this node's pod. Taken from the parent GarageCluster
    /// when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Which workload runs this node's pod. `StatefulSet` (used when omitted) gives this GarageNode
    /// its own one-replica StatefulSet. `NodeLocalPool` means the pod comes from one of the parent
    /// cluster's node-local pool DaemonSets; this object then creates no StatefulSet, ConfigMap or
    /// Service and only manages the layout role of that Kubernetes Node. Cannot be changed later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backing: Option<NodeBacking>,
    /// Storage capacity this node announces to Garage for data placement, e.g. `2Ti`. Required
    /// unless the node is a gateway or external; ignored (with a warning) on gateway nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub capacity: Option<Quantity>,
    /// The GarageCluster this node belongs to and takes its defaults from. Must be in the same
    /// namespace as the GarageNode; cannot be changed after creation.
    pub cluster_ref: ClusterReference,
    /// Container-level security context for the Garage container. Taken from the parent
    /// GarageCluster when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_security_context: Option<SecurityContext>,
    /// Extra environment variables for the Garage container, combined with the cluster's storage-
    /// or gateway-tier env; an entry here wins when both set the same name. Variables the operator
    /// controls (Garage config path, RPC/Admin/metrics secrets) are rejected, since node identity
    /// and safe draining depend on them. At most 256 entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Bulk environment sources (ConfigMaps, Secrets) for the Garage container. When set, this list
    /// takes the place of the cluster-level envFrom instead of being merged with it. A prefix that
    /// could produce an operator-controlled Garage variable is rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Vec<EnvFromSource>>,
    /// Registers a Garage process that the operator does not run. No workload is created; the node
    /// only gets a layout entry. Requires `nodeId` and excludes `storage`, `kubernetesNodeName` and
    /// `nodeLocalPoolName`. A node cannot switch between external and managed after creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external: Option<ExternalNodeConfig>,
    /// When true, the node is a gateway: it answers API requests but stores no data blocks and
    /// needs no capacity. Defaults to false. Cannot be changed; to move an identity to the other
    /// tier, drain and delete this node and create a new one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<bool>,
    /// Full Garage container image for this node. Taken from the parent GarageCluster when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Image pull policy for the Garage container. Taken from the parent GarageCluster when
    /// omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<ImagePullPolicy>,
    /// Secrets used to pull the Garage image for this node's pod. Taken from the parent
    /// GarageCluster when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,
    /// Replaces only the repository part of the Garage image reference. Has no effect when `image`
    /// is set; taken from the parent GarageCluster when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_repository: Option<String>,
    /// Name of the Kubernetes Node this GarageNode represents. Required and immutable when
    /// `backing` is `NodeLocalPool`, where the node's identity is read from the pool pod on that
    /// Node; not allowed otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes_node_name: Option<String>,
    /// Per-node logging settings. Each field set here replaces the matching value from the
    /// cluster's `spec.logging`; unset fields keep the cluster value. Not allowed on
    /// node-local-pool nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<LoggingConfig>,
    /// Maintenance settings for this node, e.g. suspending reconciliation of its workload and
    /// layout entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MaintenanceConfig>,
    /// Network settings that apply only to this node, layered over the parent GarageCluster's
    /// `spec.network`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NodeNetworkConfig>,
    /// Garage node ID (the node's public key, 64 hex characters; stored lowercase). Required for
    /// external nodes, where it is the only source of the identity. On operator-run nodes it is an
    /// optional pin: the operator reads the real ID from the node's own pod and refuses layout or
    /// status changes if the two differ; when omitted, the discovered ID is used. Immutable; not
    /// allowed on node-local-pool nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "^[a-fA-F0-9]{64}$"))]
    pub node_id: Option<String>,
    /// Name of the parent cluster's `spec.storage.nodeLocalPools` entry this node belongs to.
    /// Required and immutable when `backing` is `NodeLocalPool`; must be omitted for
    /// StatefulSet-backed and external nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_local_pool_name: Option<String>,
    /// Node labels this node's pod must be scheduled onto. Taken from the parent GarageCluster when
    /// omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Extra annotations for this node's pod, combined with the cluster's pod annotations; values
    /// set here win on conflicting keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// Extra labels for this node's pod, combined with the cluster's pod labels; values set here
    /// win on conflicting keys. Operator-reserved labels are rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_labels: Option<BTreeMap<String, String>>,
    /// PriorityClass for this node's pod. Taken from the parent GarageCluster when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Exposes this node's RPC port through a dedicated Service (`LoadBalancer` or `NodePort`).
    /// With a LoadBalancer and no `network.rpcPublicAddr`, the node advertises the IP the load
    /// balancer receives. Not allowed on node-local-pool nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_endpoint: Option<PublicEndpointConfig>,
    /// CPU and memory requests and limits for the Garage container. Taken from the parent
    /// GarageCluster when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Pod-level security context for this node's pod. Taken from the parent GarageCluster when
    /// omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurityContext>,
    /// ServiceAccount this node's pod runs as. Taken from the parent GarageCluster when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Metadata and data volumes for this node's StatefulSet. Required for StatefulSet-backed
    /// nodes; not allowed on external or node-local-pool nodes. Which volumes exist cannot change
    /// after creation, though volume sizes may grow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<NodeStorageConfig>,
    /// Additional tags for this node's Garage layout entry. Tags with operator-reserved prefixes
    /// (such as `cluster:` or `tier:`) are accepted only with the exact values the operator sets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Taints this node's pod tolerates. Taken from the parent GarageCluster when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// How this node's pod is spread across topology domains. Taken from the parent GarageCluster
    /// when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
    /// Garage layout zone of this node; Garage keeps copies of data in different zones to survive
    /// the loss of one. Always required, and used as the fallback when `zoneFrom` is set.
    pub zone: String,
    /// Reads the zone from a label on the Kubernetes Node running this node's pod, in place of
    /// `zone`. If that Node lacks the label, `zone` is used. While the pod is not scheduled, or its
    /// Node no longer exists, the zone last shown in `status.zone` is kept (`zone` before the
    /// first). A Node the API server refuses to return fails the reconciliation rather than
    /// guessing, and the operator must be installed cluster-wide: it watches Nodes for relabelling.
    /// The zone in effect is shown in `status.zone`. Not allowed on external nodes, which have no
    /// pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_from: Option<ZoneSource>,
}

/// Where to reach a Garage process that runs outside the operator's control.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalNodeConfig {
    /// Hostname or IP address of the external node's RPC endpoint.
    #[schemars(extend("minLength" = 1))]
    pub address: String,
    /// RPC port of the external node, 1-65535. Defaults to 3901.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3901, "minimum" = 1, "maximum" = 65535))]
    pub port: Option<i32>,
    /// Unsupported; kept only so older manifests still parse. Any value is rejected, as the
    /// operator cannot reconcile GarageNodes through another Kubernetes cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_cluster_ref: Option<ClusterReference>,
}

/// Network overrides for a single node, layered over the parent GarageCluster's `spec.network`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeNetworkConfig {
    /// `host:port` other Garage nodes should use to reach this node over RPC, replacing the
    /// cluster-level `network.rpcPublicAddr` for this node. If empty while `publicEndpoint` is a
    /// LoadBalancer, the load balancer's assigned IP is used. On node-local-pool nodes the value is
    /// only published as a layout tag, because the pool's shared configuration has no per-node
    /// settings; there it must be non-empty whenever `network` is present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_public_addr: Option<String>,
}

/// Volumes of an operator-run node: one metadata volume plus either a single data volume (`data`)
/// or several (`dataPaths`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "storage.data and storage.dataPaths are mutually exclusive", "rule": "!(has(self.data) && has(self.dataPaths) && size(self.dataPaths) > 0)"}]))]
pub struct NodeStorageConfig {
    /// Single volume for data blocks. Cannot be combined with `dataPaths`; not allowed on gateway
    /// nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<NodeVolumeConfig>,
    /// Whether Garage fsyncs data block writes on this node. Overrides the cluster-level
    /// `storage.dataFsync` when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_fsync: Option<bool>,
    /// Several data volumes, for nodes with multiple disks. Each entry gets its own volume, mount
    /// and PVC and becomes one item of Garage's `data_dir` list; it is mounted at `/data/data-<i>`
    /// unless `path` is set. Cannot be combined with `data`; not allowed on gateway nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_paths: Option<Vec<NodeVolumeConfig>>,
    /// Volume holding the node's identity key and Garage metadata database; losing it means losing
    /// the node's identity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<NodeVolumeConfig>,
    /// How often Garage snapshots the metadata database on this node
    /// (`metadata_auto_snapshot_interval`), as a duration such as `6h` or `1d`; at least 10
    /// minutes. Overrides the cluster-level value.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "^(\\d+(\\.\\d+)?\\s*(ns|us|ms|s|m|h|d|w|M|y)\\s*)+$"))]
    pub metadata_auto_snapshot_interval: Option<String>,
    /// Whether Garage fsyncs metadata writes on this node. Overrides the cluster-level
    /// `storage.metadataFsync` when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_fsync: Option<bool>,
    /// Directory where Garage writes metadata snapshots on this node (`metadata_snapshots_dir`).
    /// Overrides the cluster-level value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_snapshots_dir: Option<String>,
}

/// One volume of a GarageNode. It needs a source: `size` (a PVC the operator creates),
/// `existingClaim`, or `type: EmptyDir`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "!has(self.volumeAttributesClassName) || !has(self.type) || self.type != 'EmptyDir'", "message": "volumeAttributesClassName is only valid for PersistentVolumeClaim volumes"}, {"rule": "!has(self.volumeAttributesClassName) || !has(self.existingClaim) || size(self.existingClaim) == 0", "message": "volumeAttributesClassName cannot be combined with existingClaim: the referenced claim is user-managed"}]))]
pub struct NodeVolumeConfig {
    /// Access modes of the PVC the operator creates. `ReadWriteOnce` when omitted. Not allowed with
    /// `existingClaim` or EmptyDir; cannot be changed later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_modes: Option<Vec<String>>,
    /// Annotations put on the PVC the operator creates for this volume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Name of a PVC you manage yourself, in this namespace, to mount as this volume. Automated
    /// node cycling never reuses it or derives a replacement from it: to replace such a node,
    /// create a separate GarageNode and drain this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub existing_claim: Option<String>,
    /// Labels put on the PVC the operator creates for this volume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Mount path inside the container. Only used for `storage.dataPaths[]` entries, where the same
    /// path is written into Garage's `data_dir` list; defaults to `/data/data-<i>`. Migration from
    /// an older cluster-level StatefulSet carries the previous paths over, so Garage keeps its
    /// block placement instead of reshuffling and re-fetching data from peers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Marks a `storage.dataPaths[]` entry as a legacy read-only directory: Garage only reads
    /// existing blocks from it and no capacity is declared for it. Not accepted for new use on
    /// `metadata` or `data`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Label selector that binds a newly created claim to a pre-provisioned PersistentVolume; no
    /// volume is provisioned dynamically when it is set, and `storageClassName` must match the
    /// chosen PV. Immutable on an existing node, because rebinding its claim could not safely bring
    /// the node's key and data along.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub selector: Option<LabelSelector>,
    /// Capacity of the PVC the operator creates; may be increased later but never reduced. On
    /// `dataPaths[]` entries it may accompany `existingClaim`, where it sets the capacity declared
    /// to Garage for that directory (and then cannot change).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub size: Option<Quantity>,
    /// StorageClass of the PVC the operator creates; the cluster's default class when omitted.
    /// Cannot be changed later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// Volume kind: `PersistentVolumeClaim` (when omitted) or `EmptyDir`, scratch space that is
    /// lost with the pod and suited only to testing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub type_: Option<VolumeType>,
    /// Name of a cluster-scoped VolumeAttributesClass to set on the PVC generated for this volume.
    /// Its driver must match the StorageClass provisioner; the operator does not check that the
    /// class exists. Only for PersistentVolumeClaim volumes, and not with `existingClaim`, whose
    /// claim is user-managed. May be changed on a live node: the bound claim is updated in place,
    /// which asks the CSI driver to modify the volume. Removing a value from a live volume is
    /// rejected. Needs Kubernetes 1.34+ (or 1.31-1.33 with the VolumeAttributesClass feature on).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 253, "minLength" = 1, "pattern" = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"))]
    pub volume_attributes_class_name: Option<String>,
}

/// Kind of workload that runs a GarageNode's pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum NodeBacking {
    /// The GarageNode owns a dedicated single-replica StatefulSet.
    StatefulSet,
    /// The pod is provided by a node-local pool DaemonSet of the parent cluster.
    NodeLocalPool,
}

/// When the kubelet pulls the Garage container image.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ImagePullPolicy {
    /// Pull the image every time a container starts.
    Always,
    /// Never pull; the image must already be present on the Kubernetes Node.
    Never,
    /// Pull only if the image is not already present on the Kubernetes Node.
    IfNotPresent,
}
