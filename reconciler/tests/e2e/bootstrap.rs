//! Steps 1-4: bootstrap through a reconciler crash, an S3 round trip, silence at steady
//! state, and a restarted pod keeping its identity.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::ensure;
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams};
use localcluster::wait_until as wait;

use crate::support::*;
use crate::{RESYNC, World};

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let client = &w.client.clone();
    let sim = w.sim;
    let clusters = w.clusters.clone();
    let gns = w.gns.clone();
    // 1. Kill the reconciler once members have identities, before or during the first
    //    layout, then restart it.
    let t = Instant::now();
    wait(
        "two generated nodes with a node ID",
        Duration::from_secs(120),
        || async {
            let list = gns.list(&ListParams::default()).await?;
            Ok(list
                .items
                .iter()
                .filter(|n| n.status.as_ref().and_then(|s| s.node_id.as_ref()).is_some())
                .count()
                >= 2)
        },
    )
    .await?;
    w.stop_reconciler().await;
    let layout_at_abort = match admin_client(client, sim, 0).await {
        Ok(a) => a
            .layout()
            .await
            .map(|l| (l.version, l.roles.len(), l.staged_role_changes.len()))
            .ok(),
        Err(_) => None,
    };
    println!(
        "reconciler aborted mid-bootstrap after {:.1}s; layout (version, roles, staged) = {layout_at_abort:?}",
        t.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    w.start_reconciler().await;
    wait_ready(&clusters, Duration::from_secs(180)).await?;
    println!("Ready after {:.1}s", t.elapsed().as_secs_f64());
    let admin = admin_client(client, sim, 0).await?;
    let layout = admin.layout().await?;
    ensure!(
        layout.roles.len() == 3,
        "expected 3 roles, got {:?}",
        layout.roles
    );
    ensure!(layout.staged_role_changes.is_empty(), "left staged changes");
    crate::network_policy::check(w).await?;
    let ids: BTreeMap<String, String> = node_ids(&gns).await?;
    w.ids = ids.clone();
    ensure!(ids.len() == 3);

    // 2. S3 round trip of 200 objects through different pods.
    s3_round_trip(&admin, sim).await?;
    println!("200 objects round-tripped");

    // 3. Silence at steady state.
    tokio::time::sleep(RESYNC * 2).await;
    let before = crate::object_diff::bodies(client).await?;
    let writes = w.metrics.api_writes();
    let reconciles = w.metrics.reconciles();
    tokio::time::sleep(RESYNC * 5 + Duration::from_secs(1)).await;
    let after = crate::object_diff::bodies(client).await?;
    let reconciled = w.metrics.reconciles() - reconciles;
    ensure!(
        reconciled >= 5,
        "only {reconciled} reconciles in five resyncs"
    );
    let moved = crate::object_diff::changes(&before, &after);
    // One status write that follows the machine's disk past the reconciler's threshold is
    // the status doing its job; any other write, or that one without such a move, fails.
    let disk_followed = w.metrics.api_writes() == writes + 1
        && crate::object_diff::only_the_disk_moved(&before, &after, crate::NAME);
    if disk_followed {
        println!("steady state: the disk moved a percent, storageStats followed: {moved:?}");
    }
    ensure!(
        disk_followed || (w.metrics.api_writes() == writes && moved.is_empty()),
        "{} API writes at steady state; what moved:\n{}",
        w.metrics.api_writes() - writes,
        moved.join("\n")
    );
    println!("steady state: {reconciled} reconciles, 0 writes");

    // 4. A deleted storage pod keeps its identity.
    let pods = w.pods.clone();
    let victim = "garage-storage-1-0";
    let old_uid = pods.get(victim).await?.uid();
    pods.delete(victim, &DeleteParams::default()).await?;
    wait(
        "the pod to come back and be re-identified",
        Duration::from_secs(120),
        || async {
            let Some(p) = pods.get_opt(victim).await? else {
                return Ok(false);
            };
            let gn = gns.get("garage-storage-1").await?;
            let st = gn.status.unwrap_or_default();
            Ok(p.uid() != old_uid && st.observed_pod_uid == p.uid())
        },
    )
    .await?;
    ensure!(
        node_ids(&gns).await? == ids,
        "a node ID changed after the pod restart"
    );
    wait_ready(&clusters, Duration::from_secs(120)).await?;
    println!("pod restart kept node IDs");
    Ok(())
}

/// A second site: Ready with three roles, and the round trip of 200 objects whose reads later
/// stages repeat.
pub(crate) async fn ready(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    wait_ready(&w.clusters, Duration::from_secs(300)).await?;
    let admin = admin_client(&w.client, w.sim, 0).await?;
    ensure!(admin.layout().await?.roles.len() == 3, "expected 3 roles");
    s3_round_trip(&admin, w.sim).await?;
    w.ids = node_ids(&w.gns).await?;
    println!(
        "site {}: Ready in {:.1}s; 200 objects round-tripped",
        crate::ns(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
