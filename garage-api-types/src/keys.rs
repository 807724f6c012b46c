//! The types of the S3 access key endpoints.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::buckets::BucketPermissions;

/// An entry of `ListKeys`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyListItem {
    /// Access key id.
    pub id: String,
    /// Name.
    pub name: String,
    /// Creation date (RFC 3339).
    #[serde(default)]
    pub created: Option<String>,
    /// Expiry (RFC 3339).
    #[serde(default)]
    pub expiration: Option<String>,
    /// Whether it has expired.
    pub expired: bool,
}

/// `GetKeyInfo` (also the answer of create, import and update).
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyInfo {
    /// Access key id.
    pub access_key_id: String,
    /// Name.
    pub name: String,
    /// Creation date (RFC 3339).
    #[serde(default)]
    pub created: Option<String>,
    /// Expiry (RFC 3339).
    #[serde(default)]
    pub expiration: Option<String>,
    /// Whether it has expired.
    pub expired: bool,
    /// The secret, only when asked for (`showSecretKey`) or just created. Never log it.
    #[serde(default)]
    pub secret_access_key: Option<String>,
    /// Key-wide permissions.
    pub permissions: KeyPermissions,
    /// Buckets the key has permissions on.
    pub buckets: Vec<KeyBucket>,
}

impl fmt::Debug for KeyInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyInfo")
            .field("access_key_id", &self.access_key_id)
            .field("name", &self.name)
            .field("created", &self.created)
            .field("expiration", &self.expiration)
            .field("expired", &self.expired)
            .field(
                "secret_access_key",
                &self.secret_access_key.as_ref().map(|_| "<redacted>"),
            )
            .field("permissions", &self.permissions)
            .field("buckets", &self.buckets)
            .finish()
    }
}

/// Key-wide permissions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyPermissions {
    /// May create buckets.
    #[serde(default)]
    pub create_bucket: bool,
}

/// A bucket seen from a key.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyBucket {
    /// Bucket id.
    pub id: String,
    /// Global aliases.
    pub global_aliases: Vec<String>,
    /// This key's local aliases for it.
    pub local_aliases: Vec<String>,
    /// The key's permissions on it.
    pub permissions: BucketPermissions,
}

/// Fields of a key to create or change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeySpec {
    /// Name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Expiry (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration: Option<String>,
    /// Remove any expiry.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub never_expires: bool,
    /// Permissions to grant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow: Option<KeyPermissions>,
    /// Permissions to revoke.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deny: Option<KeyPermissions>,
}
