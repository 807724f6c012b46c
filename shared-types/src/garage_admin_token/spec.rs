//! Desired-state types for the `GarageAdminToken` custom resource (`v1beta1`), which issues a
//! static Garage Admin API bearer token into a Kubernetes Secret.

use super::GarageAdminTokenStatus;
use crate::common::ClusterReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Desired state of a static Admin API token. The operator writes a random bearer token to a
/// Secret, which the GarageCluster must name in `spec.admin.adminTokenSecretRef` to use it.
/// The token has unrestricted admin rights and never expires; it is not a Garage-side token
/// entry, so deleting this object does not revoke a token a running Garage already loaded.
/// Create scoped or expiring tokens through Garage's Admin API instead.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "garage.rajsingh.info",
    version = "v1beta1",
    kind = "GarageAdminToken",
    namespaced,
    status = "GarageAdminTokenStatus",
    shortname = "gat",
    category = "garage",
    doc = "A Garage Admin API token, created in Garage and written to a Kubernetes Secret.",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.clusterRef.name"}"#,
    printcolumn = r#"{"name":"TokenID","type":"string","jsonPath":".status.tokenId"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct GarageAdminTokenSpec {
    /// The GarageCluster the token is for. It must be in this object's namespace; cannot be
    /// changed after creation.
    pub cluster_ref: ClusterReference,
    /// Not supported: kept only so older manifests parse. Any value is rejected, since a
    /// static token cannot expire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Time>,
    /// Not supported: kept only so older manifests parse. Must be left empty, since no named
    /// token entry is created in Garage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Deprecated and ignored; the token never expires regardless of this value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub never_expires: Option<bool>,
    /// Controls the name, metadata and data keys of the Secret that receives the token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_template: Option<TokenSecretTemplate>,
}

/// Layout of the Secret holding the admin token. `name`, `tokenKey`, `endpointKey` and
/// `includeEndpoint` cannot be changed after creation; the two data keys must differ.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenSecretTemplate {
    /// Annotations set on the generated Secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Data key for the Admin API URL. Defaults to `admin-endpoint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "admin-endpoint"))]
    pub endpoint_key: Option<String>,
    /// Also store the cluster's in-cluster Admin API URL in the Secret. Treated as true when
    /// omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_endpoint: Option<bool>,
    /// Labels set on the generated Secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Name of the generated Secret. Defaults to the GarageAdminToken's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Data key for the bearer token. Defaults to `admin-token`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "admin-token"))]
    pub token_key: Option<String>,
}
