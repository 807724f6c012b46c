//! S3 access keys.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::buckets::BucketPermissions;
use super::error::GarageError;
use super::tokens::Lookup;
use super::transport::{AdminClient, Kind};

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

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ImportKeyRequest<'a> {
    access_key_id: &'a str,
    secret_access_key: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

impl AdminClient {
    /// `ListKeys`.
    pub async fn list_keys(&self) -> Result<Vec<KeyListItem>, GarageError> {
        self.get("ListKeys", &[]).await
    }

    /// `GetKeyInfo`; the secret is included only with `show_secret`.
    pub async fn key_info(
        &self,
        lookup: Lookup<'_>,
        show_secret: bool,
    ) -> Result<KeyInfo, GarageError> {
        let mut query = vec![lookup.query()];
        if show_secret {
            query.push(("showSecretKey", "true"));
        }
        self.get("GetKeyInfo", &query).await
    }

    /// `CreateKey`; the answer holds the secret.
    pub async fn create_key(&self, spec: &KeySpec) -> Result<KeyInfo, GarageError> {
        self.post("CreateKey", &[], Some(spec), Kind::Write).await
    }

    /// `ImportKey`: a key with a known id and secret. [`GarageError::AlreadyExists`] when the
    /// id exists or ever existed.
    pub async fn import_key(
        &self,
        access_key_id: &str,
        secret_access_key: &str,
        name: Option<&str>,
    ) -> Result<KeyInfo, GarageError> {
        let body = ImportKeyRequest {
            access_key_id,
            secret_access_key,
            name,
        };
        self.post("ImportKey", &[], Some(&body), Kind::Write).await
    }

    /// `UpdateKey?id=`.
    pub async fn update_key(&self, id: &str, spec: &KeySpec) -> Result<KeyInfo, GarageError> {
        self.post("UpdateKey", &[("id", id)], Some(spec), Kind::Write)
            .await
    }

    /// `DeleteKey?id=`.
    pub async fn delete_key(&self, id: &str) -> Result<(), GarageError> {
        self.post_no_content::<()>("DeleteKey", &[("id", id)], None)
            .await
    }
}
