//! Remote Garage sites that a v1beta2 GarageCluster federates its storage layout with, and
//! how the operator reaches them.

use k8s_openapi::api::core::v1::SecretKeySelector;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Garage site running in another Kubernetes cluster whose layout is shared with this cluster's
/// storage tier.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteClusterConfig {
    /// How the operator reaches the remote site's Admin API and the RPC endpoints of its pods.
    pub connection: RemoteClusterConnection,
    /// Not supported: accepted by the schema only for compatibility and rejected when set. The
    /// capacity of remote roles is always taken from the remote site's own layout.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub default_capacity: Option<Quantity>,
    /// Short name of the remote site, unique within `remoteClusters`. It also marks the layout
    /// entries imported from that site so they can be cleaned up later.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Garage zone of the remote site's nodes; each listed site needs a different zone.
    #[schemars(extend("minLength" = 1))]
    pub zone: String,
}

/// Connection details for a remote Garage site.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteClusterConnection {
    /// Base URL of the remote Admin API, e.g. `https://garage-admin.example.com:3903`. Must be an
    /// absolute http or https URL with a host; a path is allowed, but user info, query and fragment
    /// are not.
    #[schemars(extend("minLength" = 1))]
    pub admin_api_endpoint: String,
    /// Secret key holding the bearer token for the remote Admin API. When omitted, this cluster's
    /// own admin token is used, which suits sites that share one token.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub admin_token_secret_ref: Option<SecretKeySelector>,
    /// `host:port` template for dialing each remote gateway pod individually; `{ordinal}` becomes
    /// the pod's index, read from the pod-name tag of its layout role (e.g.
    /// `paris-gw-{ordinal}.example.net:3901`).
    ///
    /// Set it whenever the remote site's gateways are part of the layout. Fully replicated tables
    /// such as keys and buckets need a quorum over all nodes, remote gateways included; if those
    /// gateways cannot be reached, operations like key lookups, key deletion and other such writes
    /// can stall.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway_rpc_endpoint_template: Option<String>,
    /// `host:port` template for dialing each remote storage pod individually; `{ordinal}` becomes
    /// the pod's index from the pod-name tag of its layout role (e.g.
    /// `paris-store-{ordinal}.example.net:3901`).
    ///
    /// Use it when several remote storage pods share one hostname: otherwise every remote storage
    /// node is dialed at that single address and only one of them is reached. Pair it with an
    /// `{ordinal}`-based `spec.storage.rpcPublicAddr` on the remote site so each pod is both
    /// advertised and dialed under its own name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_rpc_endpoint_template: Option<String>,
}
