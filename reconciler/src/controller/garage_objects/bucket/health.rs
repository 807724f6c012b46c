//! The writes of a pass that could not read its bucket
//! ([`decide::garage_objects::bucket::health`]): the failure counters on the bucket's
//! annotations, and the `Tables` repair asked of its cluster. Both are merge patches onto a
//! resourceVersion just read, so a count is never moved from a value someone else changed
//! meanwhile (that conflict is left to the next pass, which counts again) and a repair request
//! never overwrites one that arrived since.

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Map, Value, json};
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::ANNOTATION_TRIGGER_REPAIR;

use crate::controller::events::Note;
use crate::controller::{Context, Error};
use decide::garage_objects::bucket::health::{ClusterRef, Count, REPAIR};

/// Moves the counters of `bucket` as `counts` says.
pub async fn write_counts(
    api: &Api<GarageBucket>,
    ctx: &Context,
    bucket: &GarageBucket,
    counts: &[Count],
) -> Result<(), Error> {
    let annotations: Map<String, Value> = counts
        .iter()
        .map(|c| {
            (
                c.key.to_owned(),
                c.to.clone().map_or(Value::Null, Value::String),
            )
        })
        .collect();
    let body = json!({"metadata": {
        "resourceVersion": bucket.resource_version(),
        "annotations": annotations,
    }});
    ctx.metrics.wrote();
    conflict_is_fine(
        api.patch(
            &bucket.name_any(),
            &PatchParams::default(),
            &Patch::Merge(body),
        )
        .await,
    )
}

/// Sets `trigger-repair=Tables` on `cluster` while it carries no request. Each try writes
/// onto the resourceVersion just read, so a request that arrived meanwhile is never
/// overwritten; the cluster's own status writes move that version too, so a conflict is read
/// again and tried again, a few times. Says so on the bucket when the request is made.
pub async fn request_repair(
    ctx: &Context,
    bucket: &GarageBucket,
    cluster: &ClusterRef,
) -> Result<(), Error> {
    let api: Api<GarageCluster> = Api::namespaced(ctx.client.clone(), &cluster.namespace);
    let mut version = cluster.resource_version.clone();
    for _ in 0..REPAIR_TRIES {
        let body = json!({"metadata": {
            "resourceVersion": version,
            "annotations": {ANNOTATION_TRIGGER_REPAIR: REPAIR},
        }});
        ctx.metrics.wrote();
        match api
            .patch(&cluster.name, &PatchParams::default(), &Patch::Merge(body))
            .await
        {
            Ok(_) => {
                let message = format!(
                    "Garage failed to decode this bucket's metadata again and again: {REPAIR} \
                     repair requested on GarageCluster {}/{}",
                    cluster.namespace, cluster.name
                );
                tracing::warn!(bucket = %bucket.name_any(), cluster = %cluster.name, "Tables repair requested");
                let note = Note::warning("RepairRequested", "RequestRepair", message);
                ctx.events.publish(bucket, &[note]).await;
                return Ok(());
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                let Some(now) = api.get_opt(&cluster.name).await? else {
                    return Ok(());
                };
                if now.annotations().contains_key(ANNOTATION_TRIGGER_REPAIR) {
                    // Another request waits there now: it stands.
                    return Ok(());
                }
                version = now.resource_version();
            }
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
    tracing::info!(bucket = %bucket.name_any(), cluster = %cluster.name, "the cluster kept changing; the Tables repair was not requested");
    Ok(())
}

/// How many times a repair request is written before the pass gives up on it.
const REPAIR_TRIES: usize = 3;

/// A 409 (the object changed since it was read) or a 404 (it is gone) leaves the write to the
/// next pass, which reads it again.
fn conflict_is_fine<T>(result: Result<T, kube::Error>) -> Result<(), Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
