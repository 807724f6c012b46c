//! Carries a GarageNode [`Decision`] out.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Service};
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use shared_types::garage_node::{GarageNode, GarageNodeStatus};
use shared_types::keys::finalizer::FINALIZER_NODE;

use crate::controller::write::{self, ensure};
use crate::controller::{Context, Error, finalizer};
use crate::names;
use decide::conditions;
use decide::node::decision::{Decision, OWNED, OWNED_WHILE_SUSPENDED};
use decide::note::Note;

/// Writes what `d` asks for.
pub async fn act(node: &GarageNode, d: Decision, ctx: &Context) -> Result<(), Error> {
    let ns = node.namespace().unwrap_or_default();
    let name = node.name_any();
    let node_uid = node.metadata.uid.clone().unwrap_or_default();
    let m = &ctx.metrics;
    let api: Api<GarageNode> = Api::namespaced(ctx.client.clone(), &ns);
    if d.finalizer == Some(true) {
        return finalizer::set(&api, m, node, FINALIZER_NODE, true).await;
    }
    if let Some(svc) = &d.service {
        let svc_api: Api<Service> = Api::namespaced(ctx.client.clone(), &ns);
        ensure(&svc_api, m, svc, &node_uid, write::metadata_and_spec).await?;
    }
    if let Some(sts) = &d.statefulset {
        let sets: Api<StatefulSet> = Api::namespaced(ctx.client.clone(), &ns);
        ensure(&sets, m, sts, &node_uid, write::statefulset_patch).await?;
    }
    if d.delete_workload {
        let dp = DeleteParams::background();
        let statefulsets = Api::<StatefulSet>::namespaced(ctx.client.clone(), &ns);
        write::delete_if_present(&statefulsets, m, &name, &dp).await?;
        let services = Api::<Service>::namespaced(ctx.client.clone(), &ns);
        write::delete_if_present(&services, m, &names::node_rpc_service(&name), &dp).await?;
        m.step("teardown", "stop_node_workload");
    }
    if !d.claim_classes.is_empty() {
        let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &ns);
        for (claim, class) in &d.claim_classes {
            m.wrote();
            let body = json!({"spec": {"volumeAttributesClassName": class}});
            match claims
                .patch(claim, &PatchParams::default(), &Patch::Merge(body))
                .await
            {
                Ok(_) => m.step("volumes", "set_class"),
                // The feature is off (or the server too old): not asked again for a while.
                Err(kube::Error::Api(e)) if e.code == 403 || e.code == 422 => {
                    ctx.refuse_volume_class(&ns, claim);
                    ctx.events
                        .publish(
                            node,
                            &[Note::warning(
                                shared_types::conditions::reason::REASON_UNSUPPORTED,
                                "SetVolumeAttributesClass",
                                format!(
                                    "the API server refused VolumeAttributesClass {class} on claim {claim}: {}",
                                    e.message
                                ),
                            )],
                        )
                        .await;
                }
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    grow_claims(node, &d.claim_sizes, ctx).await?;
    patch_claims(&ns, &d.claim_patches, ctx).await?;
    if let Some((host, keys)) = &d.unbind {
        let cleared: serde_json::Map<String, serde_json::Value> = keys
            .iter()
            .map(|k| (k.clone(), serde_json::Value::Null))
            .collect();
        m.wrote();
        Api::<Node>::all(ctx.client.clone())
            .patch(
                host,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": cleared, "annotations": cleared}})),
            )
            .await?;
        m.step("pool", "unbind_node");
    }
    ctx.events.publish(node, &d.notes).await;
    if let Some(mut status) = d.status {
        let current = node.status.clone().unwrap_or_default();
        // A suspended node has not acted on its generation: observedGeneration stays where
        // the last acting pass put it.
        if !d.suspended {
            status.observed_generation = node.metadata.generation;
        }
        let owned = if d.suspended {
            OWNED_WHILE_SUSPENDED
        } else {
            OWNED
        };
        status.conditions = Some(conditions::merge(
            current.conditions.as_deref(),
            &d.conditions,
            owned,
            node.metadata.generation,
        ));
        if status != current {
            write::patch_status(&api, m, &name, status_patch(&status)).await?;
        }
    }
    if d.finalizer == Some(false) {
        finalizer::set(&api, m, node, FINALIZER_NODE, false).await?;
    }
    Ok(())
}

/// A merge patch that sets exactly the fields this controller owns (null clears one).
fn status_patch(s: &GarageNodeStatus) -> serde_json::Value {
    json!({
        "nodeId": s.node_id,
        "observedPodUid": s.observed_pod_uid,
        "address": s.address,
        "phase": s.phase,
        "zone": s.zone,
        "observedGeneration": s.observed_generation,
        "conditions": s.conditions,
    })
}

/// Asks each claim of `sizes` for its new request. A refusal (the StorageClass does not allow
/// expansion, or the claim is not one the API server can grow) is remembered with the API
/// server's reason, so the next passes report it instead of asking again, and published.
async fn grow_claims(
    node: &GarageNode,
    sizes: &[(
        String,
        k8s_openapi::apimachinery::pkg::api::resource::Quantity,
    )],
    ctx: &Context,
) -> Result<(), Error> {
    let ns = node.namespace().unwrap_or_default();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &ns);
    for (claim, size) in sizes {
        ctx.metrics.wrote();
        let body = json!({"spec": {"resources": {"requests": {"storage": size}}}});
        match claims
            .patch(claim, &PatchParams::default(), &Patch::Merge(body))
            .await
        {
            Ok(_) => ctx.metrics.step("volumes", "grow_claim"),
            Err(kube::Error::Api(e)) if e.code == 403 || e.code == 422 => {
                ctx.refuse_expansion(&ns, claim, e.message.clone());
                ctx.events
                    .publish(
                        node,
                        &[Note::warning(
                            shared_types::conditions::reason::REASON_EXPANSION_REFUSED,
                            "ExpandClaim",
                            format!(
                                "the API server refused to grow claim {claim} to {}: {}",
                                size.0, e.message
                            ),
                        )],
                    )
                    .await;
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Writes each claim's reservation, identity record or release. The claim's resourceVersion
/// is the precondition (its finalizer list is written whole): a claim that changed meanwhile
/// is left for the next pass, which reads it again.
async fn patch_claims(
    ns: &str,
    patches: &[decide::node::claims::ClaimPatch],
    ctx: &Context,
) -> Result<(), Error> {
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), ns);
    for p in patches {
        ctx.metrics.wrote();
        let body = json!({"metadata": {
            "resourceVersion": p.resource_version,
            "finalizers": p.finalizers,
            "annotations": p.annotations,
        }});
        match claims
            .patch(&p.name, &PatchParams::default(), &Patch::Merge(body))
            .await
        {
            Ok(_) => ctx.metrics.step("volumes", "keep_claim"),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
