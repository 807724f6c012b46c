//! Spec building blocks shared by several Garage resources: references to clusters, keys,
//! buckets and Secrets, logging and maintenance switches, zone derivation and public RPC
//! endpoints.

use super::PublicEndpointType;
use k8s_openapi::api::core::v1::SecretKeySelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Points at a GarageCluster by name and, optionally, namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterReference {
    /// Placeholder for reaching a cluster through another Kubernetes API server. Not
    /// supported: any value is rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub kube_config_secret_ref: Option<SecretKeySelector>,
    /// Name of the target GarageCluster.
    pub name: String,
    /// Namespace of the target GarageCluster; when empty, the namespace of the object holding
    /// the reference. Only GarageBucket and GarageKey may point to another namespace, and only
    /// if a GarageReferenceGrant there allows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Log output settings for Garage processes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoggingConfig {
    /// Also send logs to the systemd journal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journald: Option<bool>,
    /// Log filter in `RUST_LOG` syntax, e.g. `info` or `garage=debug,info`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,
    /// Also send logs to the local syslog daemon.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syslog: Option<bool>,
}

/// Switch for pausing the operator's work on a resource during manual maintenance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceConfig {
    /// When true, the operator stops reconciling the resource and leaves its workloads and
    /// layout entries untouched; suspending a GarageCluster also pauses its GarageNodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspended: Option<bool>,
}

/// How Garage nodes are made reachable over RPC from sites in other Kubernetes clusters,
/// for federating the storage tier.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicEndpointConfig {
    /// Compatibility-only field; setting it is rejected because explicit address mapping is
    /// not implemented.
    #[serde(rename = "externalIP", skip_serializing_if = "Option::is_none")]
    pub external_ip: Option<ExternalIpConfig>,
    /// Options for `type: LoadBalancer`; only allowed with that type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancerConfig>,
    /// Options for `type: NodePort`; required with that type and only allowed there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_port: Option<NodePortConfig>,
    /// Exposure mechanism. Only `LoadBalancer` and `NodePort` are accepted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub type_: Option<PublicEndpointType>,
}

/// Explicit external address mapping. Kept only for compatibility; not implemented, and any
/// value is rejected.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExternalIpConfig {
    /// Template for deriving per-node addresses. Not implemented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_template: Option<String>,
    /// Fixed per-node address map. Not implemented.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub addresses: Option<BTreeMap<String, String>>,
}

/// Settings for LoadBalancer Services used as the public RPC endpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerConfig {
    /// Extra annotations for the Service(s), e.g. cloud load-balancer options.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Extra labels for the Service(s). Labels set by the operator win if a key collides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// When true, every Garage pod gets its own LoadBalancer Service, giving each node a
    /// distinct public address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_node: Option<bool>,
}

/// Settings for exposing RPC on Kubernetes node ports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePortConfig {
    /// Extra annotations for the Service(s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// First node port to use, in 30000-32767: pod N is published on `basePort + N`.
    /// Defaults to 30901.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 30000, "maximum" = 32767))]
    pub base_port: Option<i32>,
    /// Addresses (IPs or host names) of Kubernetes nodes that remote peers can reach. At least
    /// one is required; pod N advertises entry N modulo the list length.
    pub external_addresses: Vec<String>,
    /// Extra labels for the Service(s). Labels set by the operator win if a key collides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
}

/// Takes each storage node's layout zone from a label of the Kubernetes Node its pod runs
/// on, instead of the single static `zone`. This lets one cluster model failure domains such
/// as racks or power feeds, so zone redundancy can use them without federation.
/// Only operator-managed storage nodes are affected (the default group and node-local pools);
/// gateways are not. The static `zone` is used while a pod is unscheduled or the label is
/// missing. If the Node cannot be read, reconciliation stops with an error rather than
/// quietly using the static zone. Needs a cluster-scoped operator installation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZoneSource {
    /// Node label key whose value is used as the zone, e.g. `topology.kubernetes.io/zone`
    /// (cloud availability zones), `kubernetes.io/hostname` (one zone per machine) or a custom
    /// key such as `example.com/rack`. Must be a valid label key.
    #[schemars(extend("minLength" = 1, "maxLength" = 316))]
    pub node_label: String,
}

/// Reference to another Garage resource (a GarageKey or GarageBucket) by name and,
/// optionally, namespace.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalObjectRef {
    /// Name of the referenced resource.
    pub name: String,
    /// Namespace of the referenced resource; when empty, the namespace of the object holding
    /// the reference. Another namespace only works if a GarageReferenceGrant there allows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Reference to a Kubernetes Secret by name and namespace. When used to import existing
/// credentials it cannot be combined with inline key values, and the namespace must be empty
/// or the GarageKey's own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretReference {
    /// Name of the Secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace of the Secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
