//! `spec.replication.zoneRedundancyMode`: a change is staged as Garage's layout parameter
//! through the coordinator, applied as one new layout version with no role change, and every
//! checksummed object reads back after it.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use garage_admin::ZoneRedundancy;
use kube::api::{Patch, PatchParams};
use localcluster::wait_until as wait;
use serde_json::json;

use crate::support::*;
use crate::{NAME, World};

/// Sets `AtLeast` 1 zone (always satisfiable) and waits for the layout computed with it.
pub(crate) async fn zone_redundancy(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let pod = format!("{NAME}-storage-0-0");
    let admin = admin_client_at(&w.client, w.sim, &pod).await?;
    let before = admin.layout().await?;
    ensure!(
        before.parameters.zone_redundancy != ZoneRedundancy::AtLeast(1),
        "the layout already has the parameter the step sets"
    );
    w.clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replication": {
                "zoneRedundancyMode": "AtLeast", "zoneRedundancyMinZones": 1,
            }}})),
        )
        .await?;
    wait(
        "the layout computed with zone redundancy AtLeast(1)",
        Duration::from_secs(180),
        || async {
            let l = admin.layout().await?;
            Ok(l.parameters.zone_redundancy == ZoneRedundancy::AtLeast(1)
                && !l.has_staged_changes())
        },
    )
    .await?;
    let after = admin.layout().await?;
    ensure!(
        after.version == before.version + 1,
        "one version for the parameter: {} -> {}",
        before.version,
        after.version
    );
    let roles = |l: &garage_admin::ClusterLayout| {
        let mut r: Vec<(String, String, Option<u64>)> = l
            .roles
            .iter()
            .map(|r| (r.id.to_string(), r.zone.clone(), r.capacity))
            .collect();
        r.sort();
        r
    };
    ensure!(
        roles(&before) == roles(&after),
        "roles changed with the parameter"
    );
    let store = w.store.as_ref().context("no object store")?;
    verify(store, &s3(w.sim, &pod)?, &w.checksummed).await?;
    println!(
        "layout parameters: zone redundancy AtLeast(1) applied as version {} with the same roles, objects read back, in {:.1}s",
        after.version,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
