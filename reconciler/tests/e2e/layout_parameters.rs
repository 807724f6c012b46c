//! `spec.replication.zoneRedundancyMode`: a change is staged as Garage's layout parameter
//! through the coordinator, applied as one new layout version with no role change, and every
//! checksummed object reads back after it. `spec.replication.factor`: a change on the running
//! cluster (with the purge request admission asks for) is refused with `Unsupported` naming
//! the field, no pod or workload is touched, and setting it back makes the cluster Ready.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use garage_admin::ZoneRedundancy;
use kube::api::{Patch, PatchParams};
use localcluster::wait_until as wait;
use serde_json::json;

use crate::support::*;
use crate::{NAME, World};

const PURGE: &str = shared_types::keys::annotation::ANNOTATION_PURGE_CLUSTER_LAYOUT;

/// Changes the factor with the purge request, and proves the change is refused and nothing
/// is rolled; then sets it back.
pub(crate) async fn factor_change_refused(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let factor = |f: i64| {
        json!({
            "metadata": {"annotations": {PURGE: format!("factor={f}")}},
            "spec": {"replication": {"factor": f}},
        })
    };
    let before = snapshot(&w.client).await?;
    w.clusters
        .patch(NAME, &PatchParams::default(), &Patch::Merge(factor(2)))
        .await
        .context("the factor change with its purge request was not admitted")?;
    wait_condition(
        &w.clusters,
        shared_types::conditions::common::CONDITION_READY,
        "False",
        Some(shared_types::conditions::reason::REASON_UNSUPPORTED),
        Duration::from_secs(120),
    )
    .await?;
    let c = w.clusters.get(NAME).await?;
    let message = c
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .map(|c| c.message.clone())
        .unwrap_or_default();
    ensure!(
        message.contains("spec.replication.factor") && message.contains("back to 3"),
        "the refusal does not name the field and the way back: {message}"
    );
    let after = snapshot(&w.client).await?;
    let moved: Vec<&String> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(*v) && !k.starts_with("GarageCluster/"))
        .map(|(k, _)| k)
        .collect();
    ensure!(moved.is_empty(), "written for a refused factor: {moved:?}");
    w.clusters
        .patch(NAME, &PatchParams::default(), &Patch::Merge(factor(3)))
        .await?;
    w.clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {PURGE: null}}})),
        )
        .await?;
    wait_ready(&w.clusters, Duration::from_secs(120)).await?;
    println!(
        "replication factor: 3 -> 2 refused as Unsupported naming the field, nothing written, Ready again once set back, in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Sets `AtLeast` 1 zone (always satisfiable) and waits for the layout computed with it.
pub(crate) async fn zone_redundancy(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let pod = format!("{NAME}-storage-0-0");
    let admin = admin_client_as_mounted(&w.client, w.sim, &pod).await?;
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
        // Pods replaced by an earlier step hold layout changes for their reconnect grace.
        Duration::from_secs(300),
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
