//! Settings for attaching a GarageCluster to an existing remote Garage storage cluster, as
//! an edge gateway or as a management-only handle.

use crate::common::ClusterReference;
use k8s_openapi::api::core::v1::SecretKeySelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Identifies the storage cluster this resource joins or manages. Needed for an edge
/// gateway (a `gateway` without `storage`) and for a management handle (`connectTo` alone);
/// cannot be combined with `storage`. At least one field must be set, and the target chosen
/// at creation cannot be switched later.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectToConfig {
    /// Absolute http(s) URL of the remote cluster's Admin API, without credentials, query or
    /// fragment. A management handle needs it together with `adminTokenSecretRef` unless
    /// `clusterRef` is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_api_endpoint: Option<String>,
    /// Secret key holding an Admin API token that is valid on the remote cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub admin_token_secret_ref: Option<SecretKeySelector>,
    /// Remote nodes to contact first, each written as `<64-hex node id>@<host>:<port>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap_peers: Option<Vec<String>>,
    /// A GarageCluster in this same namespace to attach to; its RPC secret and admin token are
    /// reused automatically. The namespace must be empty or equal to this resource's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_ref: Option<ClusterReference>,
    /// Secret key holding the remote cluster's shared RPC secret, so gateway pods can join it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub rpc_secret_ref: Option<SecretKeySelector>,
}
