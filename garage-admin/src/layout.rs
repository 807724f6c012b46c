//! The Admin API calls on the cluster layout: read, stage, preview, apply, revert, history and
//! skip-dead-nodes.

use garage_api_types::{
    AppliedLayout, ClusterLayout, LayoutHistory, LayoutParameters, LayoutPreview, RoleChange,
    SkipDeadNodesResult,
};
use serde::Serialize;

use crate::error::GarageError;
use crate::transport::{AdminClient, Kind};

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct UpdateLayoutRequest<'a> {
    roles: &'a [RoleChange],
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<&'a LayoutParameters>,
}

impl AdminClient {
    /// `GetClusterLayout`.
    pub async fn layout(&self) -> Result<ClusterLayout, GarageError> {
        self.get("GetClusterLayout", &[]).await
    }

    /// `UpdateClusterLayout`: stages role changes (and optionally new parameters). Staging
    /// merges into the cluster-wide staging area; nothing moves until an apply.
    pub async fn stage_layout(
        &self,
        roles: &[RoleChange],
        parameters: Option<&LayoutParameters>,
    ) -> Result<ClusterLayout, GarageError> {
        let body = UpdateLayoutRequest { roles, parameters };
        self.post("UpdateClusterLayout", &[], Some(&body), Kind::Write)
            .await
    }

    /// `PreviewClusterLayoutChanges`: what applying the staged changes would produce.
    pub async fn preview_layout(&self) -> Result<LayoutPreview, GarageError> {
        self.post::<(), _>("PreviewClusterLayoutChanges", &[], None, Kind::Read)
            .await
    }

    /// `ApplyClusterLayout` at `version`, which must be the current version + 1 (Garage's
    /// guard against applying over a change someone else made). A mismatch is
    /// [`GarageError::LayoutVersionMismatch`], with the current version when it can be read.
    pub async fn apply_layout(&self, version: u64) -> Result<AppliedLayout, GarageError> {
        let body = serde_json::json!({ "version": version });
        let result = self
            .post("ApplyClusterLayout", &[], Some(&body), Kind::Write)
            .await;
        match result {
            Err(GarageError::Http {
                status: 500,
                message,
                ..
            }) if message.contains("Invalid new layout version") => {
                let current = self.layout().await.ok().map(|l| l.version);
                Err(GarageError::LayoutVersionMismatch {
                    endpoint: "ApplyClusterLayout",
                    requested: version,
                    current,
                    message,
                })
            }
            other => other,
        }
    }

    /// `RevertClusterLayout`: drops every staged change.
    pub async fn revert_layout(&self) -> Result<ClusterLayout, GarageError> {
        self.post::<(), _>("RevertClusterLayout", &[], None, Kind::Write)
            .await
    }

    /// `GetClusterLayoutHistory`.
    pub async fn layout_history(&self) -> Result<LayoutHistory, GarageError> {
        self.get("GetClusterLayoutHistory", &[]).await
    }

    /// `ClusterLayoutSkipDeadNodes`: moves the trackers of nodes that are gone for good to
    /// `version`. With `allow_missing_data`, data without a surviving quorum is given up:
    /// only for a node proven lost. Garage answers 400 when there is nothing to skip.
    pub async fn skip_dead_nodes(
        &self,
        version: u64,
        allow_missing_data: bool,
    ) -> Result<SkipDeadNodesResult, GarageError> {
        let body =
            serde_json::json!({ "version": version, "allowMissingData": allow_missing_data });
        self.post("ClusterLayoutSkipDeadNodes", &[], Some(&body), Kind::Write)
            .await
    }
}
