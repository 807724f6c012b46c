//! Peer discovery settings that let Garage nodes find each other automatically, through
//! Kubernetes custom resources or a Consul service catalog.

use k8s_openapi::api::core::v1::SecretKeySelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Optional automatic peer discovery mechanisms, used in addition to bootstrap peers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryConfig {
    /// Discovery through a Consul service registry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consul: Option<ConsulDiscoveryConfig>,
    /// Discovery through custom resources that Garage publishes in the Kubernetes API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<KubernetesDiscoveryConfig>,
}

/// Registers each Garage node's RPC endpoint in Consul and finds peers there.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsulDiscoveryConfig {
    /// Which Consul API Garage uses to register its service: `catalog` (default) or `agent`.
    /// Client certificates can only be used with `catalog`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "catalog"))]
    pub api: Option<ConsulApi>,
    /// Legacy inline CA certificate. No longer accepted; provide the CA via `caCertSecretRef`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ca_cert: Option<String>,
    /// Secret key containing the CA certificate used to verify the Consul server over TLS.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub ca_cert_secret_ref: Option<SecretKeySelector>,
    /// Secret key containing the client certificate for mutual TLS with Consul. Must be given
    /// together with `clientKeySecretRef`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub client_cert_secret_ref: Option<SecretKeySelector>,
    /// Secret key containing the private key matching `clientCertSecretRef`. Must be given
    /// together with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub client_key_secret_ref: Option<SecretKeySelector>,
    /// Consul datacenters to search for peers when Consul is federated across a WAN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub datacenters: Option<Vec<String>>,
    /// Turns Consul discovery on. The other settings are only checked when this is true.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// URL of the Consul HTTP API including scheme, e.g. `https://consul.example:8501`.
    /// Required when enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_addr: Option<String>,
    /// Extra key/value metadata attached to the registered service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<BTreeMap<String, String>>,
    /// Consul service name under which nodes register their RPC address and look up peers.
    /// Required when enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Extra tags attached to the registered service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Disables verification of the Consul server's TLS host name. Use only for testing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_skip_verify: Option<bool>,
    /// Secret key containing a Consul ACL token; the key name falls back to `token` when left
    /// empty. The operator reads the value and places it in the generated Garage configuration.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub token_secret_ref: Option<SecretKeySelector>,
}

/// Lets Garage advertise its nodes as custom resources in the Kubernetes API and discover
/// peers by listing them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubernetesDiscoveryConfig {
    /// Turns Kubernetes-based discovery on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Namespace in which Garage writes and reads its discovery resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Identifier stored as a label on the discovery resources, so that only peers of the same
    /// Garage cluster are picked up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// When true, Garage does not install or update its discovery CRD itself; the CRD must
    /// then already exist in the cluster.
    #[serde(rename = "skipCRD", skip_serializing_if = "Option::is_none")]
    pub skip_crd: Option<bool>,
}

/// Consul API that Garage uses to register nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ConsulApi {
    /// Register nodes directly in the Consul catalog.
    #[serde(rename = "catalog")]
    Catalog,
    /// Register nodes through the local Consul agent's service API.
    #[serde(rename = "agent")]
    Agent,
}
