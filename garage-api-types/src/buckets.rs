//! The types of the bucket endpoints: buckets, key permissions, aliases, quotas and updates.

use serde::{Deserialize, Serialize};

use super::bucket_config::{CorsRule, LifecycleRule, WebsiteAccess, WebsiteConfig};

/// An entry of `ListBuckets`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketListItem {
    /// Bucket id (64 hex digits).
    pub id: String,
    /// Creation date (RFC 3339).
    pub created: String,
    /// Global aliases.
    pub global_aliases: Vec<String>,
    /// Local aliases, per key.
    pub local_aliases: Vec<LocalAlias>,
}

/// A key's local alias for a bucket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalAlias {
    /// The key the alias belongs to.
    pub access_key_id: String,
    /// The alias.
    pub alias: String,
}

/// `GetBucketInfo` (also the answer of every bucket write).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketInfo {
    /// Bucket id.
    pub id: String,
    /// Creation date (RFC 3339).
    pub created: String,
    /// Global aliases.
    pub global_aliases: Vec<String>,
    /// Whether it is served as a website.
    pub website_access: bool,
    /// Website configuration, when served.
    #[serde(default)]
    pub website_config: Option<WebsiteConfig>,
    /// Keys with permissions on it.
    pub keys: Vec<BucketKey>,
    /// Objects stored.
    pub objects: i64,
    /// Bytes stored.
    pub bytes: i64,
    /// Unfinished uploads.
    pub unfinished_uploads: i64,
    /// Unfinished multipart uploads.
    pub unfinished_multipart_uploads: i64,
    /// Parts of unfinished multipart uploads.
    pub unfinished_multipart_upload_parts: i64,
    /// Bytes of unfinished multipart uploads.
    pub unfinished_multipart_upload_bytes: i64,
    /// Quotas.
    pub quotas: BucketQuotas,
    /// CORS rules (newer Garage only).
    #[serde(default)]
    pub cors_rules: Option<Vec<CorsRule>>,
    /// Lifecycle rules (newer Garage only).
    #[serde(default)]
    pub lifecycle_rules: Option<Vec<LifecycleRule>>,
}

/// A key's access to a bucket.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketKey {
    /// Access key id.
    pub access_key_id: String,
    /// Key name.
    pub name: String,
    /// Its permissions.
    pub permissions: BucketPermissions,
    /// Its local aliases for this bucket.
    pub bucket_local_aliases: Vec<String>,
}

/// Read, write and owner permissions of a key on a bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketPermissions {
    /// Read objects.
    #[serde(default)]
    pub read: bool,
    /// Write objects.
    #[serde(default)]
    pub write: bool,
    /// Change bucket settings.
    #[serde(default)]
    pub owner: bool,
}

/// Quotas; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketQuotas {
    /// Maximum bytes.
    #[serde(default)]
    pub max_size: Option<u64>,
    /// Maximum objects.
    #[serde(default)]
    pub max_objects: Option<u64>,
}

/// How to find a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BucketLookup<'a> {
    /// Exact id.
    Id(&'a str),
    /// Exact global alias.
    GlobalAlias(&'a str),
    /// Id prefix or alias; Garage fails when it matches more than one.
    Search(&'a str),
}

/// A bucket to create.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateBucket {
    /// Global alias.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_alias: Option<String>,
    /// Local alias for a key, with the permissions to give that key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local_alias: Option<CreateLocalAlias>,
}

/// A local alias given at creation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateLocalAlias {
    /// The key.
    pub access_key_id: String,
    /// The alias.
    pub alias: String,
    /// Permissions to give the key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow: Option<BucketPermissions>,
}

/// Bucket settings to change; `None` leaves a setting as it is, an empty list of rules
/// removes them all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BucketUpdate {
    /// Website access.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website_access: Option<WebsiteAccess>,
    /// Quotas (both limits are written; `None` inside removes a limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quotas: Option<BucketQuotas>,
    /// CORS rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cors_rules: Option<Vec<CorsRule>>,
    /// Lifecycle rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifecycle_rules: Option<Vec<LifecycleRule>>,
}

/// A bucket alias to add or remove.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum BucketAlias {
    /// A global alias.
    Global {
        /// Bucket id.
        #[serde(rename = "bucketId")]
        bucket_id: String,
        /// The alias.
        #[serde(rename = "globalAlias")]
        global_alias: String,
    },
    /// A key's local alias.
    Local {
        /// Bucket id.
        #[serde(rename = "bucketId")]
        bucket_id: String,
        /// The key.
        #[serde(rename = "accessKeyId")]
        access_key_id: String,
        /// The alias.
        #[serde(rename = "localAlias")]
        local_alias: String,
    },
}
