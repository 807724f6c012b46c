//! Admin API tokens.

use serde::{Deserialize, Serialize};

use super::error::GarageError;
use super::transport::{AdminClient, AdminToken, Kind};

/// An admin token's public description (never its secret).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminTokenInfo {
    /// Token id (the prefix of the bearer token); `None` for the token from the config file.
    #[serde(default)]
    pub id: Option<String>,
    /// Creation date (RFC 3339).
    #[serde(default)]
    pub created: Option<String>,
    /// Name.
    pub name: String,
    /// Expiry (RFC 3339), if any.
    #[serde(default)]
    pub expiration: Option<String>,
    /// Whether it has expired.
    pub expired: bool,
    /// Endpoint names it may call, or `*`.
    pub scope: Vec<String>,
}

/// A newly created token: its description and its secret, shown only once.
#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreatedAdminToken {
    /// The token's description.
    #[serde(flatten)]
    pub info: AdminTokenInfo,
    /// The bearer token. Garage shows it once: store it before doing anything else.
    #[serde(deserialize_with = "token")]
    pub secret_token: AdminToken,
}

impl std::fmt::Debug for CreatedAdminToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CreatedAdminToken")
            .field("info", &self.info)
            .field("secret_token", &self.secret_token)
            .finish()
    }
}

fn token<'de, D: serde::Deserializer<'de>>(d: D) -> Result<AdminToken, D::Error> {
    String::deserialize(d).map(AdminToken::new)
}

/// Fields of a token to create or change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdminTokenSpec {
    /// Name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Expiry (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expiration: Option<String>,
    /// Remove any expiry.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub never_expires: bool,
    /// Endpoint names, or `*`. A scope with `CreateAdminToken` or `UpdateAdminToken` amounts
    /// to `*`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Vec<String>>,
}

/// How to find a token or key: by exact id, or by a search on id prefix or name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// Exact id.
    Id(&'a str),
    /// Id prefix or name; Garage fails when it matches more than one.
    Search(&'a str),
}

impl Lookup<'_> {
    pub(crate) fn query(&self) -> (&'static str, &str) {
        match self {
            Lookup::Id(id) => ("id", id),
            Lookup::Search(s) => ("search", s),
        }
    }
}

impl AdminClient {
    /// `ListAdminTokens`.
    pub async fn list_admin_tokens(&self) -> Result<Vec<AdminTokenInfo>, GarageError> {
        self.get("ListAdminTokens", &[]).await
    }

    /// `GetAdminTokenInfo`.
    pub async fn admin_token_info(
        &self,
        lookup: Lookup<'_>,
    ) -> Result<AdminTokenInfo, GarageError> {
        self.get("GetAdminTokenInfo", &[lookup.query()]).await
    }

    /// `GetCurrentAdminTokenInfo`: the token this client uses (always allowed).
    pub async fn current_admin_token_info(&self) -> Result<AdminTokenInfo, GarageError> {
        self.get("GetCurrentAdminTokenInfo", &[]).await
    }

    /// `CreateAdminToken`.
    pub async fn create_admin_token(
        &self,
        spec: &AdminTokenSpec,
    ) -> Result<CreatedAdminToken, GarageError> {
        self.post("CreateAdminToken", &[], Some(spec), Kind::Write)
            .await
    }

    /// `UpdateAdminToken?id=`.
    pub async fn update_admin_token(
        &self,
        id: &str,
        spec: &AdminTokenSpec,
    ) -> Result<AdminTokenInfo, GarageError> {
        self.post("UpdateAdminToken", &[("id", id)], Some(spec), Kind::Write)
            .await
    }

    /// `DeleteAdminToken?id=`.
    pub async fn delete_admin_token(&self, id: &str) -> Result<(), GarageError> {
        self.post_no_content::<()>("DeleteAdminToken", &[("id", id)], None)
            .await
    }
}
