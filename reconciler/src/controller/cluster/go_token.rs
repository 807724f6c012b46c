//! The Go operator's own Admin API token, revoked once this operator runs the cluster
//! ([`decide::cluster::go_token`] decides which row and Secrets): reading the pinned row and
//! the token Secrets, then deleting the row, the pin and the Secrets in that order, so that a
//! pass interrupted in between finds the pin again and finishes.

use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, ListParams};
use kube::{Api, ResourceExt};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::ANNOTATION_OPERATOR_ADMIN_TOKEN_NAME;
use shared_types::keys::label::LABEL_OPERATOR_ADMIN_TOKEN;

use crate::controller::{Context, Error, one_shot, write};
use crate::desired::is_controlled_by;
use crate::garage::{AdminClient, Lookup};
use decide::cluster::go_token::{self, Revoke, Row, Seen, TokenSecret};
use decide::note::Note;

/// What the pass needs to decide, read only while the cluster pins a token; `None` when there
/// is no pin or Garage did not answer (the next pass reads again).
pub async fn observe(
    cluster: &GarageCluster,
    admin: Option<&AdminClient>,
    ctx: &Context,
) -> Result<Option<Seen>, Error> {
    let (Some(id), Some(admin)) = (go_token::pinned(cluster), admin) else {
        return Ok(None);
    };
    let row = match admin.admin_token_info(Lookup::Id(id)).await {
        Ok(info) => Row::Named(info.name),
        Err(e) if e.is_not_found() => Row::Absent,
        Err(e) => {
            tracing::info!(error = %e, "the Go operator's token could not be read; next pass");
            return Ok(None);
        }
    };
    let uid = cluster.uid().unwrap_or_default();
    let secrets =
        Api::<Secret>::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default())
            .list(&ListParams::default().labels(&format!("{LABEL_OPERATOR_ADMIN_TOKEN}=true")))
            .await?
            .items
            .into_iter()
            .map(|s| TokenSecret {
                controlled: is_controlled_by(&s, &uid),
                token_name: s
                    .annotations()
                    .get(ANNOTATION_OPERATOR_ADMIN_TOKEN_NAME)
                    .cloned(),
                name: s.name_any(),
            })
            .collect();
    Ok(Some(Seen { row, secrets }))
}

/// Carries `r` out: the row deleted (gone already is done), then the pin removed and the
/// Secrets deleted, each with an Event.
pub async fn act(
    cluster: &GarageCluster,
    admin: &AdminClient,
    r: &Revoke,
    notes: &mut Vec<Note>,
    ctx: &Context,
) -> Result<(), Error> {
    if let Some(refused) = &r.refused {
        notes.push(Note::warning(
            "GoOperatorTokenKept",
            "RevokeToken",
            refused.clone(),
        ));
        return Ok(());
    }
    if let Some(id) = &r.delete_row {
        ctx.metrics.wrote();
        match admin.delete_admin_token(id).await {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
        notes.push(Note::normal(
            "GoOperatorTokenRevoked",
            "RevokeToken",
            format!("revoked the Admin API token {id} the Go operator made for itself; this operator uses the cluster's admin token"),
        ));
    }
    if let Some((key, value)) = &r.unpin {
        let api: Api<GarageCluster> =
            Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
        one_shot::remove_request(&api, cluster, &[(key.clone(), value.clone())], ctx).await?;
    }
    let secrets: Api<Secret> =
        Api::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default());
    for name in &r.delete_secrets {
        if write::delete_if_present(&secrets, &ctx.metrics, name, &DeleteParams::default()).await? {
            tracing::info!(secret = %name, "the Go operator's token Secret deleted");
        }
    }
    Ok(())
}
