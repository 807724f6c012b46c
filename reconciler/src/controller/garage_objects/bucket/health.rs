//! The writes of a pass that could not read its bucket ([`decide::garage_objects::bucket::health`]):
//! the failure counters on the bucket's annotations, and the `Tables` repair asked of its
//! cluster. Both are merge patches onto the resourceVersion the pass read, so a count is never
//! moved from a value someone else changed meanwhile and a repair request never overwrites one
//! that arrived since; such a conflict is left to the next pass.

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

/// Sets `trigger-repair=Tables` on `cluster` (read without one), and says so on the bucket.
pub async fn request_repair(
    ctx: &Context,
    bucket: &GarageBucket,
    cluster: &ClusterRef,
) -> Result<(), Error> {
    let api: Api<GarageCluster> = Api::namespaced(ctx.client.clone(), &cluster.namespace);
    let body = json!({"metadata": {
        "resourceVersion": cluster.resource_version,
        "annotations": {ANNOTATION_TRIGGER_REPAIR: REPAIR},
    }});
    ctx.metrics.wrote();
    let written = api
        .patch(&cluster.name, &PatchParams::default(), &Patch::Merge(body))
        .await;
    if written.is_ok() {
        let message = format!(
            "Garage failed to decode this bucket's metadata again and again: {REPAIR} repair \
             requested on GarageCluster {}/{}",
            cluster.namespace, cluster.name
        );
        tracing::warn!(bucket = %bucket.name_any(), cluster = %cluster.name, "Tables repair requested");
        let note = Note::warning("RepairRequested", "RequestRepair", message);
        ctx.events.publish(bucket, &[note]).await;
    }
    conflict_is_fine(written)
}

/// A 409 (the object changed since it was read) or a 404 (it is gone) leaves the write to the
/// next pass, which reads it again.
fn conflict_is_fine<T>(result: Result<T, kube::Error>) -> Result<(), Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
