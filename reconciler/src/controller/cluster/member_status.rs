//! Writes what Garage reports about each member into its GarageNode's status where the
//! decision found it changed: a merge patch of those fields alone (`null` clears one), so the
//! node controller's own fields are never touched. Also marks the pods whose process was seen
//! running its identity before that identity held a role (`seen-without-role`).

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use shared_types::garage_node::GarageNode;

use crate::controller::write;
use crate::controller::{Context, Error};
use decide::cluster::member_status::MemberFacts;
use decide::cluster::members::Mark;

/// Patches each of `facts` into its GarageNode's status; a node gone meanwhile is skipped.
pub async fn write(ns: &str, facts: &[MemberFacts], ctx: &Context) -> Result<(), Error> {
    let api: Api<GarageNode> = Api::namespaced(ctx.client.clone(), ns);
    for f in facts {
        let body = json!({
            "connected": f.connected,
            "inLayout": f.in_layout,
            "hostname": f.hostname,
            "partitions": f.partitions,
            "dataPartition": f.data_partition,
            "metadataPartition": f.metadata_partition,
            "lastSeen": f.last_seen,
        });
        match write::patch_status(&api, &ctx.metrics, &f.node, body).await {
            Ok(()) => {}
            Err(Error::Kube(kube::Error::Api(e))) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Annotates each pod of `marks` as seen running its node ID without a role. The patch names
/// the pod's UID, so a pod made again under the name meanwhile (a new process) is left
/// unmarked. A mark only spares a wait, so one that cannot be written is logged and the pass
/// goes on.
pub async fn mark_seen_without_role(ns: &str, marks: &[Mark], ctx: &Context) {
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), ns);
    for mark in marks {
        ctx.metrics.wrote();
        let body = json!({"metadata": {
            "uid": mark.uid,
            "annotations": {
                shared_types::keys::annotation::ANNOTATION_SEEN_WITHOUT_ROLE: mark.value,
            },
        }});
        match api
            .patch(&mark.pod, &PatchParams::default(), &Patch::Merge(body))
            .await
        {
            Ok(_) => ctx.metrics.step("members", "seen_without_role"),
            // Gone, or made again under the name (the API server refuses the other UID).
            Err(kube::Error::Api(e)) if [404, 409, 422].contains(&e.code) => {}
            Err(e) => {
                tracing::warn!(pod = %mark.pod, error = %e, "seen-without-role mark not written")
            }
        }
    }
}
