//! Steps 6b-6c: with 200 random objects written, 4 -> 3 drains the fourth member through a
//! reconciler restart; a Manual node's DELETE is refused before its proof and allowed after.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use kube::api::{DeleteParams, Patch, PatchParams};
use localcluster::wait_until as wait;
use serde_json::json;

use crate::rollout::Midway;
use crate::support::*;
use crate::{NAME, World};

/// 200 objects of random content written through `garage-storage-0-0` and remembered with
/// their store, to be read back after every later change.
pub(crate) async fn write_objects(w: &mut World<'_>) -> anyhow::Result<()> {
    let admin = admin_client(&w.client, w.sim, 0).await?;
    write_checksummed(w, &admin, "garage-storage-0-0").await
}

/// 4 -> 3 with 200 random objects written first and `midway` played once the drain is
/// recorded (site A: a reconciler restart): the fourth member drains, its pod runs until
/// DrainPrepared=True, then it goes; every object reads back byte-identical.
pub(crate) async fn scale_down(w: &mut World<'_>, midway: Midway<'_>) -> anyhow::Result<()> {
    let client = &w.client.clone();
    let sim = w.sim;
    let clusters = w.clusters.clone();
    let gns = w.gns.clone();
    let pods = w.pods.clone();
    let admin = admin_client(client, sim, 0).await?;
    if w.store.is_none() {
        write_objects(w).await?;
    }
    let s3 = |pod: &str| s3(sim, pod);
    let before = admin.layout().await?.roles.len();
    let t = Instant::now();
    scale(&clusters, 3)
        .await
        .context("scale 4 -> 3 not admitted")?;
    // A fault in the middle, once the intent is recorded; after a restart the new reconciler
    // resumes from the record.
    wait(
        "the drain intent recorded",
        Duration::from_secs(180),
        || async {
            let c = clusters.get(NAME).await?;
            Ok(c.status.and_then(|s| s.storage_drain).is_some())
        },
    )
    .await?;
    match midway {
        Midway::Nothing => {}
        Midway::RestartReconciler => {
            w.stop_reconciler().await;
            tokio::time::sleep(Duration::from_secs(2)).await;
            w.start_reconciler().await;
            println!("reconciler restarted with the drain recorded");
        }
        Midway::Fault(fault) => fault.await?,
    }
    use std::sync::atomic::{AtomicBool, Ordering};
    let prepared_seen = Arc::new(AtomicBool::new(false));
    let pod_gone_early = Arc::new(AtomicBool::new(false));
    // Garage retries a table sync that failed on a reconnecting peer only at its next
    // anti-entropy pass (10 minutes); the timeouts leave room for one.
    let drained = wait(
        "garage-storage-3 drained and removed",
        Duration::from_secs(1500),
        || {
            let (gns, pods, clusters) = (gns.clone(), pods.clone(), clusters.clone());
            let (seen, early) = (prepared_seen.clone(), pod_gone_early.clone());
            async move {
                let node = gns.get_opt("garage-storage-3").await?;
                if drain_proven(&clusters, "garage-storage-3", node.as_ref()).await? {
                    seen.store(true, Ordering::SeqCst);
                }
                let pod = pods.get_opt("garage-storage-3-0").await?;
                if pod.is_none() && !seen.load(Ordering::SeqCst) {
                    early.store(true, Ordering::SeqCst);
                }
                Ok(node.is_none() && pod.is_none())
            }
        },
    )
    .await;
    or_dump_drain(drained, &clusters, &admin).await?;
    ensure!(
        !pod_gone_early.load(Ordering::SeqCst),
        "the fourth pod went before DrainPrepared=True"
    );
    ensure!(
        prepared_seen.load(Ordering::SeqCst),
        "no completed drain proof was seen before the pod went"
    );
    let layout = admin.layout().await?;
    ensure!(
        layout.roles.len() == before - 1,
        "expected {} roles after the drain, got {}",
        before - 1,
        layout.roles.len()
    );
    let store = w.store.as_ref().context("no objects were written")?;
    verify(store, &s3("garage-storage-0-0")?, &w.checksummed).await?;
    println!(
        "scale 4 -> 3: drained, proven and removed in {:.1}s; 200 random objects read back identical",
        t.elapsed().as_secs_f64()
    );
    // The next spec change is admitted only once the completed record is released.
    drain_idle(&clusters).await?;
    Ok(())
}

/// A Manual node: DELETE before the proof is refused; after drain=true and DrainPrepared=True
/// it is allowed and the node goes; every object reads back.
pub(crate) async fn manual(w: &mut World<'_>) -> anyhow::Result<()> {
    let sim = w.sim;
    let clusters = w.clusters.clone();
    let gns = w.gns.clone();
    let pods = w.pods.clone();
    let s3 = |pod: &str| s3(sim, pod);
    let store = w.store.as_ref().context("no objects were written")?;
    let checksummed = &w.checksummed;

    // 6c. A Manual node: DELETE before the proof is refused; after drain=true and
    //     DrainPrepared=True it is allowed and the node goes.
    let refused = gns
        .delete("manual-b", &DeleteParams::default())
        .await
        .err()
        .context("an unprepared Manual node was deleted")?;
    ensure!(
        refused.to_string().contains("GN-D7"),
        "unexpected refusal: {refused}"
    );
    gns.patch(
        "manual-b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"garage.rajsingh.info/drain": "true"}}})),
    )
    .await?;
    wait(
        "manual-b DrainPrepared=True",
        Duration::from_secs(1500),
        || async {
            let n = gns.get("manual-b").await?;
            Ok(node_condition(&n, "DrainPrepared") == Some("True".into()))
        },
    )
    .await?;
    ensure!(
        pods.get_opt("manual-b-0").await?.is_some(),
        "manual-b's pod went before its deletion"
    );
    gns.delete("manual-b", &DeleteParams::default())
        .await
        .context("deleting the prepared Manual node")?;
    wait(
        "manual-b and its pod gone",
        Duration::from_secs(120),
        || async {
            Ok(gns.get_opt("manual-b").await?.is_none()
                && pods.get_opt("manual-b-0").await?.is_none())
        },
    )
    .await?;
    verify(store, &s3("garage-storage-1-0")?, checksummed).await?;
    drain_idle(&clusters).await?;
    println!("Manual node: DELETE refused before the proof, allowed after; objects read back");
    Ok(())
}
