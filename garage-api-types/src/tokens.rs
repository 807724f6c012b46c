//! Admin API tokens: the bearer token itself (never shown in `Debug`), and the types of the
//! token endpoints.

use std::fmt;

use serde::{Deserialize, Serialize};

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
    /// The query parameter and its value that select this token or key.
    pub fn query(&self) -> (&'static str, &str) {
        match self {
            Lookup::Id(id) => ("id", id),
            Lookup::Search(s) => ("search", s),
        }
    }
}

/// A bearer token for the Admin API. It never appears in `Debug` output, logs or errors.
#[derive(Clone)]
pub struct AdminToken(String);

impl AdminToken {
    /// Wraps a token (the configured `admin_token`, or a secret from `CreateAdminToken`).
    pub fn new(token: impl Into<String>) -> Self {
        Self(token.into())
    }

    /// The token text, for writing into a Secret. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(<redacted>)")
    }
}
