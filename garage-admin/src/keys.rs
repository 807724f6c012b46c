//! The Admin API calls on S3 access keys.

use garage_api_types::{KeyInfo, KeyListItem, KeySpec, Lookup};
use serde::Serialize;

use crate::error::GarageError;
use crate::transport::{AdminClient, Kind};

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
