//! Garage's explicit dead-node recovery, on the user's request only: the GarageCluster
//! annotation `skip-dead-nodes` (with `allow-missing-data` when the user accepts losing data
//! without a surviving quorum) moves the update trackers of nodes that are down to the
//! current layout version, so older versions a dead node can never acknowledge stop holding
//! the history. The operator never asks for this itself: it acts on every tracker at once.

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use shared_types::conditions::reason;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::{ANNOTATION_ALLOW_MISSING_DATA, ANNOTATION_SKIP_DEAD_NODES};

use crate::controller::{Context, Error};
use crate::garage::{AdminClient, GarageError};
use decide::note::Note;

/// Runs the recovery for layout `version`, then removes both annotations. Garage answers
/// 400 when only one version is live (nothing to skip), which counts as done. On any other
/// failure the annotations stay, a warning Event says why, and the next pass tries again.
pub async fn skip_dead_nodes(
    cluster: &GarageCluster,
    admin: &AdminClient,
    version: u64,
    allow_missing_data: bool,
    notes: &mut Vec<Note>,
    ctx: &Context,
) -> Result<(), Error> {
    let message = match admin.skip_dead_nodes(version, allow_missing_data).await {
        Ok(result) => format!(
            "skip-dead-nodes at layout version {version}: ack moved for {} node(s), sync for {}{}",
            result.ack_updated.len(),
            result.sync_updated.len(),
            if allow_missing_data {
                " (allow-missing-data)"
            } else {
                ""
            }
        ),
        Err(GarageError::BadRequest { message, .. }) => {
            format!("skip-dead-nodes at layout version {version}: nothing to skip ({message})")
        }
        Err(e) => {
            notes.push(Note::warning(
                reason::REASON_GARAGE_API_ERROR,
                "SkipDeadNodes",
                format!(
                    "skip-dead-nodes at layout version {version} failed, the annotation stays: {e}"
                ),
            ));
            return Ok(());
        }
    };
    ctx.metrics.wrote();
    Api::<GarageCluster>::namespaced(ctx.client.clone(), &cluster.namespace().unwrap_or_default())
        .patch(
            &cluster.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                ANNOTATION_SKIP_DEAD_NODES: null,
                ANNOTATION_ALLOW_MISSING_DATA: null,
            }}})),
        )
        .await?;
    ctx.metrics.step("recovery", "skip_dead_nodes");
    notes.push(Note::warning(
        reason::REASON_RECONCILE_SUCCESS,
        "SkipDeadNodes",
        message,
    ));
    Ok(())
}
