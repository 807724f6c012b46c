//! The Go operator's own Admin API token. The recording pins the ID of the token row the Go
//! operator made for itself (`operator-admin-token-id` on the cluster) and holds its Secret;
//! the replay makes that row again in the new Garage, with the name the Go operator gives it,
//! and pins the new ID. Taken over, the cluster no longer has it: the row is revoked in Garage,
//! the pin and the Secret are gone.

use std::time::Duration;

use anyhow::Context as _;
use garage_admin::{AdminClient, AdminTokenSpec, Lookup};
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use kube::api::{Api, ListParams, Patch, PatchParams};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::keys::annotation::ANNOTATION_OPERATOR_ADMIN_TOKEN_ID;
use shared_types::keys::label::LABEL_OPERATOR_ADMIN_TOKEN;

use crate::{NAME, World, ns};

/// Makes the row and pins it; returns its ID.
pub(crate) async fn replay(w: &World<'_>, admin: &AdminClient) -> anyhow::Result<String> {
    let cluster = w.clusters.get(NAME).await?;
    let name = format!(
        "garage-operator:{}/{NAME}:{}",
        ns(),
        cluster.uid().unwrap_or_default()
    );
    let created = admin
        .create_admin_token(&AdminTokenSpec {
            name: Some(name),
            never_expires: true,
            scope: Some(vec!["*".into()]),
            ..AdminTokenSpec::default()
        })
        .await?;
    let id = created
        .info
        .id
        .clone()
        .context("the created token has no ID")?;
    w.clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"annotations": {ANNOTATION_OPERATOR_ADMIN_TOKEN_ID: id}}}),
            ),
        )
        .await?;
    Ok(id)
}

/// After the takeover: the row revoked, the pin and the token Secret gone.
pub(crate) async fn revoked(w: &World<'_>, admin: &AdminClient, id: &str) -> anyhow::Result<()> {
    let secrets: Api<Secret> = Api::namespaced(w.client.clone(), ns());
    let labelled = ListParams::default().labels(&format!("{LABEL_OPERATOR_ADMIN_TOKEN}=true"));
    wait(
        "the Go operator's token revoked, unpinned and its Secret gone",
        Duration::from_secs(120),
        || async {
            let row_gone = match admin.admin_token_info(Lookup::Id(id)).await {
                Err(e) if e.is_not_found() => true,
                Ok(_) => false,
                Err(e) => return Err(e.into()),
            };
            let pinned = w
                .clusters
                .get(NAME)
                .await?
                .annotations()
                .contains_key(ANNOTATION_OPERATOR_ADMIN_TOKEN_ID);
            let left = secrets.list(&labelled).await?.items.len();
            Ok(row_gone && !pinned && left == 0)
        },
    )
    .await
}
