//! Observed-state types for the `GarageKey` resource (`v1beta1`), reported by the operator
//! from the key's state in Garage.

use super::KeyCapabilities;
use crate::common::KeyPhase;
use crate::common::SecretReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the operator last observed about the access key and its reconciliation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GarageKeyStatus {
    /// Access key ID that S3 clients use to sign requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_key_id: Option<String>,
    /// Buckets on which Garage currently grants this key any access, with the flags held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buckets: Option<Vec<KeyBucketStatus>>,
    /// True while the operator holds cluster-wide grants for this key from `spec.allBuckets`.
    /// Turned on before any such grant is made and off only after all of them are revoked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_wide: Option<bool>,
    /// Standard Kubernetes conditions (such as `Ready`) describing reconciliation progress.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// Time at which Garage recorded the key's creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
    /// Kept for compatibility only and left empty; see `buckets` for the access Garage
    /// actually grants.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_permissions: Option<Vec<EffectivePermission>>,
    /// Expiry time configured on the key in Garage; absent when the key does not expire.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Time>,
    /// Identifier under which Garage tracks the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_id: Option<String>,
    /// Bucket IDs whose grants for this key come from `spec.bucketPermissions`. An ID is
    /// written before Garage is changed and dropped once the grant matches, so removed or
    /// reduced entries are revoked reliably while other grants stay untouched. Grants from
    /// `spec.allBuckets` are tracked by `clusterWide` instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub managed_bucket_grants: Option<Vec<String>>,
    /// The `metadata.generation` that the reported status corresponds to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Key-wide capabilities currently set in Garage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permissions: Option<KeyCapabilities>,
    /// Coarse lifecycle state of the key resource, including `Expired`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<KeyPhase>,
    /// The Secret holding the key's generated credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub secret_ref: Option<SecretReference>,
}

/// One bucket the key can access, as reported by Garage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyBucketStatus {
    /// Garage's internal ID of the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_id: Option<String>,
    /// Cluster-wide name of the bucket, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_alias: Option<String>,
    /// Name under which only this key sees the bucket, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_alias: Option<String>,
    /// The key has owner (administration) rights on the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub owner: Option<bool>,
    /// The key can read objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub read: Option<bool>,
    /// The key can write and delete objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub write: Option<bool>,
}

/// Combined permission of the key on one bucket (compatibility type; not filled in).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EffectivePermission {
    /// Global alias of the bucket, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_alias: Option<String>,
    /// Garage's internal ID of the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_id: Option<String>,
    /// Owner rights on the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub owner: Option<bool>,
    /// Read access to objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub read: Option<bool>,
    /// Which resource declared the grant: `bucket`, `key` or `both`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Write access to objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub write: Option<bool>,
}
