//! Federation settings of the deprecated v1beta1 GarageCluster: the Garage sites running in
//! other Kubernetes clusters whose nodes share this cluster's layout, and how to reach them.

use k8s_openapi::api::core::v1::SecretKeySelector;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Garage site hosted in a different Kubernetes cluster that this cluster federates with.
/// Carried over unchanged to v1beta2 `spec.remoteClusters[]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteClusterConfig {
    /// How the operator reaches the remote site's Admin API (and, optionally, its gateways).
    pub connection: RemoteClusterConnection,
    /// Accepted only for compatibility and rejected by admission if set. The capacity of
    /// remote roles always comes from the remote site's own layout and cannot be overridden.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub default_capacity: Option<Quantity>,
    /// Human-readable identifier of the remote site. Must be non-blank and unique within the
    /// list; the operator also uses it to tag what it manages for that site.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Garage layout zone the remote site's nodes belong to. Must be non-blank and distinct
    /// for every remote site.
    #[schemars(extend("minLength" = 1))]
    pub zone: String,
}

/// Endpoints and credentials used to talk to a remote Garage site. Unlike v1beta2, there is
/// no `storageRpcEndpointTemplate` here; a value set through v1beta2 is lost if the object
/// is written back through v1beta1.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteClusterConnection {
    /// Absolute http:// or https:// URL of the remote site's Admin API, reachable from this
    /// cluster (for instance over a VPN, LoadBalancer or tunnel), such as
    /// `http://garage-remote.example.net:3903`. A path is allowed; credentials, query and
    /// fragment are not.
    #[schemars(extend("minLength" = 1))]
    pub admin_api_endpoint: String,
    /// Secret key holding the bearer token for the remote Admin API. When omitted, the local
    /// cluster's admin token is used, which suits sites that share one token.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub admin_token_secret_ref: Option<SecretKeySelector>,
    /// `host:port` pattern for dialing each remote gateway pod over RPC; `{ordinal}` is
    /// substituted with the pod's ordinal (0, 1, ...), e.g. `site-b-gw-{ordinal}.example:3901`.
    /// Needed for this cluster to reach the remote gateways.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_rpc_endpoint_template: Option<String>,
}
