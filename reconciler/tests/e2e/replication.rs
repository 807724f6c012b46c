//! Step 5: three storage roles left at replication factor 3. Scaling the Auto group to two
//! asks the highest member to drain, which would leave two roles: the operator reports
//! `ReplicationUnsafe`, keeps the pod and removes nothing. A fourth member (a Manual node)
//! joins; the drain resumes by itself, proves and removes the member, and every object reads
//! back.

use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, ensure};
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
    let result = wait(
        "garage-storage-2 drained and removed after manual-c joined",
        Duration::from_secs(900),
        || async {
            Ok(gns.get_opt("garage-storage-2").await?.is_none()
                && pods.get_opt("garage-storage-2-0").await?.is_none())
        },
    )
    .await;
    if let Err(e) = result {
        dump_drain(&clusters, &admin).await;
        return Err(anyhow!("{e:#}"));
    }
    let layout = admin.layout().await?;
    let manual_c = gns
        .get("manual-c")
        .await?
        .status
        .and_then(|s| s.node_id)
        .context("manual-c has no ID")?;
    ensure!(
        layout.roles.len() == 3 && layout.roles.iter().any(|r| r.id.as_str() == manual_c),
        "expected garage-storage-0, -1 and manual-c in the layout"
    );
    let store = w.store.as_ref().context("no objects were written")?;
    verify(store, &s3(sim, "garage-storage-1-0")?, &w.checksummed).await?;
    println!(
        "ReplicationUnsafe cleared by a fourth member; drained and removed in {:.1}s; {} objects read back",
        t.elapsed().as_secs_f64(),
        w.checksummed.len()
    );
    Ok(())
}

fn reason_of(
    c: &shared_types::garage_cluster::v1beta2::GarageCluster,
    type_: &str,
) -> Option<String> {
    c.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|x| x.type_ == type_)
        .map(|x| x.reason.clone())
}
