//! Desired-state types for the legacy `v1alpha1` GarageBucket schema, still served for older
//! clients. It shares quotas, website and alias types with `v1beta1`.

use super::GarageBucketStatus;
use crate::common::ClusterReference;
use crate::garage_bucket::BucketQuotas;
use crate::garage_bucket::LocalAlias;
use crate::garage_bucket::WebsiteSpec;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired bucket configuration in the older `v1alpha1` shape. Lacks `bucketId` and
/// `lifecycle`, and refers to keys by plain name.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "garage.rajsingh.info",
    version = "v1alpha1",
    kind = "GarageBucket",
    namespaced,
    status = "GarageBucketStatus",
    shortname = "gb",
    category = "garage",
    doc = "The historical GarageBucket schema, still served; objects are stored as v1beta1.",
    storage = false,
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.clusterRef.name"}"#,
    printcolumn = r#"{"name":"Alias","type":"string","jsonPath":".status.globalAlias"}"#,
    printcolumn = r#"{"name":"Size","type":"string","jsonPath":".status.size"}"#,
    printcolumn = r#"{"name":"Objects","type":"integer","jsonPath":".status.objectCount"}"#,
    printcolumn = r#"{"name":"Website","type":"boolean","jsonPath":".status.websiteEnabled"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct GarageBucketSpec {
    /// The GarageCluster that hosts this bucket. Cannot be changed after creation.
    pub cluster_ref: ClusterReference,
    /// Cluster-wide bucket name usable by any authorized key. When empty, the object's
    /// `metadata.name` is used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_alias: Option<String>,
    /// GarageKeys allowed to use this bucket and what each may do. These grants combine with
    /// any `bucketPermissions` declared on the GarageKey side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_permissions: Option<Vec<KeyPermission>>,
    /// Extra bucket names that are visible only to one particular GarageKey.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_aliases: Option<Vec<LocalAlias>>,
    /// Size and object-count limits for the bucket. Omit for no limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quotas: Option<BucketQuotas>,
    /// Static website hosting for the bucket (enable flag plus index and error documents).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website: Option<WebsiteSpec>,
}

/// Access granted on this bucket to one GarageKey, identified by name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyPermission {
    /// Name of a GarageKey in the bucket's namespace.
    pub key_ref: String,
    /// Grant owner (bucket administration) rights.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<bool>,
    /// Grant permission to list and download objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<bool>,
    /// Grant permission to upload and delete objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<bool>,
}
