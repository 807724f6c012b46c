//! Observed-state type for the legacy `v1alpha1` GarageBucket schema.

use crate::garage_bucket::BucketKeyStatus;
use crate::garage_bucket::LocalAliasStatus;
use crate::garage_bucket::QuotaUsage;
use crate::garage_bucket::WebsiteStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Observed bucket state in the older `v1alpha1` shape, which reports the object count at the
/// top level and omits the operator's ownership bookkeeping fields.
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
    /// Key-scoped aliases of the bucket as seen in Garage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_aliases: Option<Vec<LocalAliasStatus>>,
    /// Number of objects currently stored in the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_count: Option<i64>,
    /// The `metadata.generation` that the reported status corresponds to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Coarse lifecycle state: `Pending`, `Creating`, `Ready`, `Deleting`, `Failed` or `Unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
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
