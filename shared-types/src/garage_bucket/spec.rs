//! Desired-state types for the `GarageBucket` custom resource (storage version `v1beta1`):
//! bucket identity, aliases, quotas, website hosting, key grants and lifecycle rules.

use super::GarageBucketStatus;
use crate::common::ClusterReference;
use crate::common::LocalObjectRef;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired configuration of a bucket in a Garage cluster managed by this operator.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "garage.rajsingh.info",
    version = "v1beta1",
    kind = "GarageBucket",
    namespaced,
    status = "GarageBucketStatus",
    shortname = "gb",
    category = "garage",
    doc = "A Garage bucket with its aliases, quotas, website settings and the keys allowed to use it.",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.clusterRef.name"}"#,
    printcolumn = r#"{"name":"Alias","type":"string","jsonPath":".status.globalAlias"}"#,
    printcolumn = r#"{"name":"Size","type":"string","jsonPath":".status.size"}"#,
    printcolumn = r#"{"name":"Objects","type":"integer","jsonPath":".status.quotaUsage.objectCount"}"#,
    printcolumn = r#"{"name":"Website","type":"boolean","jsonPath":".status.websiteEnabled"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct GarageBucketSpec {
    /// ID of an existing Garage bucket to adopt. When set, no bucket is ever created; the
    /// operator only reconciles settings and grants on that bucket, and the ID wins over any
    /// alias lookup. Handy for importing buckets or recovering them. Cannot change once bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_id: Option<String>,
    /// The GarageCluster that hosts this bucket. Referencing another namespace needs a
    /// GarageReferenceGrant there. Cannot be changed after creation.
    pub cluster_ref: ClusterReference,
    /// What deleting this GarageBucket does to the bucket in Garage. `Delete` (the default)
    /// deletes it once it is empty, and waits with `DeletionBlocked` while it holds objects;
    /// `Retain` leaves the bucket and its objects in Garage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<BucketDeletionPolicy>,
    /// Cluster-wide bucket name that any authorized key can use over S3. Defaults to the
    /// object's `metadata.name`. Must be 3-63 characters of lowercase letters, digits, `.` and
    /// `-`, beginning and ending with a letter or digit, and must not look like an IP address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_alias: Option<String>,
    /// GarageKeys that may access this bucket, each with its read/write/owner flags. Grants
    /// declared here and in a GarageKey's `bucketPermissions` have the same effect and are
    /// combined, so access can be managed from whichever side suits you. Each key may appear
    /// once and needs at least one flag set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_permissions: Option<Vec<KeyPermission>>,
    /// Lifecycle rules for the bucket: expiring objects and cleaning up stale multipart
    /// uploads. Applied through the S3 API with an operator-managed key; Garage evaluates
    /// them in a once-a-day background pass, not at reconcile time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<LifecycleConfig>,
    /// Extra bucket names that are visible only to one particular GarageKey.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_aliases: Option<Vec<LocalAlias>>,
    /// Size and object-count limits for the bucket. Omit for no limits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quotas: Option<BucketQuotas>,
    /// Static website hosting for the bucket. Only the enable flag and the index/error
    /// documents are managed here; other website settings must be set via S3 directly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website: Option<WebsiteSpec>,
}

/// Access granted on this bucket to one GarageKey.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyPermission {
    /// The GarageKey receiving access. A namespace other than the bucket's own requires a
    /// GarageReferenceGrant that explicitly lists GarageKey as a target.
    pub key_ref: LocalObjectRef,
    /// Grant owner rights: bucket-level administration such as website, CORS and lifecycle
    /// settings or deleting the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub owner: Option<bool>,
    /// Grant permission to list and download objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub read: Option<bool>,
    /// Grant permission to upload and delete objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub write: Option<bool>,
}

/// Bucket lifecycle settings. Garage implements only part of S3 lifecycle: expiring current
/// objects (by age or date) and aborting unfinished multipart uploads, filtered by key prefix
/// and object size. Tag filters and delete-marker expiry are not available.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleConfig {
    /// The complete list of rules. On every reconcile the bucket's lifecycle configuration is
    /// overwritten to match exactly this list; an empty list removes all rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<Rule>>,
}

/// One lifecycle rule. Set at least one action (`expirationDays`, `expirationDate` or
/// `abortIncompleteMultipartUploadDays`); `expirationDays` and `expirationDate` cannot be combined.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// Abort multipart uploads left unfinished for this many days or more. Minimum 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1))]
    pub abort_incomplete_multipart_upload_days: Option<i32>,
    /// Date from which current objects are deleted. Must be exactly midnight UTC. Cannot be
    /// used together with `expirationDays`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration_date: Option<Time>,
    /// Delete current objects once they are this many days old (minimum 1). Cannot be used
    /// together with `expirationDate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1))]
    pub expiration_days: Option<i32>,
    /// Restricts which objects the rule targets. Without a filter, all objects match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter: Option<Filter>,
    /// Name of the rule; required, non-empty and unique among this bucket's rules.
    #[schemars(extend("minLength" = 1))]
    pub id: String,
    /// `Enabled` (the default) or `Disabled`. A disabled rule stays configured in Garage but
    /// has no effect.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Enabled"))]
    pub status: Option<LifecycleRuleState>,
}

/// Object selection for a lifecycle rule. All conditions that are set must match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Filter {
    /// Only match objects bigger than this many bytes (exclusive). Must be below
    /// `objectSizeLessThan` when both are set.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub object_size_greater_than: Option<i64>,
    /// Only match objects smaller than this many bytes (exclusive). Minimum 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 1))]
    pub object_size_less_than: Option<i64>,
    /// Only match objects whose key begins with this string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// A bucket name private to one access key. S3 requests signed with that key can address the
/// bucket by this name; other keys do not see it. Lets tenants of a shared cluster pick their
/// own bucket names.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalAlias {
    /// Bucket name as seen by the key. Follows the same naming rules as `globalAlias` and must
    /// not clash with another local alias of the same key.
    pub alias: String,
    /// Name of the GarageKey, in this bucket's namespace, that gets the alias.
    pub key_ref: String,
}

/// Usage limits enforced by Garage on the bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BucketQuotas {
    /// Largest number of objects the bucket may contain. Must not be negative.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_objects: Option<i64>,
    /// Largest total size of the bucket's data, as a Kubernetes quantity (e.g. `10Gi`).
    /// Must not be negative.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::quantity)]
    pub max_size: Option<Quantity>,
}

/// Static website settings for a bucket. Routing rules and redirects are not managed by the
/// operator; configure them through the S3 API if needed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebsiteSpec {
    /// Serve the bucket contents as a static website through Garage's web endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Object returned when a requested page does not exist (HTTP 404).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_document: Option<String>,
    /// Object served for directory-style requests. Defaults to `index.html`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "index.html"))]
    pub index_document: Option<String>,
}

/// What deleting a GarageBucket does to its Garage bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum BucketDeletionPolicy {
    /// Delete the Garage bucket once it holds no object and no unfinished upload.
    Delete,
    /// Leave the Garage bucket and its objects in place.
    Retain,
}

/// Whether a lifecycle rule is active.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum LifecycleRuleState {
    /// The rule is evaluated and its actions are carried out.
    Enabled,
    /// The rule is kept but ignored.
    Disabled,
}
