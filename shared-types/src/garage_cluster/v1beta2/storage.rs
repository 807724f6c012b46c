//! Storage-tier types of GarageCluster v1beta2: the default StatefulSet/PVC group and the
//! HostPath-backed node-local pools.

use crate::garage_cluster::common::LayoutPolicy;
use crate::garage_cluster::common::PodDisruptionBudgetConfig;
use crate::garage_cluster::common::PvcRetentionPolicy;
use crate::garage_cluster::common::VolumeConfig;
use k8s_openapi::api::core::v1::Affinity;
use k8s_openapi::api::core::v1::EnvFromSource;
use k8s_openapi::api::core::v1::EnvVar;
use k8s_openapi::api::core::v1::PodSecurityContext;
use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::api::core::v1::SecurityContext;
use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Settings of the storage tier. The pod fields together with `replicas`, `metadata` and `data`
/// describe the optional default group of operator-managed StatefulSet/PVC nodes; `nodeLocalPools`
/// adds HostPath-backed members, and both may coexist with Manual GarageNodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageSpec {
    /// Affinity rules for pods of the default storage group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Share of each PVC's size, in percent (0-50), that is not advertised as layout capacity,
    /// leaving headroom for filesystem overhead. Only used with the `Auto` layout policy; 0 when
    /// unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0, "maximum" = 50))]
    pub capacity_reserve_percent: Option<i64>,
    /// Security context of the Garage container in default-group pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_security_context: Option<SecurityContext>,
    /// Volume for the object blocks of the default group. Required when `replicas` is above 0
    /// (unless the storage policy is `Manual`); may be omitted together with `metadata` when
    /// `replicas` is 0. Needs `size` or `paths` unless it is an EmptyDir, which loses data when a
    /// pod goes away. While the group has replicas, only sizes may grow; other volume changes need
    /// a scale to 0 first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<VolumeConfig>,
    /// Flush each object block to disk before acknowledging the write (Garage `data_fsync`). Off by
    /// default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_fsync: Option<bool>,
    /// Additional environment variables for the Garage container, e.g.
    /// `GARAGE_ALLOW_WORLD_READABLE_SECRETS`. At most 256 entries. Names that carry the config file
    /// path or RPC, admin or metrics credentials are reserved for the operator.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Additional ConfigMap or Secret sources for the Garage container's environment. Each source
    /// needs a prefix that cannot produce an operator-reserved variable name. Values from `env` win
    /// over values loaded here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Vec<EnvFromSource>>,
    /// Overrides `spec.layoutPolicy` for the default storage group only; inherits it when unset.
    /// With `Manual` you provide storage GarageNodes yourself (for example PVC- or SMB-backed)
    /// while node-local pools stay operator-managed and gateways keep the cluster policy. Once
    /// `Manual`, it cannot go back to `Auto`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_policy: Option<LayoutPolicy>,
    /// Volume holding each default-group node's identity key and metadata database. Required when
    /// `replicas` is above 0 (unless the storage policy is `Manual`); may be omitted together with
    /// `data` when `replicas` is 0 and only node-local pools or Manual GarageNodes are used.
    /// `paths` is not allowed here, and an EmptyDir means a new node identity after every restart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<VolumeConfig>,
    /// How often Garage snapshots its metadata database automatically, as a duration such as `6h`
    /// or `1d` (units ns, us, ms, s, m, h, d, w, M, y). Must add up to at least 10 minutes. No
    /// automatic snapshots when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("pattern" = "^(\\d+(\\.\\d+)?\\s*(ns|us|ms|s|m|h|d|w|M|y)\\s*)+$"))]
    pub metadata_auto_snapshot_interval: Option<String>,
    /// Flush metadata database transactions to disk before acknowledging them (Garage
    /// `metadata_fsync`). Off by default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_fsync: Option<bool>,
    /// Directory in which Garage stores metadata snapshots (Garage `metadata_snapshots_dir`).
    /// Garage picks its default location when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_snapshots_dir: Option<String>,
    /// Named groups of node-local storage members, up to 32, keyed by `name`. Every Kubernetes Node
    /// matched by a pool's selector runs one Garage pod with its own lasting identity, whose
    /// metadata and blocks live in that Node's HostPath directories. The operator runs each pool as
    /// a DaemonSet and takes care of activation, rollouts, layout membership, draining and
    /// retirement.
    ///
    /// Pools are always operator-managed, even when `layoutPolicy` is `Manual`, and do not depend
    /// on the default group. All pools together may select at most 255 Nodes. Garage allows at most
    /// 256 storage roles in the whole layout, counting every member kind and federated site, so
    /// other members can exhaust that room first. Requires `spec.admin.adminTokenSecretRef` and
    /// Kubernetes 1.27 or newer.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxItems" = 32, "x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub node_local_pools: Option<Vec<NodeLocalPoolSpec>>,
    /// Node selector for default-group pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Additional annotations for default-group pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// Settings of the single PodDisruptionBudget that covers the whole storage tier: the default
    /// group and every node-local pool. Without explicit limits a conservative value is derived
    /// from the members.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetConfig>,
    /// Additional labels for default-group pods. Operator-reserved keys (the `app.kubernetes.io/`
    /// identity labels and `garage.rajsingh.info/` membership labels) are rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_labels: Option<BTreeMap<String, String>>,
    /// PriorityClass for default-group pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Whether PVCs of the default group are kept or removed when their StatefulSets are deleted or
    /// scaled down (`whenDeleted` and `whenScaled`, each `Retain` by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pvc_retention_policy: Option<PvcRetentionPolicy>,
    /// Number of nodes in the default operator-managed StatefulSet/PVC group (default 3, at most
    /// 50); 0 turns the group off. Node-local pool members (sized by their selectors) and Manual
    /// GarageNodes are not counted. This is the value `kubectl scale` changes. Ignored when the
    /// storage layout policy is `Manual`. A decrease must be submitted as an update of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    #[schemars(extend("default" = 3, "minimum" = 0))]
    pub replicas: Option<i32>,
    /// CPU and memory requests and limits for the Garage container of default-group pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// RPC address (`host:port`) that default-group pods advertise to their peers, for example
    /// peers in other regions. Include `{ordinal}` to give each pod its own address (0, 1, ...),
    /// e.g. `eu-west-store-{ordinal}.example.net:3901`; without it all pods advertise the same
    /// string, which only suits a single replica. Ignored when a per-node LoadBalancer
    /// `publicEndpoint` provides the address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_public_addr: Option<String>,
    /// Pod-level security context for default-group pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurityContext>,
    /// Tolerations for default-group pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Topology spread constraints for default-group pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
}

/// One node-local pool: every Kubernetes Node picked by `selector` becomes a Garage storage member
/// with its own identity. Exactly one of `data` and `dataPaths` must be set.
///
/// A pool is only an operator grouping. Replication, quorum and zones are decided by Garage over
/// the whole layout, not per pool. A member's identity lives in its metadata directory (which holds
/// `node_key`), so reusing a pool name alone never restores an old identity. The operator tracks
/// membership with its own Node label so that replacements join before old roles are drained, and a
/// pod is stopped only after its role is gone from every active layout version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "exactly one of data or dataPaths must be set", "rule": "has(self.data) != (has(self.dataPaths) && size(self.dataPaths) > 0)"}]))]
pub struct NodeLocalPoolSpec {
    /// Capacity that every member of this pool advertises to the Garage layout (at least 1Ki). It
    /// applies per member, not to the pool as a whole, and is only a layout weight: no disk space
    /// is reserved or measured. With `dataPaths` it may not exceed the total capacity of the
    /// writable paths.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    #[schemars(transform = crate::schema::quantity)]
    pub capacity: Option<Quantity>,
    /// Single HostPath directory for object blocks, mounted at `/data/data`. Set either this or
    /// `dataPaths`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<HostPathVolume>,
    /// Several HostPath directories for object blocks (at most 32, keyed by `path`), for Nodes with
    /// more than one data disk. Set either this or `data`. Writable entries need a capacity;
    /// read-only entries stay mounted while Garage moves their blocks elsewhere. New entries may be
    /// added, but existing ones cannot be remapped or removed in place: mark them read-only, or
    /// drain and recreate the pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxItems" = 32, "x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["path"]))]
    pub data_paths: Option<Vec<NodeLocalDataPath>>,
    /// HostPath directory holding each member's node key and metadata database. Its `hostPath` is
    /// fixed once the pool exists, because changing it would give every member a new identity, and
    /// `hostPathType` cannot be relaxed from `Directory` to `DirectoryOrCreate`.
    pub metadata: HostPathVolume,
    /// Pool name: a DNS label of at most 63 characters, unique within the cluster. Appears in
    /// generated resource names, labels and the `node-local-pool:<name>` layout tag. It does not
    /// define a Garage zone, identity or replication group.
    #[schemars(extend("maxLength" = 63, "pattern" = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub name: String,
    /// Per-member RPC reachability of this pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NodeLocalPoolNetwork>,
    /// Pod settings for this pool's members that do not affect which Nodes belong to the pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_template: Option<PodTemplate>,
    /// Label selector for the Kubernetes Nodes that each host one persistent member of this pool.
    /// It defines membership, not just scheduling. Must not be empty, a Node may match at most one
    /// pool of the cluster, and keys starting with `garage.rajsingh.info/gc-` are reserved.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub selector: Option<LabelSelector>,
}

/// A directory on each selected Kubernetes Node that is mounted into the pool's Garage pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HostPathVolume {
    /// Absolute, normalized path of the directory on the Node; `/` is not allowed.
    pub host_path: String,
    /// How the directory is checked before it is mounted. `Directory` (default) requires an
    /// existing directory that contains a `.garage-volume-id` marker file you create on the
    /// intended disk, so a pod cannot start and write to the root filesystem when that disk is not
    /// mounted. `DirectoryOrCreate` creates a missing directory and skips the marker check; use it
    /// only for tests or disposable storage.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Directory"))]
    pub host_path_type: Option<HostPathType>,
}

/// One HostPath-backed entry in a pool's list of Garage data directories.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "capacity is required for writable paths and must be omitted for read-only paths", "rule": "has(self.readOnly) && self.readOnly ? !has(self.capacity) : has(self.capacity)"}]))]
pub struct NodeLocalDataPath {
    /// Layout capacity contributed by this directory. Required for writable paths and must be left
    /// out when `readOnly` is true.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub capacity: Option<Quantity>,
    /// Absolute path of the directory on each selected Node.
    pub host_path: String,
    /// `Directory` (default) requires an existing directory containing a `.garage-volume-id` marker
    /// file; `DirectoryOrCreate` creates it when missing and skips the marker check, which is only
    /// meant for tests or disposable storage.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Directory"))]
    pub host_path_type: Option<HostPathType>,
    /// Absolute mount path inside the Garage container, as listed in Garage's `data_dir`. Must not
    /// overlap the operator's own mounts such as `/data/metadata`, `/etc/garage` or `/secrets`.
    pub path: String,
    /// When true the directory stays mounted but gets no new blocks, letting Garage move its
    /// existing blocks to other paths before the disk is retired. Defaults to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
}

/// The placeholder of [`NodeLocalPoolNetwork::rpc_public_addr_template`] that stands for the
/// Kubernetes Node name.
pub const RPC_TEMPLATE_NODE_NAME: &str = "{nodeName}";

/// Network settings for the individual members of a node-local pool.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeLocalPoolNetwork {
    /// RPC address each member advertises, written as a `host:port` template that must contain
    /// `{nodeName}`, which is replaced by the Kubernetes Node name (e.g.
    /// `{nodeName}.garage.example.org:3901`). The result is also stored in the member's
    /// `rpc-address:` layout tag.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_public_addr_template: Option<String>,
}

/// Pod settings for node-local pool members. Which Nodes run a member is decided only by the pool's
/// selector, so there is no node selector here and required node affinity is refused.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplate {
    /// Affinity for pool pods. Required node affinity
    /// (`requiredDuringSchedulingIgnoredDuringExecution`) is rejected because it would quietly
    /// narrow the pool's membership.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Security context of the Garage container in pool pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_security_context: Option<SecurityContext>,
    /// Additional environment variables for the Garage container (at most 256). Names carrying the
    /// config file path or RPC, admin or metrics credentials are reserved: the operator relies on
    /// its own rendered config and pinned Secrets for node identity and safe drains.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxItems" = 256, "x-kubernetes-validations" = [{"message": "GARAGE_CONFIG_FILE is operator-reserved", "rule": "self.all(e, e.name != 'GARAGE_CONFIG_FILE')"}]))]
    pub env: Option<Vec<EnvVar>>,
    /// Additional environment sources for the Garage container. A source's prefix must not be able
    /// to produce an operator-reserved variable name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Vec<EnvFromSource>>,
    /// Additional annotations for pool pods; operator-reserved `garage.rajsingh.info/` keys are
    /// rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// Additional labels for pool pods; operator-reserved keys are rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_labels: Option<BTreeMap<String, String>>,
    /// PriorityClass for pool pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// CPU and memory requests and limits for the Garage container in pool pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Pod-level security context for pool pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurityContext>,
    /// Tolerations for pool pods, e.g. to run on tainted storage Nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Topology spread constraints for pool pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
}

/// How a node-local HostPath directory is checked before it is mounted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum HostPathType {
    /// The directory must already exist and contain a `.garage-volume-id` marker file. Recommended
    /// for real deployments.
    Directory,
    /// A missing directory is created and no marker file is needed. Meant for tests or disposable
    /// storage.
    DirectoryOrCreate,
}
