//! Spec of the deprecated v1beta1 GarageCluster, a flat shape in which one group of pods is either
//! a storage cluster or, with `gateway: true`, an edge gateway. The API server converts it to and
//! from v1beta2.

use super::GarageClusterStatus;
use super::RemoteClusterConfig;
use super::StorageConfig;
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
use crate::garage_cluster::common::PodDisruptionBudgetConfig;
use crate::garage_cluster::common::ReplicationConfig;
use crate::garage_cluster::common::S3ApiConfig;
use crate::garage_cluster::common::SecurityConfig;
use crate::garage_cluster::common::WebApiConfig;
use crate::garage_cluster::common::WorkersConfig;
use k8s_openapi::api::core::v1::Affinity;
use k8s_openapi::api::core::v1::LocalObjectReference;
use k8s_openapi::api::core::v1::PodSecurityContext;
use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::api::core::v1::SecurityContext;
use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Desired state of a GarageCluster in the flat v1beta1 shape. Pod scheduling, replica count and
/// disruption settings sit at the top level and apply to whichever tier the object describes.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "garage.rajsingh.info",
    version = "v1beta1",
    kind = "GarageCluster",
    namespaced,
    status = "GarageClusterStatus",
    shortname = "gc",
    category = "garage",
    doc = "The deprecated flat shape of a GarageCluster. The API server converts it to and from v1beta2 through the operator webhook; use v1beta2 for new manifests.",
    storage = false,
    deprecated = "garage.rajsingh.info/v1beta1 GarageCluster is deprecated; migrate to garage.rajsingh.info/v1beta2",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.scaleReplicas",
        label_selector_path = ".status.scaleSelector"
    ),
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyReplicas"}"#,
    printcolumn = r#"{"name":"Zone","type":"string","jsonPath":".spec.zone"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "connectTo is required when gateway is true", "rule": "!has(self.gateway) || !self.gateway || has(self.connectTo)"}, {"message": "connectTo can only be specified when gateway is true", "rule": "(has(self.gateway) && self.gateway) || !has(self.connectTo)"}]))]
pub struct GarageClusterSpec {
    /// Admin API listener and the secrets holding the operator's admin token and the metrics token.
    /// Identical to v1beta2 `spec.admin`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin: Option<AdminConfig>,
    /// Affinity and anti-affinity rules for the Garage pods. In v1beta2 this moves to the pod
    /// template of the active tier (`storage` or `gateway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Tuning of Garage's block store, such as block size, RAM buffer, read/write concurrency,
    /// compression level and scrubbing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blocks: Option<BlockConfig>,
    /// Share of each data volume, from 0 to 50 percent, left out of the capacity reported to Garage
    /// so there is headroom for filesystem overhead, snapshots or growth; 10 reports 90% of the
    /// volume size. Used only with the Auto layout policy; unset means 0. Not allowed when
    /// `gateway` is true. Maps to v1beta2 `storage.capacityReservePercent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0, "maximum" = 50))]
    pub capacity_reserve_percent: Option<i64>,
    /// The storage cluster a gateway joins. The gateway reuses that cluster's RPC secret, dials its
    /// nodes and registers its own pods in that cluster's layout as capacity-less roles. Must be
    /// set when `gateway` is true and left unset otherwise (a tier-less management handle created
    /// through v1beta2 also shows it here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_to: Option<ConnectToConfig>,
    /// Security context of the Garage container. In v1beta2 this moves to the pod template of the
    /// active tier (`storage` or `gateway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_security_context: Option<SecurityContext>,
    /// Metadata database engine (`lmdb` by default, `sqlite` or `fjall`) and its cache or map
    /// sizing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<DatabaseConfig>,
    /// Additional Garage layout tags given to every node the operator places in the layout. Only
    /// used with the Auto layout policy; with Manual, set tags on each GarageNode instead.
    /// Operator-owned prefixes such as `cluster:` or `tier:` are not allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_node_tags: Option<Vec<String>>,
    /// What happens to Garage data when this resource is deleted: `Destroy` tears down the whole
    /// store, `Drain` removes this site from a federation only after its data has moved to the
    /// surviving sites. If unset, a standalone cluster is destroyed, while a cluster with
    /// `remoteClusters` is handled as `Drain` and must be given an explicit value before it can be
    /// deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<DeletionPolicy>,
    /// Automatic peer discovery through the Kubernetes API or Consul.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub discovery: Option<DiscoveryConfig>,
    /// Set to true to run an edge gateway rather than a storage cluster. Gateway pods answer API
    /// requests but hold no object data: each keeps a small metadata volume for its node identity,
    /// uses an EmptyDir for data, and joins the layout of the `connectTo` cluster without capacity.
    /// Requires `connectTo`. Defaults to false. True maps to v1beta2 `spec.gateway`, false to
    /// `spec.storage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<bool>,
    /// Complete Garage container image reference. Wins over `imageRepository`; when neither is set,
    /// the operator's default Garage image is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// When the kubelet pulls the Garage image: `Always`, `IfNotPresent` or `Never`. Defaults to
    /// `IfNotPresent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "IfNotPresent"))]
    pub image_pull_policy: Option<String>,
    /// Secrets with credentials for pulling the Garage image from a private registry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,
    /// Replaces only the repository part of the operator's default image and keeps its tag, so the
    /// cluster still follows the default Garage version; `mirror.example/garage` becomes
    /// `mirror.example/garage:<default tag>`. Has no effect when `image` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_repository: Option<String>,
    /// Listener for Garage's K2V key/value API. K2V is enabled only when this block is present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k2v_api: Option<K2vApiConfig>,
    /// How and when staged layout changes are applied, the number of healthy nodes required first,
    /// and the drain safety policy. Without `autoApply`, stale gateway roles are only reported and
    /// must be removed with the Garage CLI or by enabling `autoApply`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout_management: Option<LayoutManagementConfig>,
    /// Who decides layout membership. `Auto` (default): the operator places every pod it runs,
    /// using `zone` and a capacity derived from the data volume size, with no GarageNode objects
    /// needed. `Manual`: only nodes declared as GarageNode resources are placed, which allows
    /// custom zones, capacities and external nodes. Going from Manual back to Auto is not allowed.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Auto"))]
    pub layout_policy: Option<LayoutPolicy>,
    /// Garage log level (RUST_LOG syntax) and whether to log to syslog or journald.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logging: Option<LoggingConfig>,
    /// Maintenance controls; `suspended: true` stops reconciliation of this cluster and its
    /// GarageNodes until cleared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maintenance: Option<MaintenanceConfig>,
    /// Prometheus integration, such as creating a ServiceMonitor for the admin metrics endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub monitoring: Option<MonitoringSpec>,
    /// RPC networking (ports, advertised address, shared RPC secret, bootstrap peers, timeouts) and
    /// the Service exposing the APIs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkConfig>,
    /// Node labels the Garage pods must match to be scheduled. In v1beta2 this moves to the pod
    /// template of the active tier (`storage` or `gateway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Additional annotations on the Garage pods. In v1beta2 this moves to the pod template of the
    /// active tier (`storage` or `gateway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// Creates a PodDisruptionBudget for the Garage pods so voluntary evictions, such as node
    /// drains, rollouts or autoscaler scale-downs, remove them gradually. No budget is created when
    /// omitted. Maps to v1beta2 `storage.podDisruptionBudget`, or `gateway.podDisruptionBudget` for
    /// a gateway.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetConfig>,
    /// Additional labels on the Garage pods. Keys the operator relies on, such as
    /// `app.kubernetes.io/name` or `garage.rajsingh.info/cluster`, are refused. In v1beta2 this
    /// moves to the pod template of the active tier (`storage` or `gateway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_labels: Option<BTreeMap<String, String>>,
    /// PriorityClass assigned to the Garage pods. In v1beta2 this moves to the pod template of the
    /// active tier (`storage` or `gateway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// How Garage nodes in other Kubernetes clusters reach this cluster's pods over RPC
    /// (`LoadBalancer` or `NodePort`). Needed when federating with `remoteClusters`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_endpoint: Option<PublicEndpointConfig>,
    /// Garage sites in other Kubernetes clusters to federate with. The operator reads each site's
    /// nodes through its Admin API, merges them into a single shared layout and keeps that layout
    /// up to date as nodes change. All sites must use the same RPC secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_clusters: Option<Vec<RemoteClusterConfig>>,
    /// Number of pods in the operator-managed group: storage nodes, or gateway pods when `gateway`
    /// is true. 0 disables that group without affecting Manual GarageNodes or node-local pools
    /// preserved from v1beta2. Between 0 and 50, default 3. Used by the `/scale` subresource; maps
    /// to v1beta2 `storage.replicas` or `gateway.replicas`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    #[schemars(extend("default" = 3, "minimum" = 0))]
    pub replicas: Option<i32>,
    /// Replication factor, consistency mode and zone redundancy. When omitted, a factor of 3 with
    /// `consistent` mode is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replication: Option<ReplicationConfig>,
    /// CPU and memory requests and limits for the Garage container. In v1beta2 this moves to the
    /// pod template of the active tier (`storage` or `gateway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Listener of the S3-compatible API: port, region and root domain for virtual-hosted-style
    /// requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s3_api: Option<S3ApiConfig>,
    /// Garage security options, such as tolerating world-readable secret files or allowing punycode
    /// names. TLS settings are not supported and are rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security: Option<SecurityConfig>,
    /// Pod-level security context of the Garage pods. In v1beta2 this moves to the pod template of
    /// the active tier (`storage` or `gateway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurityContext>,
    /// ServiceAccount the Garage pods run as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// Volumes and Garage storage options. A storage cluster needs a data volume (or an EmptyDir);
    /// omitted metadata falls back to a 10Gi claim for storage pods and 1Gi for gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage: Option<StorageConfig>,
    /// Taints the Garage pods tolerate. In v1beta2 this moves to the pod template of the active
    /// tier (`storage` or `gateway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// How the Garage pods are spread across zones, nodes or other topology domains. In v1beta2
    /// this moves to the pod template of the active tier (`storage` or `gateway`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
    /// Listener for static website hosting. Enabled by default with the root domain
    /// `.<name>.<namespace>.svc`; set `enabled: false` to turn it off.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub web_api: Option<WebApiConfig>,
    /// Values for Garage background worker variables (for example scrub tranquility), pushed to
    /// every node through the Admin API on each reconcile. Fields left unset keep Garage's
    /// defaults.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkersConfig>,
    /// Garage layout zone for this cluster's nodes, and the fallback when `zoneFrom` cannot resolve
    /// one. Garage spreads replicas across zones, so give each failure domain its own value, e.g.
    /// `dc1` or `rack-a`. If empty, the zone `default` is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// Derive each storage node's zone from a label on the Kubernetes Node running its pod, instead
    /// of using one `zone` for all; `zone` remains the fallback. Not applied to gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone_from: Option<ZoneSource>,
}
