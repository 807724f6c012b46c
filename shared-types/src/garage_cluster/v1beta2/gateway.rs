//! Gateway-tier settings of GarageCluster v1beta2, used by unified clusters and edge gateways.

use crate::garage_cluster::common::PodDisruptionBudgetConfig;
use crate::garage_cluster::common::PvcRetentionPolicy;
use crate::garage_cluster::common::VolumeConfig;
use k8s_openapi::api::core::v1::Affinity;
use k8s_openapi::api::core::v1::EnvFromSource;
use k8s_openapi::api::core::v1::EnvVar;
use k8s_openapi::api::core::v1::PodSecurityContext;
use k8s_openapi::api::core::v1::Probe;
use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::api::core::v1::SecurityContext;
use k8s_openapi::api::core::v1::Toleration;
use k8s_openapi::api::core::v1::TopologySpreadConstraint;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Settings of the gateway tier. Gateways serve client and Admin API traffic and hold a layout role
/// without capacity, so they never store object blocks. In an `Auto` unified cluster each replica
/// is its own GarageNode with a single-pod StatefulSet; in a `Manual` unified cluster you create
/// the gateway GarageNodes yourself; an edge gateway runs as one StatefulSet for the whole cluster.
/// Requires either `storage` or `connectTo`, not both.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpec {
    /// Affinity rules for gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Security context of the Garage container in gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_security_context: Option<SecurityContext>,
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
    /// Volume holding each gateway's identity key and metadata, for `Auto` unified and edge
    /// gateways. Defaults to a 1Gi PVC; choosing EmptyDir means a gateway gets a new identity after
    /// every restart. Rejected when `spec.layoutPolicy` is `Manual` (gateways are then your own
    /// GarageNodes); `paths` and `volumeClaimTemplateSpec` are not supported, and `selector` only
    /// affects claims created afterwards.
    ///
    /// For an edge gateway, change this only after scaling `replicas` to 0 and waiting for the old
    /// gateway roles to leave the layout. Gateway data directories always use EmptyDir.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<VolumeConfig>,
    /// Node selector for gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Additional annotations for gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// PodDisruptionBudget for gateway pods. Gateways hold no object data, so it only protects
    /// request availability during voluntary disruptions. Not created while `replicas` is 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_disruption_budget: Option<PodDisruptionBudgetConfig>,
    /// Additional labels for gateway pods; operator-reserved keys are rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_labels: Option<BTreeMap<String, String>>,
    /// PriorityClass for gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Whether gateway metadata PVCs are kept or removed when their StatefulSet is deleted or
    /// scaled down. If unset, edge gateways remove them (`Delete`/`Delete`) while unified gateways
    /// keep them (`Retain`/`Retain`); an explicit value applies to both.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pvc_retention_policy: Option<PvcRetentionPolicy>,
    /// Replaces the default readiness probe of gateway pods, which only checks that the S3 port
    /// accepts TCP connections. The default deliberately avoids the admin `/health` endpoint: it
    /// reflects cluster-wide write quorum, so losing a single storage node (for example with
    /// replication factor 2) would mark every gateway unready and cut off reads that could still
    /// succeed. Alert on `/health` instead, and set this only to a check that keeps gateways ready
    /// while they can still serve reads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readiness_probe: Option<Probe>,
    /// Number of gateways (default 2, at most 50). In an `Auto` unified cluster it is the number of
    /// generated gateway GarageNodes; for an edge gateway it is the StatefulSet's replica count. 0
    /// removes the operator-managed gateways and their layout roles. Gateway GarageNodes you
    /// declared under the `Manual` policy are not affected.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    #[schemars(extend("default" = 2, "minimum" = 0))]
    pub replicas: Option<i32>,
    /// CPU and memory requests and limits for the Garage container in gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// RPC address (`host:port`) that gateway pods advertise as Garage's `rpc_public_addr`, so
    /// peers in other regions can reach them by name. In a unified cluster `{ordinal}` is replaced
    /// by each gateway's index. Needed when federated peers cannot route to pod IPs; leave unset
    /// when gateways only talk to a storage tier they can reach directly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_public_addr: Option<String>,
    /// Pod-level security context for gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurityContext>,
    /// Tolerations for gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    /// Topology spread constraints for gateway pods.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
}
