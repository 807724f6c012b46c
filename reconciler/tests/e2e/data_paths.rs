//! Site D, last: a one-member cluster (replication factor 1) whose data is two directories,
//! `spec.storage.data.paths`, each on its own claim with its own VolumeAttributesClass.
//!
//! The member becomes Ready with one claim per path, each created with its class; Garage's
//! layout role has the two capacities together (600Mi declared on one path, the 2Gi volume of
//! the other); 200 checksummed objects written through S3 land as blocks in both directories.
//! One path's class changes live: that claim alone reaches the new class (spec and status),
//! the pod and its StatefulSet stay as they were, and every object reads back. Then
//! `expansion::data_path` grows `/data/slow` (on a class whose file systems grow only when
//! mounted again), `expansion::offline` grows the metadata volume on that class (the operator
//! replaces the pod for it), and `expansion::blocked` asks `/data/fast`, on a class that cannot
//! grow, for more. Deleting the cluster leaves only the retained claims.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::conditions::cluster::CONDITION_STORAGE_VOLUME_ATTRIBUTES_READY;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use crate::support::*;
use crate::{NAME, World, ns};

/// The member's pod, StatefulSet and claims.
const POD: &str = "garage-storage-0-0";
const STS: &str = "garage-storage-0";
const FAST_CLAIM: &str = "data-0-garage-storage-0-0";
const SLOW_CLAIM: &str = "data-1-garage-storage-0-0";
const META_CLAIM: &str = "metadata-garage-storage-0-0";
/// 600Mi declared on `/data/fast`, and the 2Gi volume of `/data/slow`.
const CAPACITY: u64 = (600 << 20) + (2 << 30);

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    crate::volumes::ensure_classes(&w.client).await?;
    let gc: GarageCluster = serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
        "metadata": {"name": NAME},
        "spec": {
            "replication": {"factor": 1},
            "network": {"rpcTimeout": "15s"},
            "storage": {
                "replicas": 1,
                // Both grow only offline: the file system once a pod mounts them again.
                "metadata": {"size": "100Mi", "storageClassName": kubesim::OFFLINE_STORAGE_CLASS},
                "data": {
                    "storageClassName": kubesim::STORAGE_CLASS,
                    // /data/fast on a class whose claims cannot grow, for `expansion::blocked`.
                    "paths": [
                        {"path": "/data/fast", "capacity": "600Mi",
                         "volume": {"size": "1Gi", "volumeAttributesClassName": "e2e-fast",
                                    "storageClassName": kubesim::FIXED_STORAGE_CLASS}},
                        {"path": "/data/slow",
                         "volume": {"size": "2Gi", "volumeAttributesClassName": "e2e-slow",
                                    "storageClassName": kubesim::OFFLINE_STORAGE_CLASS}},
                    ],
                },
            },
        },
    }))?;
    w.clusters.create(&PostParams::default(), &gc).await?;
    wait_ready(&w.clusters, Duration::from_secs(240)).await?;
    let ready_after = t.elapsed();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client.clone(), ns());
    classes_reached(&claims, &w.clusters, "e2e-fast", "e2e-slow").await?;

    let admin = admin_client(&w.client, w.sim, 0).await?;
    let layout = admin.layout().await?;
    let capacities: Vec<Option<u64>> = layout.roles.iter().map(|r| r.capacity).collect();
    ensure!(
        capacities == [Some(CAPACITY)],
        "layout capacities {capacities:?}, expected one role of {CAPACITY} bytes"
    );
    create_e2e_bucket(&admin).await?;
    write_checksummed(w, &admin, POD).await?;
    let mut blocks = Vec::new();
    for claim in [FAST_CLAIM, SLOW_CLAIM] {
        let n = block_files(&w.client, &claims, claim).await?;
        ensure!(n > 0, "no block of the objects landed on claim {claim}");
        blocks.push(n);
    }
    println!(
        "data paths: one member on /data/fast (e2e-fast) and /data/slow (e2e-slow) Ready in {:.1}s, each path its own claim with its class; layout capacity {CAPACITY} bytes (600Mi + 2Gi); 200 objects written, {} and {} block files on the two claims ({:.1}s)",
        ready_after.as_secs_f64(),
        blocks[0],
        blocks[1],
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let pod_before = w.pods.get(POD).await?.metadata.uid;
    let sets: Api<StatefulSet> = Api::namespaced(w.client.clone(), ns());
    let sts_before = sets.get(STS).await?.metadata.generation;
    let change = json!([{
        "op": "replace",
        "path": "/spec/storage/data/paths/1/volume/volumeAttributesClassName",
        "value": "e2e-fast",
    }]);
    wait(
        "the class change of /data/slow admitted",
        Duration::from_secs(120),
        || async {
            let patch = Patch::<()>::Json(serde_json::from_value(change.clone())?);
            Ok(w.clusters
                .patch(NAME, &PatchParams::default(), &patch)
                .await
                .is_ok())
        },
    )
    .await?;
    classes_reached(&claims, &w.clusters, "e2e-fast", "e2e-fast").await?;
    let changed_after = t.elapsed();
    ensure!(
        w.pods.get(POD).await?.metadata.uid == pod_before,
        "a class change restarted the pod"
    );
    ensure!(
        sets.get(STS).await?.metadata.generation == sts_before,
        "a class change changed the StatefulSet"
    );
    let store = w.store.as_ref().context("no object store")?;
    verify(store, &s3(w.sim, POD)?, &w.checksummed).await?;
    println!(
        "data paths: /data/slow moved to e2e-fast live in {:.1}s (its claim's spec and status), /data/fast untouched, same pod and StatefulSet, 200 objects read back ({:.1}s)",
        changed_after.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
    crate::expansion::data_path(w, POD, SLOW_CLAIM).await?;
    crate::expansion::offline(w, POD, META_CLAIM).await?;
    crate::expansion::blocked(w, POD, FAST_CLAIM).await?;
    crate::teardown::destroy(w, &[]).await
}

/// Waits until claim `data-0` runs `fast` and `data-1` runs `slow`, in spec and status, with
/// `StorageVolumeAttributesReady=True`.
async fn classes_reached(
    claims: &Api<PersistentVolumeClaim>,
    clusters: &Api<GarageCluster>,
    fast: &str,
    slow: &str,
) -> anyhow::Result<()> {
    wait(
        &format!("{FAST_CLAIM} on {fast} and {SLOW_CLAIM} on {slow}"),
        Duration::from_secs(240),
        || async {
            let runs = |c: Option<PersistentVolumeClaim>, want: &str| {
                c.is_some_and(|c| {
                    c.spec
                        .and_then(|s| s.volume_attributes_class_name)
                        .as_deref()
                        == Some(want)
                        && c.status
                            .and_then(|s| s.current_volume_attributes_class_name)
                            .as_deref()
                            == Some(want)
                })
            };
            Ok(runs(claims.get_opt(FAST_CLAIM).await?, fast)
                && runs(claims.get_opt(SLOW_CLAIM).await?, slow)
                && condition(
                    &clusters.get(NAME).await?,
                    CONDITION_STORAGE_VOLUME_ATTRIBUTES_READY,
                ) == Some("True".into()))
        },
    )
    .await
}

/// Garage's block files (`<2 hex>/<2 hex>/<hash>`) in the directory behind `claim`.
async fn block_files(
    client: &kube::Client,
    claims: &Api<PersistentVolumeClaim>,
    claim: &str,
) -> anyhow::Result<usize> {
    let volume = claims
        .get(claim)
        .await?
        .spec
        .and_then(|s| s.volume_name)
        .context("claim not bound")?;
    let pv = Api::<PersistentVolume>::all(client.clone())
        .get(&volume)
        .await?;
    let dir = kubesim::provisioner::volume_path(&pv).context("not a kubesim volume")?;
    Ok(files_at_depth(&dir, 3))
}

/// Regular files exactly `depth` levels below `dir`.
pub(crate) fn files_at_depth(dir: &Path, depth: usize) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() && depth > 1 => files_at_depth(&e.path(), depth - 1),
            Ok(t) if t.is_file() && depth == 1 => 1,
            _ => 0,
        })
        .sum()
}
