//! Observed-state types for the `GarageBucket` resource (`v1beta1`), as reported by the
//! operator from the bucket's live state in Garage.

use super::LifecycleRuleState;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the operator last observed about the bucket and its reconciliation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GarageBucketStatus {
    /// Garage's internal identifier of the bucket (hex string).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_id: Option<String>,
    /// Standard Kubernetes conditions (such as `Ready`) describing reconciliation progress.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// Time at which Garage recorded the bucket's creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
    /// Global alias currently attached to the bucket in Garage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_alias: Option<String>,
    /// Bytes held by multipart uploads that have not been completed or aborted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete_upload_bytes: Option<i64>,
    /// Number of uploaded parts belonging to unfinished multipart uploads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete_upload_parts: Option<i64>,
    /// Number of multipart uploads still in progress or abandoned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete_uploads: Option<i64>,
    /// Access keys that currently hold permissions on the bucket, with their flags.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<Vec<BucketKeyStatus>>,
    /// Lifecycle rules present on the bucket in Garage, listed by ID and state only; see
    /// `spec.lifecycle` for the full rule definitions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle_rules: Option<Vec<LifecycleRuleStatus>>,
    /// Key-scoped aliases of the bucket as seen in Garage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_aliases: Option<Vec<LocalAliasStatus>>,
    /// The global alias the operator owns for this bucket (from `spec.globalAlias`, else the
    /// object name). Tracked apart from `globalAlias` so that aliases added by other means are
    /// left untouched when the operator cleans up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_global_alias: Option<String>,
    /// Access key IDs whose grants on this bucket come from `spec.keyPermissions`. An ID is
    /// written here before Garage is changed and dropped once its grant is fully revoked, so a
    /// removed entry is revoked reliably while other grants on the bucket are left alone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_key_grants: Option<Vec<String>>,
    /// Key-scoped aliases owned by the operator through `spec.localAliases`. Entries are noted
    /// before the alias is created in Garage, so a partially applied change can be undone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_local_aliases: Option<Vec<LocalAliasStatus>>,
    /// The `metadata.generation` that the reported status corresponds to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// New global alias being switched to during a rename. The previous alias stays in
    /// `managedGlobalAlias` until this one is in place, so the bucket always keeps a name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_global_alias: Option<String>,
    /// Coarse lifecycle state of the bucket resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<BucketPhase>,
    /// Current consumption measured against the configured quotas.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota_usage: Option<QuotaUsage>,
    /// Total amount of data stored in the bucket, formatted for display.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// Index and error documents currently configured for website hosting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_config: Option<WebsiteStatus>,
    /// True when Garage is serving the bucket as a static website.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_enabled: Option<bool>,
    /// Address at which the website can be reached; set only when hosting is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

/// One access key holding permissions on the bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BucketKeyStatus {
    /// The key's access key ID (starts with `GK`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// Human-friendly name of the key in Garage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Read, write and owner flags the key holds on the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permissions: Option<KeyPermissions>,
}

/// Permission flags an access key has on a bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyPermissions {
    /// The key can administer the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<bool>,
    /// The key can read objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read: Option<bool>,
    /// The key can write and delete objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write: Option<bool>,
}

/// Summary of a lifecycle rule found on the bucket in Garage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleRuleStatus {
    /// Identifier of the rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub id: Option<String>,
    /// Whether the rule is `Enabled` or `Disabled`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub status: Option<LifecycleRuleState>,
}

/// A bucket alias that is visible to a single access key.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalAliasStatus {
    /// The alias name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// Access key ID of the key to which the alias belongs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// Human-friendly name of that key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_name: Option<String>,
}

/// Bucket usage compared with its quotas.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuotaUsage {
    /// Number of objects currently stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_count: Option<i64>,
    /// Maximum object count allowed; 0 means no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_limit: Option<i64>,
    /// Object count as a percentage of `objectLimit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_percent: Option<i32>,
    /// Bytes currently stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<i64>,
    /// Maximum size allowed in bytes; 0 means no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_limit: Option<i64>,
    /// Stored bytes as a percentage of `sizeLimit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_percent: Option<i32>,
}

/// Website hosting settings currently applied to the bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebsiteStatus {
    /// Object served for missing pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_document: Option<String>,
    /// Object served for directory-style requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_document: Option<String>,
}

/// Coarse state of a GarageBucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum BucketPhase {
    /// Waiting to be processed, e.g. until the cluster is available.
    Pending,
    /// The bucket is being created or configured in Garage.
    Creating,
    /// The bucket exists and matches the spec.
    Ready,
    /// The resource is being removed and the bucket cleaned up.
    Deleting,
    /// Reconciliation hit an error; see the conditions for details.
    Failed,
    /// The state could not be determined.
    Unknown,
}
