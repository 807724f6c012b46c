//! Site F: the graceful cycle of an Auto member, on a cluster whose manifest turns Garage's
//! own Kubernetes discovery on and Consul discovery off. With 200 checksummed objects written,
//! `garage.rajsingh.info/cycle=true` on `garage-storage-1` makes a sibling with a fresh
//! identity join first; the source then drains through the prepared drain, its pod running
//! until the proof is complete; the sibling is promoted into slot 1 and the source deleted.
//! Every object reads back, the layout holds the sibling's role instead of the source's with
//! the other two unchanged, and the cluster does not make slot 1 again.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use kube::ResourceExt;
use kube::api::{ListParams, Patch, PatchParams};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::keys::annotation::{ANNOTATION_CYCLE, ANNOTATION_RETIRED_NODE_ID};
use shared_types::keys::label;

use crate::support::*;
use crate::{NAME, RESYNC, World};

/// The site's namespace.
pub(crate) const NS_F: &str = "e2e-f";
const SOURCE: &str = "garage-storage-1";
const SIBLING: &str = "garage-storage-1-cycle";

/// The site's cluster: the common 3-member manifest with Garage's Kubernetes discovery on (a
/// ServiceAccount granted what it calls, [`crate::discovery`]) and Consul discovery switched
/// off, as a Go user's manifest may say; a discovery not switched on asks for nothing.
pub(crate) async fn create_cluster(w: &World<'_>) -> anyhow::Result<()> {
    let mut gc = crate::cluster_manifest();
    // Garage's own Kubernetes discovery, beside a Consul discovery switched off.
    crate::discovery::grant(&w.client).await?;
    gc["spec"]["discovery"] =
        json!({"kubernetes": {"enabled": true}, "consul": {"enabled": false}});
    gc["spec"]["serviceAccountName"] = json!(crate::discovery::ACCOUNT);
    let gc: shared_types::garage_cluster::v1beta2::GarageCluster = serde_json::from_value(gc)?;
    w.clusters
        .create(&kube::api::PostParams::default(), &gc)
        .await?;
    Ok(())
}

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let sim = w.sim;
    let (clusters, gns, pods) = (w.clusters.clone(), w.gns.clone(), w.pods.clone());
    let admin = admin_client(&w.client, sim, 0).await?;
    crate::drain::write_objects(w).await?;
    let before = node_ids(&gns).await?;
    let source_id = before
        .get(SOURCE)
        .context("the source has no node ID")?
        .clone();
    let t = Instant::now();
    gns.patch(
        SOURCE,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {ANNOTATION_CYCLE: "true"}}})),
    )
    .await
    .context("the cycle request was not admitted")?;

    // Every phase the source reports, the moment the proof was first seen, and whether the
    // source's pod went before it.
    let phases = Arc::new(Mutex::new(Vec::<String>::new()));
    let proven = Arc::new(Mutex::new(false));
    let early = Arc::new(Mutex::new(false));
    let sibling_seen_with_source = Arc::new(Mutex::new(false));
    let done = wait(
        "the source cycled out and gone",
        Duration::from_secs(1700),
        || {
            let (gns, pods, clusters) = (gns.clone(), pods.clone(), clusters.clone());
            let (phases, proven, early, both) = (
                phases.clone(),
                proven.clone(),
                early.clone(),
                sibling_seen_with_source.clone(),
            );
            async move {
                let node = gns.get_opt(SOURCE).await?;
                if let Some(phase) = node
                    .as_ref()
                    .and_then(|n| n.status.as_ref())
                    .and_then(|s| s.cycle_phase)
                {
                    let phase = format!("{phase:?}");
                    let mut seen = phases.lock().unwrap();
                    if seen.last() != Some(&phase) {
                        seen.push(phase);
                    }
                }
                if drain_proven(&clusters, SOURCE, node.as_ref()).await? {
                    *proven.lock().unwrap() = true;
                }
                let source_pod = pods.get_opt(&format!("{SOURCE}-0")).await?;
                if source_pod.is_none() && !*proven.lock().unwrap() {
                    *early.lock().unwrap() = true;
                }
                if source_pod.is_some() && pods.get_opt(&format!("{SIBLING}-0")).await?.is_some() {
                    *both.lock().unwrap() = true;
                }
                Ok(node.is_none() && source_pod.is_none())
            }
        },
    )
    .await;
    or_dump_drain(done, &clusters, &admin).await?;
    let phases = phases.lock().unwrap().clone();
    ensure!(
        !*early.lock().unwrap(),
        "the source's pod went before its drain was proven (phases {phases:?})"
    );
    ensure!(
        *sibling_seen_with_source.lock().unwrap(),
        "the sibling's pod never ran beside the source's: not add-before-remove"
    );
    ensure!(
        phases.last().map(String::as_str) == Some("Draining"),
        "the source left without reporting Draining (phases {phases:?})"
    );

    let sibling = gns.get(SIBLING).await?;
    let labels = sibling.labels();
    ensure!(
        !labels.contains_key(label::LABEL_CYCLE_SIBLING)
            && labels.get(label::LABEL_AUTO_NODE_SLOT).map(String::as_str) == Some(SOURCE)
            && labels.get(label::LABEL_APP_MANAGED_BY).map(String::as_str)
                == Some(label::value::MANAGED_BY_GENERATED_NODE),
        "the sibling was not promoted into slot 1: labels {labels:?}"
    );
    let cluster_uid = clusters.get(NAME).await?.uid();
    let owner = sibling
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true));
    ensure!(
        owner.is_some_and(|o| o.kind == "GarageCluster" && Some(&o.uid) == cluster_uid.as_ref()),
        "the promoted sibling is not controlled by the cluster: {:?}",
        sibling.owner_references()
    );
    let sibling_id = sibling
        .status
        .and_then(|s| s.node_id)
        .context("the sibling has no node ID")?;
    ensure!(
        sibling_id != source_id,
        "the sibling took the source's identity"
    );
    let roles: BTreeSet<String> = admin
        .layout()
        .await?
        .roles
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    let want: BTreeSet<String> = [
        before["garage-storage-0"].clone(),
        before["garage-storage-2"].clone(),
        sibling_id.clone(),
    ]
    .into();
    ensure!(roles == want, "layout roles {roles:?}, expected {want:?}");
    // The old node's claims stay (Retain), each marked with the identity that left.
    let claims: kube::Api<k8s_openapi::api::core::v1::PersistentVolumeClaim> =
        kube::Api::namespaced(w.client.clone(), crate::ns());
    for claim in [format!("metadata-{SOURCE}-0"), format!("data-{SOURCE}-0")] {
        let c = claims
            .get_opt(&claim)
            .await?
            .with_context(|| format!("{claim} of the old node is gone"))?;
        let retired = c.annotations().get(ANNOTATION_RETIRED_NODE_ID).cloned();
        ensure!(
            retired.as_deref() == Some(source_id.as_str()),
            "{claim} is not marked retired with {source_id}: {retired:?}"
        );
    }
    let store = w.store.as_ref().context("no objects were written")?;
    verify(store, &s3(sim, "garage-storage-0-0")?, &w.checksummed).await?;
    verify(store, &s3(sim, &format!("{SIBLING}-0"))?, &w.checksummed).await?;
    println!(
        "cycle: {SOURCE} replaced by {SIBLING} ({}) through {phases:?}, its pod running until the proof, its claims kept and marked retired; 200 objects read back ({:.1}s)",
        &sibling_id[..16],
        t.elapsed().as_secs_f64()
    );

    // The slot is filled: the cluster settles without making garage-storage-1 again.
    drain_idle(&clusters).await?;
    wait_ready(&clusters, Duration::from_secs(120)).await?;
    tokio::time::sleep(RESYNC * 3).await;
    let names: BTreeSet<String> = gns
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    let want: BTreeSet<String> = ["garage-storage-0", SIBLING, "garage-storage-2"]
        .map(String::from)
        .into();
    ensure!(names == want, "GarageNodes after the cycle: {names:?}");
    ensure!(
        admin.layout().await?.roles.len() == 3,
        "the layout changed after the cycle"
    );
    Ok(())
}
