//! Site P after its first Destroy: the same cluster created again over the disks Destroy
//! kept (cold recovery), then a Node moved straight to a second pool, and the Destroy check
//! both end with.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Node;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use shared_types::conditions::cluster::CONDITION_NODE_LOCAL_POOLS_READY;
use shared_types::conditions::reason::REASON_DIRECT_NODE_LOCAL_POOL_MOVE_BLOCKED;
use shared_types::keys::label::LABEL_NODE_LOCAL_POOL;

use super::*;
use crate::{NAME, World, ns};

/// The second pool of the direct-move step, its Node label and the Node moved to it.
const SECOND: &str = "second";
pub(super) const SECOND_LABEL: &str = "e2e-p/pool2";
pub(super) const MOVED: &str = "n4";

/// Destroy: none of this cluster's keys stay on the Nodes, its DaemonSet goes, and every
/// HostPath keeps its data.
pub(super) async fn destroy_and_check(w: &mut World<'_>, nodes: &Api<Node>) -> anyhow::Result<()> {
    let t = Instant::now();
    let uid = w.clusters.get(NAME).await?.metadata.uid.unwrap_or_default();
    let kept = format!("Secret/{ADMIN_SECRET}");
    crate::teardown::destroy(w, &[kept.as_str()]).await?;
    for node in NODES {
        let n = nodes.get(node).await?;
        // Other sites' pools may share these Nodes: only this cluster's keys must be gone.
        let left: Vec<&String> = n
            .labels()
            .keys()
            .chain(n.annotations().keys())
            .filter(|k| reconciler::desired::pool::is_binding_key(ns(), NAME, &uid, k))
            .collect();
        ensure!(
            left.is_empty(),
            "{node} still carries {left:?} after Destroy"
        );
    }
    let sets: Api<DaemonSet> = Api::namespaced(w.client.clone(), ns());
    ensure!(
        sets.get_opt(DAEMONSET).await?.is_none(),
        "{DAEMONSET} is still there after Destroy"
    );
    for node in NODES {
        ensure!(
            w.sim
                .host_path(node, &metadata_dir())
                .join("node_key")
                .exists(),
            "{node}'s metadata HostPath lost node_key: HostPath data is never deleted"
        );
    }
    println!(
        "pool disks: Destroy left none of this cluster's keys on {NODES:?}, no DaemonSet, and every HostPath's data ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Cold recovery: the same cluster created again over the disks Destroy kept. The Nodes have
/// no identity records any more (Destroy removed them) and no GarageNode exists, but each
/// disk still holds its node_key and Garage's layout: every member comes back as the identity
/// it had, none as a second role, and every object reads back.
pub(super) async fn recreate_over_kept_disks(
    w: &mut World<'_>,
    before: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let t = Instant::now();
    // The disks as they were last rolled out: a path Garage still reads must be mounted.
    create_pool_cluster(w, three_disks()).await?;
    wait_pools_ready(&w.clusters, Duration::from_secs(300)).await?;
    let after = node_ids(&w.gns).await?;
    ensure!(
        &after == before,
        "identities after recreation {after:?}, before {before:?}"
    );
    let via = pool_pod(&w.pods, NODES[0]).await?.name_any();
    let admin = admin_client_at(&w.client, w.sim, &via).await?;
    let layout = admin.layout().await?;
    let mut role_ids: Vec<String> = layout.roles.iter().map(|r| r.id.to_string()).collect();
    role_ids.sort();
    let mut ids: Vec<String> = before.values().cloned().collect();
    ids.sort();
    ensure!(
        role_ids == ids,
        "layout roles {role_ids:?} after recreation, expected exactly the old identities {ids:?}"
    );
    read_back_via(w, NODES[2]).await?;
    println!(
        "pool disks: recreated over the kept disks: the same {} identities and no other role, Ready, every object read back ({:.1}s)",
        after.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// A Node moved straight from one pool to another: the new pool gets nothing on it (no
/// activation label, no pod) while the old pool's member still holds the disk, and the
/// cluster says `DirectNodeLocalPoolMoveBlocked` naming the Node. The old member stays (its
/// drain below the replication factor is held).
pub(super) async fn direct_move_blocked(w: &World<'_>, nodes: &Api<Node>) -> anyhow::Result<()> {
    let t = Instant::now();
    let second_root = "/srv/garage-e2e-p/second";
    // Disks a wrongly started pod could use, so that the checks below can fail.
    for dir in ["metadata", "data"] {
        let path = w.sim.host_path(MOVED, &format!("{second_root}/{dir}"));
        std::fs::create_dir_all(&path)?;
        std::fs::File::create(path.join(MARKER))?;
    }
    let patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "add", "path": "/spec/storage/nodeLocalPools/-", "value": {
            "name": SECOND,
            "capacity": "1Gi",
            "metadata": {"hostPath": format!("{second_root}/metadata"), "hostPathType": "Directory"},
            "data": {"hostPath": format!("{second_root}/data"), "hostPathType": "Directory"},
            "selector": {"matchLabels": {SECOND_LABEL: SECOND}},
        }},
    ]))?;
    w.clusters
        .patch(NAME, &PatchParams::default(), &Patch::<()>::Json(patch))
        .await
        .context("adding a second pool")?;
    nodes
        .patch(
            MOVED,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {POOL_LABEL: null, SECOND_LABEL: SECOND}}}),
            ),
        )
        .await?;
    wait_condition(
        &w.clusters,
        CONDITION_NODE_LOCAL_POOLS_READY,
        "False",
        Some(REASON_DIRECT_NODE_LOCAL_POOL_MOVE_BLOCKED),
        Duration::from_secs(120),
    )
    .await?;
    let c = w.clusters.get(NAME).await?;
    let message = message_of(&c, CONDITION_NODE_LOCAL_POOLS_READY).unwrap_or_default();
    ensure!(
        message.contains(MOVED),
        "the condition does not name {MOVED}: {message}"
    );
    // A while longer: still nothing of the new pool on the Node, the old member still there.
    tokio::time::sleep(Duration::from_secs(10)).await;
    let node = nodes.get(MOVED).await?;
    let second_key = reconciler::desired::pool::activation_key(
        &reconciler::desired::Settings::from_cluster(&c)?,
        SECOND,
    );
    ensure!(
        !node.labels().contains_key(&second_key),
        "{MOVED} got pool {SECOND}'s activation label while pool {POOL} holds it"
    );
    let second_pods: Vec<String> = w
        .pods
        .list(&ListParams::default().labels(&format!("{LABEL_NODE_LOCAL_POOL}={SECOND}")))
        .await?
        .items
        .iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(MOVED))
        .map(|p| p.name_any())
        .collect();
    ensure!(
        second_pods.is_empty(),
        "pool {SECOND} pods bound to {MOVED}: {second_pods:?}"
    );
    ensure!(
        w.gns
            .get_opt(&format!("{NAME}-node-local-{POOL}-{MOVED}"))
            .await?
            .is_some(),
        "pool {POOL}'s member on {MOVED} is gone"
    );
    println!(
        "pool disks: {MOVED} moved straight to pool {SECOND}: DirectNodeLocalPoolMoveBlocked naming it, no activation or pod of {SECOND} there, {POOL}'s member kept ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
