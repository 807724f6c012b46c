//! Root spec of the v1beta2 GarageCluster custom resource: image and tier selection, Garage
//! daemon settings, and the layout, federation and deletion options.

use super::GarageClusterStatus;
use super::GatewaySpec;
use super::RemoteClusterConfig;
use super::StorageSpec;
use crate::common::LoggingConfig;
use crate::common::MaintenanceConfig;
use crate::common::PublicEndpointConfig;
use crate::common::ZoneSource;
use crate::garage_cluster::common::AdminConfig;
use crate::garage_cluster::common::BlockConfig;
use crate::garage_cluster::common::ConnectToConfig;
use crate::garage_cluster::common::DatabaseConfig;
use crate::garage_cluster::common::DeletionPolicy;
use crate::garage_cluster::common::DiscoveryConfig;
use crate::garage_cluster::common::K2vApiConfig;
use crate::garage_cluster::common::LayoutManagementConfig;
use crate::garage_cluster::common::LayoutPolicy;
use crate::garage_cluster::common::MonitoringSpec;
use crate::garage_cluster::common::NetworkConfig;
use crate::garage_cluster::common::ReplicationConfig;
use crate::garage_cluster::common::S3ApiConfig;
use crate::garage_cluster::common::SecurityConfig;
use crate::garage_cluster::common::WebApiConfig;
use crate::garage_cluster::common::WorkersConfig;
use k8s_openapi::api::core::v1::LocalObjectReference;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a GarageCluster.
///
/// `storage`, `gateway` and `connectTo` are all optional, but only these combinations are
/// accepted:
///
/// 1. `storage` alone: a storage cluster whose nodes hold object blocks (an optional default
///    StatefulSet/PVC group, node-local pools and/or Manual GarageNodes).
/// 2. `storage` and `gateway`: a unified cluster that additionally runs gateway nodes, which
///    serve requests but keep no blocks. This is the usual setup.
/// 3. `gateway` and `connectTo`: an edge gateway whose pods run here but join a storage
///    cluster managed somewhere else.
/// 4. `connectTo` alone: a management handle. No pods are run; the operator only uses the
///    Admin API of an existing Garage cluster (buckets, keys, layout).
///
/// `storage` may not be combined with `connectTo`. To link storage sites that are managed
/// separately, list them in `remoteClusters`.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "garage.rajsingh.info",
    version = "v1beta2",
    kind = "GarageCluster",
    namespaced,
    status = "GarageClusterStatus",
    shortname = "gc",
    category = "garage",
    doc = "A Garage object store: its storage and gateway tiers, the settings of every Garage process and how the operator manages the cluster layout.",
    scale(
        spec_replicas_path = ".spec.storage.replicas",
        status_replicas_path = ".status.scaleReplicas",
        label_selector_path = ".status.scaleSelector"
    ),
    printcolumn = r#"{"name":"Storage","type":"integer","jsonPath":".status.storageReplicas"}"#,
    printcolumn = r#"{"name":"Gateway","type":"integer","jsonPath":".status.gatewayReplicas"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas"}"#,
    printcolumn = r#"{"name":"Zone","type":"string","jsonPath":".spec.zone"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Diagnosis","type":"string","jsonPath":".status.layoutDiagnosis","priority":1}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "at least one of spec.storage, spec.gateway, or spec.connectTo must be set", "rule": "has(self.storage) || has(self.gateway) || has(self.connectTo)"}, {"message": "spec.gateway requires either spec.storage (unified cluster) or spec.connectTo (edge gateway)", "rule": "!has(self.gateway) || has(self.storage) || has(self.connectTo)"}]))]
pub struct GarageClusterSpec {
    /// Admin API listener, the token the operator uses to manage buckets, keys and the layout, and
    /// the optional token protecting the `/metrics` endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin: Option<AdminConfig>,
    /// Tuning of Garage's block store: block size, RAM buffer, read and write concurrency,
    /// compression and scrubbing. Anything left unset keeps Garage's own default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocks: Option<BlockConfig>,
    /// Garage cluster running elsewhere that this object attaches to. Needed for an edge gateway
    /// (`gateway` without `storage`) and the only content of a management handle; not allowed
    /// together with `storage`. The chosen target cannot be switched after creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_to: Option<ConnectToConfig>,
    /// Engine of Garage's metadata database (`lmdb` unless set) and its size/cache tuning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<DatabaseConfig>,
    /// Extra Garage layout tags put on every node the operator creates by itself (only with the
    /// `Auto` layout policy). Tags must not start with an operator-reserved prefix such as
    /// `cluster:`, `tier:` or `node-local-pool:`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_node_tags: Option<Vec<String>>,
    /// How the Garage layout is handled when this object is deleted. `Destroy` tears down the whole
    /// store and does not try to empty the layout first. `Drain` takes this site out of a federated
    /// layout and holds deletion until its roles have moved to the remaining sites and layout
    /// history has settled; it requires `remoteClusters`, the `consistent` consistency mode and
    /// `layoutManagement.drain.unverifiedPeersPolicy: AssumeConsistent`.
    ///
    /// If unset, a standalone cluster behaves like `Destroy`, while a cluster with `remoteClusters`
    /// cannot be deleted until a policy is chosen (the controller falls back to `Drain`). HostPath
    /// data is never erased; PVCs follow `storage.pvcRetentionPolicy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<DeletionPolicy>,
    /// Automatic discovery of Garage peers through Kubernetes resources or Consul.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery: Option<DiscoveryConfig>,
    /// Gateway tier: Garage nodes that serve S3, K2V, web and Admin requests without storing object
    /// blocks. Valid together with `storage` (unified cluster) or `connectTo` (edge gateway), never
    /// with both. See the field descriptions for how each shape is deployed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::lenient::gateway"
    )]
    pub gateway: Option<GatewaySpec>,
    /// Full Garage container image reference, including tag or digest. Takes priority over
    /// `imageRepository`; when unset the operator's default Garage image is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Pull policy for Garage containers (`Always`, `IfNotPresent` or `Never`). Defaults to
    /// `IfNotPresent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "IfNotPresent"))]
    pub image_pull_policy: Option<String>,
    /// Secrets in this namespace used to authenticate to private image registries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,
    /// Replaces only the repository part of the operator's default Garage image; the tag stays the
    /// one shipped with the operator, so upgrades of the operator still move the Garage version.
    /// Has no effect when `image` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_repository: Option<String>,
    /// Turns on Garage's K2V key-value API and configures its listener. Leave unset to keep K2V
    /// disabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k2v_api: Option<K2vApiConfig>,
    /// Whether staged layout changes are applied automatically, how many healthy nodes are needed
    /// first, and how storage drains treat peers that cannot be verified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_management: Option<LayoutManagementConfig>,
    /// `Auto` (default): the operator creates GarageNodes and assigns their layout roles. `Manual`:
    /// you declare GarageNodes yourself. Governs the gateway tier and, unless
    /// `storage.layoutPolicy` overrides it, the default storage group. Changing `Manual` back to
    /// `Auto` is not allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Auto"))]
    pub layout_policy: Option<LayoutPolicy>,
    /// Garage log level (RUST_LOG syntax) and optional output to syslog or journald.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<LoggingConfig>,
    /// Maintenance switches. Setting `suspended: true` stops all reconciliation of this cluster and
    /// its GarageNodes until it is cleared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MaintenanceConfig>,
    /// Prometheus integration: optionally creates a ServiceMonitor that scrapes the admin
    /// `/metrics` endpoint (skipped when the prometheus-operator CRDs are not installed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitoring: Option<MonitoringSpec>,
    /// RPC listener and shared secret, bootstrap peers, RPC timeouts and the Kubernetes Service
    /// exposing the cluster's APIs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkConfig>,
    /// How Garage nodes in other Kubernetes clusters reach this cluster's storage nodes over RPC
    /// when federating. Only the `LoadBalancer` and `NodePort` types are accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_endpoint: Option<PublicEndpointConfig>,
    /// Garage sites in other Kubernetes clusters that share one storage layout with this cluster.
    /// Each entry needs a unique name and zone. Federation concerns the storage tier; local
    /// gateways reach remote sites through the local storage nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_clusters: Option<Vec<RemoteClusterConfig>>,
    /// Replication factor, consistency mode and zone redundancy. When omitted, a factor of 3 with
    /// `consistent` mode is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication: Option<ReplicationConfig>,
    /// Listener, region and virtual-host domain of the S3-compatible API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s3_api: Option<S3ApiConfig>,
    /// Optional relaxations of Garage's safety checks (world-readable secret files, punycode
    /// names). TLS settings are refused because Garage no longer supports RPC TLS.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security: Option<SecurityConfig>,
    /// ServiceAccount that Garage pods of both the storage and the gateway tier run as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Storage tier, i.e. the nodes that hold object blocks: an optional default group of
    /// operator-run StatefulSet/PVC nodes, plus any node-local pools, alongside which Manual
    /// GarageNodes may also exist. Leave unset for an edge gateway or management handle.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageSpec>,
    /// Static website endpoint. When omitted it is enabled with the root domain
    /// `.<name>.<namespace>.svc`; set `enabled: false` to turn it off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_api: Option<WebApiConfig>,
    /// Tuning of Garage background workers (scrub and resync throttling, resync parallelism),
    /// pushed through the Admin API on every reconcile. Unset values keep Garage's defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkersConfig>,
    /// Garage layout zone assigned to this cluster's nodes (`default` when empty). With `zoneFrom`,
    /// this value is only the fallback used before a pod is scheduled or when its Node lacks the
    /// label, so members may then end up in several zones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Takes each operator-managed storage node's zone from a label of the Kubernetes Node its pod
    /// runs on (for example `topology.kubernetes.io/zone` or a rack label). One cluster can thus
    /// span several failure domains that zone redundancy can use, without federation.
    ///
    /// Covers default-group and node-local pool members but not gateways. `zone` is used until the
    /// pod is scheduled or when the label is missing; if the Node cannot be read, reconciliation
    /// stops instead of guessing. Requires a cluster-wide operator installation, and cannot be
    /// combined with node-local pools in a federated cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_from: Option<ZoneSource>,
}
