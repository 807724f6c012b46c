//! Membership: two Manual GarageNodes join beside the Auto group (site B); 3 -> 4 adds
//! exactly one role in one layout version (site A).

use std::time::Duration;

use anyhow::{Context as _, ensure};
use localcluster::wait_until as wait;

use crate::World;
use crate::support::*;

/// Two Manual GarageNodes join beside the Auto group; the objects of the round trip read back.
pub(crate) async fn manual_join(w: &mut World<'_>) -> anyhow::Result<()> {
    let client = &w.client.clone();
    let sim = w.sim;
    let clusters = w.clusters.clone();
    let gns = w.gns.clone();
    let admin = admin_client(client, sim, 0).await?;
    // 5. Two Manual GarageNodes join beside the Auto group: one on claim templates, one on
    //    an emptyDir metadata volume and a claim the user made. The objects of step 2 read
    //    back afterwards.
    manual_nodes(client).await?;
    // Ready was already True: wait for the members first, then for Ready again.
    wait(
        "the Manual nodes' roles in the layout",
        // One version per member after bootstrap, each after Garage's table sync settles.
        Duration::from_secs(720),
        || async {
            Ok(admin_client(client, sim, 0)
                .await?
                .layout()
                .await?
                .roles
                .len()
                == 5)
        },
    )
    .await?;
    wait_ready(&clusters, Duration::from_secs(120)).await?;
    let layout = admin_client(client, sim, 0).await?.layout().await?;
    for name in ["manual-a", "manual-b"] {
        let st = gns.get(name).await?.status.unwrap_or_default();
        let id = st.node_id.context("a Manual node without an ID")?;
        ensure!(
            layout.roles.iter().any(|r| r.id.as_str() == id),
            "{name} has no role"
        );
    }
    read_back(&admin, sim).await?;
    println!("two Manual nodes joined (5 roles); every object reads back");
    Ok(())
}

/// 3 -> 4 adds exactly one role in one layout version.
pub(crate) async fn scale_up(w: &mut World<'_>) -> anyhow::Result<()> {
    let client = &w.client.clone();
    let sim = w.sim;
    let clusters = w.clusters.clone();
    let before = admin_client(client, sim, 0)
        .await?
        .layout()
        .await?
        .roles
        .len();
    let version = admin_client(client, sim, 0).await?.layout().await?.version;
    scale(&clusters, 4).await?;
    wait_ready(&clusters, Duration::from_secs(180)).await?;
    let admin = admin_client(client, sim, 0).await?;
    let layout = admin.layout().await?;
    ensure!(
        layout.roles.len() == before + 1,
        "expected {} roles, got {}",
        before + 1,
        layout.roles.len()
    );
    ensure!(
        layout.version == version + 1,
        "scale-up took {} versions",
        layout.version - version
    );
    println!("scale 3 -> 4 added one role in one version");
    Ok(())
}
