//! Site D, inside `buckets`: the `cleanup-mpu` request on a GarageBucket through admission,
//! the reconciler and real Garage.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use garage_fixture::s3::Objects;
use kube::Api;
use kube::ResourceExt;
use kube::api::ListParams;
use localcluster::wait_until as wait;
use serde_json::{Value, json};
use shared_types::garage_bucket::GarageBucket;

use crate::ns;

/// `cleanup-mpu` on my-bucket: a malformed request is refused at admission; a well-formed
/// one aborts the unfinished upload left there (Garage's count in the Event), the status
/// counts no unfinished upload, and the request's annotations are gone.
pub(crate) async fn abort_uploads(
    buckets: &Api<GarageBucket>,
    app: &Objects,
    endpoint: &str,
) -> anyhow::Result<()> {
    use k8s_openapi::api::events::v1::Event;
    use kube::api::{Patch, PatchParams};
    let t = Instant::now();
    const REQUEST: &str = "garage.rajsingh.info/cleanup-mpu";
    const AGE: &str = "garage.rajsingh.info/cleanup-mpu-older-than";
    let annotate = |value: Value| {
        let patch = json!({"metadata": {"annotations": value}});
        async move {
            buckets
                .patch("my-bucket", &PatchParams::default(), &Patch::Merge(patch))
                .await
        }
    };
    let refused = annotate(json!({REQUEST: "yes"})).await;
    ensure!(
        matches!(&refused, Err(kube::Error::Api(e)) if e.message.contains("GB-OP1")),
        "cleanup-mpu: yes was not refused by GB-OP1: {refused:?}"
    );
    app.start_upload(endpoint, "unfinished/upload").await?;
    // The upload must be older than the age asked for.
    tokio::time::sleep(Duration::from_secs(2)).await;
    annotate(json!({REQUEST: "true", AGE: "1s"})).await?;
    wait(
        "the cleanup-mpu request run and removed",
        Duration::from_secs(90),
        || async {
            let b = buckets.get("my-bucket").await?;
            let left = b.status.as_ref().and_then(|s| s.incomplete_uploads);
            Ok(!b.annotations().contains_key(REQUEST)
                && !b.annotations().contains_key(AGE)
                && left == Some(0))
        },
    )
    .await?;
    let events: Api<Event> = Api::namespaced(buckets.clone().into_client(), ns());
    let note = events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .find(|e| {
            e.reason.as_deref() == Some("UploadsCleanedUp")
                && e.regarding
                    .as_ref()
                    .is_some_and(|r| r.name.as_deref() == Some("my-bucket"))
        })
        .and_then(|e| e.note)
        .context("no UploadsCleanedUp Event on my-bucket")?;
    ensure!(note.starts_with("aborted 1 "), "the Event says {note:?}");
    println!(
        "buckets: cleanup-mpu: a malformed value refused (GB-OP1); the request aborted the one unfinished upload, the status counts none, the annotations are gone ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
