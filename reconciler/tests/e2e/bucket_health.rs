//! Site D, after the operational annotations: a bucket whose metadata Garage cannot decode.
//!
//! The key granted on a bucket has its entry in Garage's key table overwritten, on every
//! member, with bytes no Garage version decodes, while the members run: reading the bucket is
//! then a 500 "Unable to decode entry of key", as after a version mix-up. The bucket counts
//! the failures in a row on its `bucket-decode-errors` annotation, raises
//! `BucketMetadataDegraded` at the third and asks its cluster for a `Tables` repair, which the
//! cluster runs and records. With the entries written back, the first pass that reads the
//! bucket clears the count and the condition and the bucket is Ready again; the checksummed
//! objects of the site read back.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use garage_fixture::metadata::{self, Damaged};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::conditions::bucket::CONDITION_BUCKET_METADATA_DEGRADED;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_key::GarageKey;
use shared_types::keys::annotation::{ANNOTATION_BUCKET_DECODE_ERRORS, ANNOTATION_TRIGGER_REPAIR};

use crate::buckets::create;
use crate::support::{s3, verify};
use crate::{NAME, World, ns};

const BUCKET: &str = "health-bucket";
const KEY: &str = "health-key";

pub(crate) async fn decode_failure(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let buckets: Api<GarageBucket> = Api::namespaced(w.client.clone(), ns());
    let keys: Api<GarageKey> = Api::namespaced(w.client.clone(), ns());
    create::<GarageKey>(
        &w.client,
        json!({"metadata": {"name": KEY}, "spec": {"clusterRef": {"name": NAME}}}),
    )
    .await?;
    create::<GarageBucket>(
        &w.client,
        json!({"metadata": {"name": BUCKET}, "spec": {
            "clusterRef": {"name": NAME},
            "keyPermissions": [{"keyRef": {"name": KEY}, "read": true}],
        }}),
    )
    .await?;
    wait(
        "the health bucket Ready with its key granted",
        Duration::from_secs(120),
        || async {
            let b = buckets.get(BUCKET).await?;
            Ok(condition(&b, "Ready").as_deref() == Some("True")
                && b.status
                    .as_ref()
                    .and_then(|s| s.keys.as_ref())
                    .is_some_and(|k| k.len() == 1))
        },
    )
    .await?;
    let key_id = keys
        .get(KEY)
        .await?
        .status
        .and_then(|s| s.access_key_id)
        .context("the health key has no access key ID")?;

    let stores = metadata_dirs(w).await?;
    let mut damaged: Vec<(PathBuf, Damaged)> = Vec::new();
    for dir in &stores {
        damaged.push((
            dir.clone(),
            metadata::damage(dir, "key", key_id.as_bytes())?,
        ));
    }
    let degraded = wait(
        "BucketMetadataDegraded after three failures in a row, and the Tables repair run",
        Duration::from_secs(180),
        || async {
            let b = buckets.get(BUCKET).await?;
            let counted = b
                .annotations()
                .get(ANNOTATION_BUCKET_DECODE_ERRORS)
                .and_then(|v| v.parse::<u32>().ok())
                .unwrap_or(0);
            let c = w.clusters.get(NAME).await?;
            let repaired = c
                .status
                .as_ref()
                .and_then(|s| s.last_operation.as_ref())
                .is_some_and(|l| {
                    l.type_.as_deref() == Some("Repair:Tables") && l.succeeded == Some(true)
                });
            let pending = c.annotations().contains_key(ANNOTATION_TRIGGER_REPAIR);
            // The count stops at three.
            Ok(counted == 3
                && condition(&b, CONDITION_BUCKET_METADATA_DEGRADED).as_deref() == Some("True")
                && condition(&b, "Ready").as_deref() == Some("False")
                && reason(&b, "Ready").as_deref() == Some("MetadataDecodeError")
                && repaired
                && !pending)
        },
    )
    .await;
    for (dir, entries) in &damaged {
        metadata::restore(dir, entries)?;
    }
    if let Err(e) = degraded {
        let b = buckets.get(BUCKET).await?;
        let c = w.clusters.get(NAME).await?;
        anyhow::bail!(
            "{e:#}\nbucket annotations {:?}, status {}\ncluster lastOperation {}",
            b.annotations(),
            serde_json::to_string(&b.status)?,
            serde_json::to_string(&c.status.and_then(|s| s.last_operation))?
        );
    }
    let b = buckets.get(BUCKET).await?;
    let message = b
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.type_ == CONDITION_BUCKET_METADATA_DEGRADED)
        })
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(
        message.contains("Tables repair"),
        "the condition does not say what was done: {message}"
    );
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(w.client.clone(), ns());
    let requested = events
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(BUCKET))
        .filter(|e| e.reason.as_deref() == Some("RepairRequested"))
        .count();
    ensure!(
        requested == 1,
        "{requested} RepairRequested Events on the bucket, not one"
    );

    wait(
        "the health bucket Ready again, its count and condition cleared",
        Duration::from_secs(120),
        || async {
            let b = buckets.get(BUCKET).await?;
            Ok(condition(&b, "Ready").as_deref() == Some("True")
                && condition(&b, CONDITION_BUCKET_METADATA_DEGRADED).is_none()
                && !b
                    .annotations()
                    .contains_key(ANNOTATION_BUCKET_DECODE_ERRORS))
        },
    )
    .await?;
    let store = w.store.as_ref().context("no object store")?;
    verify(
        store,
        &s3(w.sim, &format!("{NAME}-storage-0-0"))?,
        &w.checksummed,
    )
    .await?;
    // Gone before the site's teardown, which counts what is left.
    let dp = DeleteParams::default();
    buckets.delete(BUCKET, &dp).await?;
    keys.delete(KEY, &dp).await?;
    wait(
        "the health bucket and key deleted",
        Duration::from_secs(120),
        || async {
            Ok(buckets.get_opt(BUCKET).await?.is_none() && keys.get_opt(KEY).await?.is_none())
        },
    )
    .await?;
    println!(
        "bucket health: the key entry undecodable on {} members, BucketMetadataDegraded at the third failure, a Tables repair requested and run, cleared once readable; objects read back, in {:.1}s",
        stores.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The bucket's condition `type_`, when it has one.
fn found<'a>(
    b: &'a GarageBucket,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    b.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

fn reason(b: &GarageBucket, type_: &str) -> Option<String> {
    found(b, type_).map(|c| c.reason.clone())
}

fn condition(b: &GarageBucket, type_: &str) -> Option<String> {
    found(b, type_).map(|c| c.status.clone())
}

/// The metadata directory of every running member of the site, from the configuration kubesim
/// rewrote for it.
async fn metadata_dirs(w: &World<'_>) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for pod in w.pods.list(&ListParams::default()).await?.items {
        let Some(dir) = w.sim.pod_dir(ns(), &pod.name_any()) else {
            continue;
        };
        let Ok(config) = std::fs::read_to_string(dir.join("garage").join("garage.toml")) else {
            continue;
        };
        let line = config
            .lines()
            .find_map(|l| l.trim().strip_prefix("metadata_dir"))
            .with_context(|| format!("no metadata_dir in {}'s configuration", pod.name_any()))?;
        let path = line.trim_start_matches([' ', '=']).trim().trim_matches('"');
        out.push(PathBuf::from(path));
    }
    ensure!(
        out.len() >= 3,
        "found the metadata of {} members only: {out:?}",
        out.len()
    );
    Ok(out)
}
