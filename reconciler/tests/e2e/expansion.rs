//! Site D: growing claims, with the layout capacity never ahead of the disks.
//!
//! `auto_group`: the 3-member cluster's `data.size` goes from 1Gi to 2Gi. Each data claim is
//! asked to grow (kubesim's expansion takes a few seconds, with the claim's `Resizing`
//! condition set meanwhile); a 250 ms watcher reads Garage's layout and then the claims, and
//! never sees a role with more capacity than its claim reports. The roles rise one member per
//! layout version, no pod restarts, and every object reads back.
//!
//! `data_path` and `blocked` (the one-member data-paths cluster): one path's volume grows the
//! same way (its size is also its directory's capacity in garage.toml, so the pod rolls once);
//! then a path on a StorageClass without `allowVolumeExpansion` asks for more: the API server
//! refuses, `StorageExpansionBlocked` names the claim, and the layout and the pod stay as they
//! were.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use kube::Api;
use kube::api::{Patch, PatchParams};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::conditions::cluster::{
    CONDITION_STORAGE_EXPANSION_BLOCKED, CONDITION_STORAGE_EXPANSION_IN_PROGRESS,
};

use crate::support::*;
use crate::{NAME, World, ns};

const GI: u64 = 1 << 30;
const MI: u64 = 1 << 20;

/// The capacity a claim reports, in bytes (0 before it reports one).
fn reported(claim: Option<&PersistentVolumeClaim>) -> u64 {
    claim
        .and_then(|c| c.status.as_ref())
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| reconciler::desired::quantity::to_bytes(&q.0))
        .unwrap_or(0)
}

/// Patches the cluster with `patch`, retried while admission holds it back.
async fn change(w: &World<'_>, what: &str, patch: serde_json::Value) -> anyhow::Result<()> {
    wait(
        &format!("{what} admitted"),
        Duration::from_secs(120),
        || async {
            Ok(w.clusters
                .patch(NAME, &PatchParams::default(), &Patch::Merge(patch.clone()))
                .await
                .is_ok())
        },
    )
    .await
}

/// One sample: the role capacity of each member (by the pod tag its role carries) read from
/// Garage first, then what each member's data claims report together (`extra` bytes added,
/// for a path whose declared capacity is not its claim's). Read in that order, a role above
/// its claims is a real overrun: a claim's reported capacity only grows.
async fn sample(
    w: &World<'_>,
    members: &[(&str, &[&str], u64)],
) -> anyhow::Result<(u64, BTreeMap<String, (u64, u64)>)> {
    // Asked afresh each time: a member's pod may be replaced meanwhile (a new address).
    let layout = admin_client_at(&w.client, w.sim, members[0].0)
        .await?
        .layout()
        .await?;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client.clone(), ns());
    let mut out = BTreeMap::new();
    for (pod, data_claims, extra) in members {
        let role = layout
            .roles
            .iter()
            .find(|r| r.tags.iter().any(|t| t == pod))
            .and_then(|r| r.capacity)
            .with_context(|| format!("no role tagged {pod}"))?;
        let mut disk = *extra;
        for c in *data_claims {
            disk += reported(claims.get_opt(c).await?.as_ref());
        }
        out.insert((*pod).to_owned(), (role, disk));
    }
    Ok((layout.version, out))
}

/// Samples every 250 ms until every member's role has `target` bytes, failing the moment a
/// role has more than its claims report. Returns the layout versions seen at the start and end.
async fn watch_rise(
    w: &World<'_>,
    members: &[(&str, &[&str], u64)],
    target: u64,
) -> anyhow::Result<(u64, u64, usize)> {
    let (first, _) = sample(w, members).await?;
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut samples = 0;
    loop {
        ensure!(
            Instant::now() < deadline,
            "roles did not reach {target} bytes"
        );
        // A pod being replaced does not answer; the next sample asks again.
        let Ok((version, seen)) = sample(w, members).await else {
            tokio::time::sleep(Duration::from_millis(250)).await;
            continue;
        };
        samples += 1;
        for (pod, (role, disk)) in &seen {
            ensure!(
                role <= disk,
                "the layout gives {pod} {role} bytes while its claims report {disk}"
            );
        }
        if seen.values().all(|(role, _)| *role == target) {
            return Ok((first, version, samples));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The 3-member Auto group of site D grows from 1Gi to 2Gi of data.
pub(crate) async fn auto_group(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let admin = admin_client(&w.client, w.sim, 0).await?;
    let pods_before = crate::volumes::pod_uids(w).await?;
    let members: Vec<(String, String)> = (0..3)
        .map(|i| {
            (
                format!("garage-storage-{i}-0"),
                format!("data-garage-storage-{i}-0"),
            )
        })
        .collect();
    let claims: Vec<[&str; 1]> = members.iter().map(|(_, c)| [c.as_str()]).collect();
    let plan: Vec<(&str, &[&str], u64)> = members
        .iter()
        .zip(&claims)
        .map(|((pod, _), c)| (pod.as_str(), &c[..], 0))
        .collect();
    let (_, before) = sample(w, &plan).await?;
    ensure!(
        before.values().all(|(role, _)| *role == GI),
        "roles before the change: {before:?}"
    );
    change(
        w,
        "data.size 2Gi",
        json!({"spec": {"storage": {"data": {"size": "2Gi"}}}}),
    )
    .await?;
    let (from, to, samples) = watch_rise(w, &plan, 2 * GI).await?;
    // One member's capacity per layout version.
    ensure!(
        to - from == 3,
        "the three capacities rose in {} layout versions, not one each",
        to - from
    );
    ensure!(
        crate::volumes::pod_uids(w).await? == pods_before,
        "growing the claims restarted a pod"
    );
    wait_condition_gone(w, CONDITION_STORAGE_EXPANSION_IN_PROGRESS).await?;
    read_back(&admin, w.sim).await?;
    println!(
        "expansion: data.size 1Gi -> 2Gi: every role rose only after its claim reported 2Gi ({samples} samples, never ahead), one member per layout version ({from} -> {to}), no pod restarted, 200 objects read back ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Waits until the cluster no longer carries condition `type_`.
async fn wait_condition_gone(w: &World<'_>, type_: &str) -> anyhow::Result<()> {
    wait(
        &format!("{type_} gone"),
        Duration::from_secs(120),
        || async { Ok(condition(&w.clusters.get(NAME).await?, type_).is_none()) },
    )
    .await
}

/// The data-paths member: `/data/slow` (its 2Gi volume counts whole) grows to 3Gi; `/data/fast`
/// declares 600Mi of its claim. The size of a path without a declared capacity is also its
/// directory's capacity in garage.toml, so the change rolls the member's pod once as well.
pub(crate) async fn data_path(w: &World<'_>, pod: &str, slow: &str) -> anyhow::Result<()> {
    let t = Instant::now();
    let pod_before = w.pods.get(pod).await?.metadata.uid;
    // The fast path counts with its declared 600Mi, not what its claim reports.
    let slow_claims = [slow];
    let plan = [(pod, &slow_claims[..], 600 * MI)];
    change(
        w,
        "/data/slow 3Gi",
        json!({"spec": {"storage": {"data": {"paths": paths(1, "600Mi", 3)}}}}),
    )
    .await?;
    let (from, to, samples) = watch_rise(w, &plan, 600 * MI + 3 * GI).await?;
    wait_condition(
        &w.clusters,
        "StorageRolloutReady",
        "True",
        None,
        Duration::from_secs(300),
    )
    .await?;
    let replaced = w.pods.get(pod).await?.metadata.uid != pod_before;
    let store = w.store.as_ref().context("no object store")?;
    verify(store, &s3(w.sim, pod)?, &w.checksummed).await?;
    println!(
        "expansion: /data/slow 2Gi -> 3Gi: the role rose to 600Mi + 3Gi only after its claim reported 3Gi ({samples} samples, layout {from} -> {to}), pod replaced for the new garage.toml: {replaced}, objects read back ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The data-paths of the test cluster with `/data/fast` on a `fast_gi` Gi volume declaring
/// `fast_capacity`, and `/data/slow` on `slow_gi` Gi; classes as created.
pub(crate) fn paths(fast_gi: u32, fast_capacity: &str, slow_gi: u32) -> serde_json::Value {
    json!([
        {"path": "/data/fast", "capacity": fast_capacity,
         "volume": {"size": format!("{fast_gi}Gi"), "volumeAttributesClassName": "e2e-fast",
                    "storageClassName": kubesim::FIXED_STORAGE_CLASS}},
        {"path": "/data/slow",
         "volume": {"size": format!("{slow_gi}Gi"), "volumeAttributesClassName": "e2e-fast",
                    "storageClassName": kubesim::OFFLINE_STORAGE_CLASS}},
    ])
}

/// `/data/fast`, on a class that cannot grow, asks for a 2Gi volume (its declared capacity
/// stays 600Mi, so garage.toml does not change): the API server refuses the claim's growth, the
/// node and the cluster report it by claim name, and the layout and the pod stay as they were.
pub(crate) async fn blocked(w: &World<'_>, pod: &str, fast: &str) -> anyhow::Result<()> {
    let t = Instant::now();
    let admin = admin_client_at(&w.client, w.sim, pod).await?;
    let before = admin.layout().await?;
    let pod_before = w.pods.get(pod).await?.metadata.uid;
    change(
        w,
        "/data/fast 2Gi",
        json!({"spec": {"storage": {"data": {"paths": paths(2, "600Mi", 3)}}}}),
    )
    .await?;
    wait(
        "StorageExpansionBlocked naming the fast claim",
        Duration::from_secs(180),
        || async {
            let c = w.clusters.get(NAME).await?;
            Ok(message_of(&c, CONDITION_STORAGE_EXPANSION_BLOCKED)
                .is_some_and(|m| m.contains(fast) && m.contains("allowVolumeExpansion")))
        },
    )
    .await?;
    let message = message_of(
        &w.clusters.get(NAME).await?,
        CONDITION_STORAGE_EXPANSION_BLOCKED,
    )
    .unwrap_or_default();
    let claim = Api::<PersistentVolumeClaim>::namespaced(w.client.clone(), ns())
        .get(fast)
        .await?;
    ensure!(
        reported(Some(&claim)) == GI,
        "the refused claim reports {} bytes",
        reported(Some(&claim))
    );
    let after = admin.layout().await?;
    ensure!(
        after.version == before.version && after.roles == before.roles,
        "a refused growth changed the layout: {:?} -> {:?}",
        before.roles,
        after.roles
    );
    ensure!(
        w.pods.get(pod).await?.metadata.uid == pod_before,
        "a refused growth replaced the pod"
    );
    println!(
        "expansion: a claim on a class without allowVolumeExpansion was refused by the API server and reported by name ({message}); the claim stays at 1Gi, the layout at version {}, the same pod ({:.1}s)",
        after.version,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A Manual GarageNode's claim template size raised (manual-vac, of `volumes::manual_nodes`):
/// its bound data claim grows to the new size, its GarageNode reports the growth until the
/// claim has it, and its pod is not restarted. Its role's capacity is its declared `capacity`,
/// which the size does not change.
pub(crate) async fn manual_node(w: &World<'_>) -> anyhow::Result<()> {
    const NODE: &str = "manual-vac";
    const CLAIM: &str = "data-manual-vac-0";
    let t = Instant::now();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client.clone(), ns());
    wait(
        "manual-vac's data claim bound at 1Gi",
        Duration::from_secs(120),
        || async { Ok(reported(claims.get_opt(CLAIM).await?.as_ref()) == GI) },
    )
    .await?;
    let pod_before = w
        .pods
        .get_opt("manual-vac-0")
        .await?
        .and_then(|p| p.metadata.uid);
    w.gns
        .patch(
            NODE,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"storage": {"data": {"size": "2Gi"}}}})),
        )
        .await?;
    wait(
        "manual-vac's data claim at 2Gi with no expansion condition left",
        Duration::from_secs(180),
        || async {
            let grown = reported(claims.get_opt(CLAIM).await?.as_ref()) == 2 * GI;
            let n = w.gns.get(NODE).await?;
            Ok(grown
                && node_condition(&n, CONDITION_STORAGE_EXPANSION_IN_PROGRESS).is_none()
                && node_condition(&n, CONDITION_STORAGE_EXPANSION_BLOCKED).is_none())
        },
    )
    .await?;
    let request = claims
        .get(CLAIM)
        .await?
        .spec
        .and_then(|s| s.resources)
        .and_then(|r| r.requests)
        .and_then(|r| r.get("storage").cloned());
    ensure!(
        request.as_ref().map(|q| q.0.as_str()) == Some("2Gi"),
        "the claim asks for {request:?}"
    );
    ensure!(
        w.pods
            .get_opt("manual-vac-0")
            .await?
            .and_then(|p| p.metadata.uid)
            == pod_before,
        "manual-vac's pod was restarted by the growth"
    );
    println!(
        "expansion: a Manual GarageNode's data size 1Gi -> 2Gi grew its claim, no restart ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The one member's metadata volume, on a class whose file system grows only when a pod mounts
/// it again, grows from 100Mi to 200Mi. The claim's volume grows and the claim reports
/// `FileSystemResizePending`; the operator replaces the pod through the storage rollout (the
/// same gates as any replacement), once: the new pod finishes the resize, the claim reports
/// 200Mi, and the member keeps its identity. Every object reads back.
pub(crate) async fn offline(w: &World<'_>, pod: &str, claim: &str) -> anyhow::Result<()> {
    let t = Instant::now();
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(w.client.clone(), ns());
    let before = w.pods.get(pod).await?.metadata.uid;
    let ids_before = node_ids(&w.gns).await?;
    change(
        w,
        "metadata 200Mi",
        json!({"spec": {"storage": {"metadata": {"size": "200Mi"}}}}),
    )
    .await?;
    let replacements = std::sync::Mutex::new(std::collections::BTreeSet::new());
    wait(
        "the metadata claim at 200Mi with no resize pending",
        Duration::from_secs(300),
        || async {
            if let Some(uid) = w.pods.get_opt(pod).await?.and_then(|p| p.metadata.uid)
                && Some(&uid) != before.as_ref()
            {
                replacements
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(uid);
            }
            let c = claims.get(claim).await?;
            let pending = c
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "FileSystemResizePending"));
            Ok(reported(Some(&c)) == 200 * MI && !pending)
        },
    )
    .await?;
    wait_condition(
        &w.clusters,
        "StorageRolloutReady",
        "True",
        None,
        Duration::from_secs(300),
    )
    .await?;
    let after = w.pods.get(pod).await?.metadata.uid;
    ensure!(after != before, "the pod was never replaced for the resize");
    let mut replacements = replacements.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(uid) = &after {
        replacements.insert(uid.clone());
    }
    ensure!(
        replacements.len() == 1,
        "the pod was replaced {} times for one resize",
        replacements.len()
    );
    ensure!(
        node_ids(&w.gns).await? == ids_before,
        "the member changed identity"
    );
    let store = w.store.as_ref().context("no object store")?;
    verify(store, &s3(w.sim, pod)?, &w.checksummed).await?;
    println!(
        "expansion: a metadata claim on an offline-resize class grew 100Mi -> 200Mi: FileSystemResizePending until the operator replaced the pod once (same identity), then 200Mi; objects read back ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
