//! The Admin API calls on admin tokens.

use crate::error::GarageError;
use crate::transport::{AdminClient, Kind};
use garage_api_types::{AdminTokenInfo, AdminTokenSpec, CreatedAdminToken, Lookup};

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
