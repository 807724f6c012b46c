//! Three storage roles left at replication factor 3. Scaling the Auto group to two asks the
//! highest member to drain, which would leave two roles: the operator reports
//! `ReplicationUnsafe`, keeps the pod and removes nothing. A fourth member (a Manual node)
//! joins and the drain resumes by itself: its intent is recorded and the role removed while
//! the source keeps running. (The proof that follows is the scale-down stage's; the
//! teardown stage then deletes the cluster in the middle of it.)

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use kube::api::PostParams;
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::garage_node::GarageNode;

use crate::support::*;
use crate::{NAME, RESYNC, World};

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let client = &w.client.clone();
    let sim = w.sim;
    let clusters = w.clusters.clone();
    let gns = w.gns.clone();
    let pods = w.pods.clone();
    let admin = admin_client(client, sim, 0).await?;
    let before = admin.layout().await?;
    ensure!(before.roles.len() == 3, "expected three roles");
    scale(&clusters, 2)
        .await
        .context("scale 3 -> 2 not admitted")?;
    wait(
        "StorageDrainReady=False/ReplicationUnsafe",
        Duration::from_secs(120),
        || async {
            let c = clusters.get(NAME).await?;
            Ok(
                reason_of(&c, "StorageDrainReady").as_deref() == Some("ReplicationUnsafe")
                    && condition(&c, "StorageScaleDownBlocked") == Some("True".into()),
            )
        },
    )
    .await?;
    tokio::time::sleep(RESYNC * 3).await;
    let held = admin.layout().await?;
    ensure!(
        held.version == before.version && held.roles.len() == 3,
        "a role was touched below the replication factor"
    );
    ensure!(
        clusters
            .get(NAME)
            .await?
            .status
            .and_then(|s| s.storage_drain)
            .is_none(),
        "a drain was recorded below the replication factor"
    );
    ensure!(
        pods.get_opt("garage-storage-2-0").await?.is_some(),
        "the pod went below the replication factor"
    );
    println!("scale 3 -> 2 at factor 3: ReplicationUnsafe, nothing removed");

    // Replacement capacity: the drain resumes once it is in the committed layout.
    let t = Instant::now();
    let gn: GarageNode = serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageNode",
        "metadata": {"name": "manual-c"},
        "spec": {
            "clusterRef": {"name": NAME},
            "zone": "zone-c",
            "capacity": "1Gi",
            "storage": {
                "metadata": {"size": "100Mi", "storageClassName": kubesim::STORAGE_CLASS},
                "data": {"size": "1Gi", "storageClassName": kubesim::STORAGE_CLASS},
            },
        },
    }))?;
    gns.create(&PostParams::default(), &gn).await?;
    // The drain resumes by itself: the intent is recorded and the role removed once the
    // fourth member is in the committed layout. Its proof is the one the scale-down stage
    // carried to the end; here the point is that the hold clears.
    let s2_id = w
        .ids
        .get("garage-storage-2")
        .cloned()
        .context("no ID recorded for garage-storage-2")?;
    let result = wait(
        "the held drain resumed after manual-c joined (role of garage-storage-2 removed)",
        Duration::from_secs(900),
        || async {
            let layout = admin_client(client, sim, 0).await?.layout().await?;
            let c = clusters.get(NAME).await?;
            let recorded = c
                .status
                .as_ref()
                .and_then(|s| s.storage_drain.as_ref())
                .and_then(|d| d.actor.as_ref())
                .and_then(|a| a.name.as_deref())
                == Some("garage-storage-2");
            Ok(recorded
                && layout.roles.len() == 3
                && layout.roles.iter().all(|r| r.id.as_str() != s2_id)
                && condition(&c, "StorageScaleDownBlocked") != Some("True".into()))
        },
    )
    .await;
    or_dump_drain(result, &clusters, &admin).await?;
    ensure!(
        pods.get_opt("garage-storage-2-0").await?.is_some(),
        "the source pod went before its proof"
    );
    let manual_c = gns
        .get("manual-c")
        .await?
        .status
        .and_then(|s| s.node_id)
        .context("manual-c has no ID")?;
    ensure!(
        admin
            .layout()
            .await?
            .roles
            .iter()
            .any(|r| r.id.as_str() == manual_c),
        "manual-c is not in the layout"
    );
    println!(
        "ReplicationUnsafe cleared by a fourth member: the held drain resumed and removed the role in {:.1}s; the source keeps running for its proof",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
