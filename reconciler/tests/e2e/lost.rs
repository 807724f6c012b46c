//! Step 4: a storage identity lost for good, on manual-a (alone on the tainted node).
//!
//! First its metadata volume is wiped under the running process and the container
//! restarted: Garage comes back as a new identity, which the operator reports
//! (`IdentityChanged`) and never assigns; no layout write happens. Then the whole Kubernetes
//! Node is lost. The user's recovery follows the documented order: `drain=true` with
//! `acknowledge-lost-source=<old id>`; the operator checks it against Garage and fences the
//! workload; the pod of the dead Node is force-deleted; the dead role is removed with
//! Garage's own workflow; `skip-dead-nodes` is requested when the history waits on the dead
//! node; the destination-only proof completes; the node is deleted; every object reads back.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use garage_admin::{AdminClient, ClusterLayout, NodeId, RoleChange};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::{
    ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_DRAIN, ANNOTATION_SKIP_DEAD_NODES,
};

use crate::support::*;
use crate::{LOST_NODE, NAME, RESYNC, World, ns};

const VICTIM: &str = "manual-a";
const VICTIM_POD: &str = "manual-a-0";

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let client = &w.client.clone();
    let sim = w.sim;
    let clusters = w.clusters.clone();
    let gns = w.gns.clone();
    let pods = w.pods.clone();
    let admin = admin_client(client, sim, 0).await?;
    let (old_id, before) = identity_with_role(&gns, &admin, VICTIM).await?;

    // 4a. Wipe the metadata volume under the running process, then restart the container:
    //     Garage starts as a new identity.
    wipe_metadata(client, VICTIM).await?;
    sim.kill_container(ns(), VICTIM_POD, "garage").await?;
    wait(
        "manual-a reported as an identity change",
        Duration::from_secs(120),
        || async {
            let n = gns.get(VICTIM).await?;
            Ok(n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c.type_ == "Ready" && c.reason == "IdentityChanged")
                }))
        },
    )
    .await?;
    // A few passes later: the old ID is kept, the new one has no role, the layout is as it was.
    tokio::time::sleep(RESYNC * 4).await;
    let node = gns.get(VICTIM).await?;
    ensure!(
        node.status.as_ref().and_then(|s| s.node_id.as_deref()) == Some(old_id.as_str()),
        "the old identity was not kept"
    );
    let after = admin.layout().await?;
    ensure!(
        after.version == before.version
            && after.roles.len() == before.roles.len()
            && after.staged_role_changes.is_empty(),
        "a layout write happened after the identity change: {} -> {}",
        before.version,
        after.version
    );
    println!(
        "metadata wipe: identity change reported, old ID kept, no layout write (version {})",
        after.version
    );

    // 4b. The Kubernetes Node goes for good.
    let t = Instant::now();
    sim.lose_node(LOST_NODE).await?;
    acknowledge_lost(&gns, VICTIM, &old_id).await?;
    // The operator records the loss and fences the workload; the pod of a dead Node stays
    // Terminating until someone force-deletes it.
    wait(
        "the lost source recorded and the workload fenced",
        Duration::from_secs(180),
        || async {
            let recorded = loss_recorded(&clusters, &old_id).await?;
            let fenced =
                Api::<k8s_openapi::api::apps::v1::StatefulSet>::namespaced(client.clone(), ns())
                    .get(VICTIM)
                    .await?
                    .spec
                    .and_then(|s| s.replicas)
                    == Some(0);
            Ok(recorded && fenced)
        },
    )
    .await?;
    force_delete(&pods, VICTIM_POD).await?;
    let skipped = remove_by_hand_and_prove(&clusters, &gns, &admin, VICTIM, &old_id).await?;
    gns.delete(VICTIM, &DeleteParams::default())
        .await
        .context("deleting the recovered node")?;
    wait("manual-a gone", Duration::from_secs(120), || async {
        Ok(gns.get_opt(VICTIM).await?.is_none())
    })
    .await?;
    let layout = admin.layout().await?;
    ensure!(
        layout.roles.len() == before.roles.len() - 1,
        "expected {} roles, got {}",
        before.roles.len() - 1,
        layout.roles.len()
    );
    let store = w.store.as_ref().context("no objects were written")?;
    verify(store, &s3(sim, "garage-storage-0-0")?, &w.checksummed).await?;
    println!(
        "lost node: acknowledged, fenced, removed by hand{}, proven on the destinations and deleted in {:.1}s; {} objects read back",
        if skipped { ", skip-dead-nodes" } else { "" },
        t.elapsed().as_secs_f64(),
        w.checksummed.len()
    );
    Ok(())
}

/// The Garage node ID of GarageNode `name` and the layout, which must give it a role.
pub(crate) async fn identity_with_role(
    gns: &Api<GarageNode>,
    admin: &AdminClient,
    name: &str,
) -> anyhow::Result<(String, ClusterLayout)> {
    let id = gns
        .get(name)
        .await?
        .status
        .and_then(|s| s.node_id)
        .with_context(|| format!("{name} has no node ID"))?;
    let layout = admin.layout().await?;
    ensure!(
        layout.roles.iter().any(|r| r.id.as_str() == id),
        "{name} holds no role"
    );
    Ok((id, layout))
}

/// The user's acknowledgement, both annotations in one write: drain GarageNode `name`, whose
/// source `id` is lost for good.
pub(crate) async fn acknowledge_lost(
    gns: &Api<GarageNode>,
    name: &str,
    id: &str,
) -> anyhow::Result<()> {
    gns.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {
            ANNOTATION_DRAIN: "true",
            ANNOTATION_ACKNOWLEDGE_LOST_SOURCE: id,
        }}})),
    )
    .await
    .context("acknowledging the lost source")?;
    Ok(())
}

/// Whether the cluster's drain record names `id` as an unavailable (lost) source.
pub(crate) async fn loss_recorded(clusters: &Api<GarageCluster>, id: &str) -> anyhow::Result<bool> {
    let c = clusters.get(NAME).await?;
    Ok(c.status
        .as_ref()
        .and_then(|s| s.storage_drain.as_ref())
        .and_then(|d| d.unavailable_source_node_ids.as_ref())
        .is_some_and(|ids| ids.iter().any(|i| i == id)))
}

/// Deletes pod `name` at once, as a user does for a pod of a dead Node (its kubelet never
/// confirms a graceful deletion).
pub(crate) async fn force_delete(
    pods: &Api<k8s_openapi::api::core::v1::Pod>,
    name: &str,
) -> anyhow::Result<()> {
    pods.delete(
        name,
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        },
    )
    .await?;
    Ok(())
}

/// The user's part of a lost source's recovery, once the operator has recorded the loss and
/// fenced the workload: wait until the operator asks for the dead role's removal (checking it
/// did not remove it itself), remove it with Garage's own workflow, request `skip-dead-nodes`
/// when the operator says the history waits on the dead node, and wait for `victim`'s
/// destination-only proof (`DrainPrepared=True`). Returns whether `skip-dead-nodes` ran; it
/// is checked to be gone again after.
pub(crate) async fn remove_by_hand_and_prove(
    clusters: &Api<GarageCluster>,
    gns: &Api<GarageNode>,
    admin: &AdminClient,
    victim: &str,
    old_id: &str,
) -> anyhow::Result<bool> {
    // The role stays until the user removes it: the operator never does.
    wait(
        "the condition asking for the dead role's removal",
        Duration::from_secs(120),
        || async {
            let c = clusters.get(NAME).await?;
            Ok(drain_message(&c).contains("garage layout remove"))
        },
    )
    .await?;
    let layout = admin.layout().await?;
    ensure!(
        layout.roles.iter().any(|r| r.id.as_str() == old_id),
        "the operator removed a lost role itself"
    );
    let id: NodeId = old_id.parse()?;
    admin.stage_layout(&[RoleChange::remove(id)], None).await?;
    admin.apply_layout(layout.version + 1).await?;
    // A dead node cannot acknowledge the new version: the user asks for skip-dead-nodes when
    // the operator says so.
    let skipped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let result = wait(
        &format!("{victim} DrainPrepared=True"),
        Duration::from_secs(900),
        || {
            let (clusters, gns) = (clusters.clone(), gns.clone());
            let skipped = skipped.clone();
            async move {
                let c = clusters.get(NAME).await?;
                if !skipped.load(Ordering::SeqCst)
                    && drain_message(&c).contains(ANNOTATION_SKIP_DEAD_NODES)
                {
                    clusters
                        .patch(
                            NAME,
                            &PatchParams::default(),
                            &Patch::Merge(json!({"metadata": {"annotations": {
                                ANNOTATION_SKIP_DEAD_NODES: "true"
                            }}})),
                        )
                        .await?;
                    skipped.store(true, Ordering::SeqCst);
                }
                // An operator-generated member is deleted by the operator once proven.
                let Some(n) = gns.get_opt(victim).await? else {
                    return Ok(true);
                };
                Ok(node_condition(&n, "DrainPrepared") == Some("True".into()))
            }
        },
    )
    .await;
    or_dump_drain(result, clusters, admin).await?;
    let skipped = skipped.load(Ordering::SeqCst);
    if skipped {
        ensure!(
            !clusters
                .get(NAME)
                .await?
                .metadata
                .annotations
                .unwrap_or_default()
                .contains_key(ANNOTATION_SKIP_DEAD_NODES),
            "skip-dead-nodes was not removed after it ran"
        );
    }
    Ok(skipped)
}

/// The message of `StorageDrainReady`.
fn drain_message(c: &shared_types::garage_cluster::v1beta2::GarageCluster) -> String {
    c.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|x| x.type_ == "StorageDrainReady"))
        .map(|x| x.message.clone())
        .unwrap_or_default()
}
