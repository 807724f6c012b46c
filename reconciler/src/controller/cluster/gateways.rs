//! The gateway tier's writes: gateway pods taken out of or put back into their Service, a gateway
//! beyond `spec.gateway.replicas` deleted, the role changes of the role-only transaction (a
//! gateway identity swapped, a retired identity's acknowledgement advanced) and the removal of
//! stale gateway roles.

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use shared_types::conditions::reason;
use shared_types::garage_node::GarageNode;

use crate::controller::write;
use crate::controller::{Context, Error, Metrics};
use crate::garage::{AdminClient, NodeId, RoleChange};
use crate::layout;
use crate::machine::drain::Step;
use decide::cluster::decision::LayoutChange;
use decide::note::Note;

/// Takes each of `unserve` out of the gateway Service and budget by removing its tier label
/// (the StatefulSet does not select on it) and puts each of `serve` back by restoring it. Runs
/// before any gateway is asked to dial its peers: one with a new identity becomes Ready as
/// soon as it has, and must be out of the Service by then.
pub(super) async fn serve(
    ns: &str,
    (unserve, serve): (&[String], &[String]),
    ctx: &Context,
) -> Result<(), Error> {
    let m = &ctx.metrics;
    let pod_api: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
    let tier = Some(shared_types::keys::label::value::TIER_GATEWAY);
    for (pod, label, step) in unserve
        .iter()
        .map(|p| (p, None, "unserve_pod"))
        .chain(serve.iter().map(|p| (p, tier, "serve_pod")))
    {
        m.wrote();
        let patched = pod_api
            .patch(
                pod,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {
                    shared_types::keys::label::LABEL_TIER: label,
                }}})),
            )
            .await;
        match patched {
            Ok(_) => m.step("gateways", step),
            // Gone already: nothing left to move in or out of the Service.
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Deletes `retire`, a generated gateway beyond `spec.gateway.replicas`.
pub(super) async fn retire(
    ns: &str,
    retire: Option<&str>,
    notes: &mut Vec<Note>,
    ctx: &Context,
) -> Result<(), Error> {
    let m = &ctx.metrics;
    if let Some(name) = retire {
        // Background propagation: the gateway's finalizer keeps its workload until its role
        // has left the layout (admission refuses a foreground deletion of a gateway).
        let gn_api: Api<GarageNode> = Api::namespaced(ctx.client.clone(), ns);
        write::delete_if_present(&gn_api, m, name, &DeleteParams::background()).await?;
        m.step("gateways", "delete_node");
        notes.push(Note::normal(
            reason::REASON_DELETING,
            "RetireGateway",
            format!("{name} is beyond spec.gateway.replicas; deleting it, its role leaves the layout before its pod stops"),
        ));
    }
    Ok(())
}

/// Carries out a gateway step of the role-only transaction.
pub(super) async fn drain_step(
    admin: &AdminClient,
    step: Step,
    notes: &mut Vec<Note>,
    m: &Metrics,
) {
    match step {
        Step::SwapRole {
            remove,
            add,
            version,
        } => {
            let both = vec![RoleChange::remove(remove.clone()), add.clone()];
            let change = LayoutChange {
                stage: both.clone(),
                intended: both,
                version,
                bootstrap: false,
                parameters: None,
            };
            let new = match &add {
                RoleChange::Assign { id, .. } | RoleChange::Remove { id, .. } => id.short(),
            };
            let done = format!(
                "gateway role of node {} handed to its new identity {new} in layout version {version}",
                remove.short()
            );
            role_change(admin, &remove, &change, done, notes, m).await;
        }
        Step::SkipRetiredAcks { version } => skip_retired_acks(admin, version, notes, m).await,
        _ => {}
    }
}

/// Advances the acknowledgement of the retired identities at `version`: Garage's
/// skip-dead-nodes, never with allowMissingData, so only acknowledgements move.
async fn skip_retired_acks(admin: &AdminClient, version: u64, notes: &mut Vec<Note>, m: &Metrics) {
    match admin.skip_dead_nodes(version, false).await {
        Ok(result) => {
            m.step("drain", "skip_retired_acks");
            notes.push(Note::normal(
                reason::REASON_DRAINING,
                "SkipRetiredAcks",
                format!(
                    "layout version {version}: the acknowledgement of {} retired gateway identit(ies) that will not run again advanced (skip-dead-nodes without allow-missing-data, while they were the only nodes down)",
                    result.ack_updated.len()
                ),
            ));
        }
        Err(e) => notes.push(Note::warning(
            reason::REASON_GARAGE_API_ERROR,
            "SkipRetiredAcks",
            format!("advancing the retired gateway identities' acknowledgement at layout version {version} failed: {e}"),
        )),
    }
}

/// Removes the stale gateway roles of `change` (autoApply).
pub(super) async fn remove_tombstones(
    admin: &AdminClient,
    change: &LayoutChange,
    notes: &mut Vec<Note>,
    m: &Metrics,
) {
    let done = format!(
        "{} stale gateway role(s) removed in layout version {} (spec.layoutManagement.autoApply)",
        change.intended.len(),
        change.version
    );
    if let Some(RoleChange::Remove { id, .. }) = change.intended.first() {
        role_change(admin, id, change, done, notes, m).await;
    }
}

/// Stages and applies the drain's role change `change` (which removes `removed`), with a
/// Normal event `done` when it is committed and a warning when it is not. Staged leftovers of
/// ours are taken back after a failure, as they would block every writer.
pub(super) async fn role_change(
    admin: &AdminClient,
    removed: &NodeId,
    change: &LayoutChange,
    done: String,
    notes: &mut Vec<Note>,
    m: &Metrics,
) {
    match super::act::apply(admin, change).await {
        Ok(()) => {
            m.layout_applied();
            m.step("drain", "remove_role");
            notes.push(Note::normal(reason::REASON_DRAINING, "RemoveRole", done));
        }
        Err(e) => {
            if let Ok(live) = admin.layout().await
                && live.role(removed).is_some()
                && layout::verify_staged(&live, &change.intended, None).is_ok()
            {
                let _ = admin.revert_layout().await;
            }
            notes.push(Note::warning(
                reason::REASON_GARAGE_API_ERROR,
                "RemoveRole",
                format!(
                    "the role change for node {} was not applied: {e}",
                    removed.short()
                ),
            ));
        }
    }
}
