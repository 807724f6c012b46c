//! Inter-node RPC networking for Garage and the Kubernetes Service that exposes the
//! cluster's APIs.

use k8s_openapi::api::core::v1::SecretKeySelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// RPC settings used between Garage nodes, plus the client-facing Service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkConfig {
    /// Nodes contacted at startup to join the cluster, each as
    /// `<64-hex node id>@<host>:<port>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap_peers: Option<Vec<String>>,
    /// Explicit RPC listen address, which must be a wildcard IP plus port (`0.0.0.0:<port>` or
    /// `[::]:<port>`). Its port takes precedence over `rpcBindPort`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_bind_address: Option<String>,
    /// When true, outgoing RPC connections are bound to the same IP as the RPC listener.
    /// Defaults to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_bind_outgoing: Option<bool>,
    /// TCP port Garage nodes use to talk to each other (default 3901). Must differ from the API
    /// listener ports.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3901, "minimum" = 1, "maximum" = 65535))]
    pub rpc_bind_port: Option<i32>,
    /// How long a node waits for a reply to a liveness ping before counting the peer as
    /// unresponsive, as a duration such as `5s` (at least 1ms). Garage's default applies when
    /// unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_ping_timeout: Option<String>,
    /// `host:port` that storage nodes announce to their peers as their RPC address. The gateway
    /// tier is configured separately through `spec.gateway.rpcPublicAddr`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_public_addr: Option<String>,
    /// CIDR range; when the RPC address is detected automatically, only an address inside this
    /// subnet is advertised.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_public_addr_subnet: Option<String>,
    /// Secret key holding the RPC secret (32 bytes, hex-encoded) that every node must share;
    /// the key defaults to `rpc-secret`. If omitted, the operator generates one. The source
    /// chosen at creation cannot be changed afterwards.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub rpc_secret_ref: Option<SecretKeySelector>,
    /// Upper bound on the duration of a single RPC call, e.g. `30s` (at least 1ms). Garage's
    /// default applies when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rpc_timeout: Option<String>,
    /// Shape of the Kubernetes Service that fronts the cluster's APIs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceConfig>,
}

/// Options for the Kubernetes Service the operator creates in front of the cluster's APIs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceConfig {
    /// Extra annotations for the Service, for example load-balancer controller settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// `Cluster` or `Local`; controls whether external traffic may be forwarded to pods on other
    /// nodes. Only allowed with the `LoadBalancer` or `NodePort` types.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external_traffic_policy: Option<String>,
    /// Extra labels for the Service. Labels set by the operator win if a key collides.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Fixed IP to request from the load-balancer implementation. Only allowed with type
    /// `LoadBalancer`.
    #[serde(rename = "loadBalancerIP", skip_serializing_if = "Option::is_none")]
    pub load_balancer_ip: Option<String>,
    /// Client CIDR ranges allowed to reach the load balancer. Only allowed with type
    /// `LoadBalancer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_balancer_source_ranges: Option<Vec<String>>,
    /// Service type: `ClusterIP` (default), `NodePort` or `LoadBalancer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "ClusterIP"))]
    pub type_: Option<ServiceType>,
}

/// How the cluster's API Service is exposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ServiceType {
    /// Reachable only from inside the Kubernetes cluster.
    ClusterIP,
    /// Additionally exposed on a static port of every Kubernetes node.
    NodePort,
    /// Additionally exposed through an external load balancer provisioned by the platform.
    LoadBalancer,
}
