//! A pool member's Kubernetes Node lost for good (n6, which only this pool tolerates).
//!
//! n6 joins the pool as a fourth member and serves reads. Then its machine dies: heartbeats
//! stop and every process on it is killed. Nobody has said the loss is permanent, so the
//! operator keeps the member and its role. The user follows the documented order: the Node
//! leaves the pool and the member gets `drain=true` with `acknowledge-lost-source=<its id>`.
//! The operator checks the ID against Garage, records the loss and fences the member (n6
//! loses the activation label, so the pool can never run that identity there again). The
//! dead Node's pod is force-deleted, the role is removed with Garage's own workflow, the
//! destination-only proof completes, and the operator deletes the member. Three roles are
//! left, every object reads back, the pool is Ready on n2..n4 and n6's disk keeps its data.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use localcluster::wait_until as wait;

use super::{
    DATA_DIR, MARKER, METADATA_DIR, check_members, generated, label_node, member, node_key_kept,
    pool_pod, pool_pod_name, read_back_via,
};
use crate::lost;
use crate::support::*;
use crate::{POOL_LOST_NODE as LOST, World};

/// The members left once n6 is gone (n1 left the pool earlier).
const SURVIVORS: [&str; 3] = ["n2", "n3", "n4"];

pub(super) async fn run(w: &mut World<'_>, nodes: &Api<Node>) -> anyhow::Result<()> {
    let t = Instant::now();
    for dir in [METADATA_DIR, DATA_DIR] {
        let path = w.sim.host_path(LOST, dir);
        std::fs::create_dir_all(&path).with_context(|| format!("creating {dir} on {LOST}"))?;
        std::fs::File::create(path.join(MARKER))
            .with_context(|| format!("creating the marker in {dir} on {LOST}"))?;
    }
    label_node(nodes, LOST, Some(super::POOL)).await?;
    let victim = member(LOST);
    wait(
        &format!("{victim} with a node ID"),
        Duration::from_secs(600),
        || async {
            Ok(w.gns
                .get_opt(&victim)
                .await?
                .and_then(|n| n.status?.node_id)
                .is_some())
        },
    )
    .await?;
    wait_ready(&w.clusters, Duration::from_secs(300)).await?;
    let mut all = SURVIVORS.to_vec();
    all.push(LOST);
    check_members(w, nodes, &all).await?;
    let admin = admin_client_at(&w.client, w.sim, &pool_pod_name(&w.pods, "n2").await?).await?;
    wait(
        "n2's Garage connected to all four members",
        Duration::from_secs(120),
        || async {
            Ok(admin
                .cluster_health()
                .await
                .is_ok_and(|h| h.connected_nodes >= 4 && h.storage_nodes_up >= 4))
        },
    )
    .await?;
    read_back_via(w, LOST).await?;
    let (old_id, before) = lost::identity_with_role(&w.gns, &admin, &victim).await?;
    println!(
        "pools: {LOST} joined as a fourth member and served every object ({:.1}s)",
        t.elapsed().as_secs_f64()
    );

    // The machine dies. Until someone says the loss is for good, nothing changes.
    let t = Instant::now();
    w.sim.lose_node(LOST).await?;
    wait(
        &format!("Garage reporting {LOST}'s member down"),
        Duration::from_secs(120),
        || async {
            Ok(admin
                .cluster_health()
                .await
                .is_ok_and(|h| h.storage_nodes_up == 3))
        },
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(20)).await;
    let kept = w.gns.get(&victim).await?;
    ensure!(
        kept.metadata.deletion_timestamp.is_none()
            && admin
                .layout()
                .await?
                .roles
                .iter()
                .any(|r| r.id.as_str() == old_id),
        "the operator dropped the member on a dead Node that nobody acknowledged as lost"
    );

    // The user's acknowledgement: the Node leaves the pool, the member is drained as lost.
    lost::acknowledge_lost(&w.gns, &victim, &old_id).await?;
    label_node(nodes, LOST, None).await?;
    wait(
        &format!("the loss recorded and {LOST} no longer activated for the pool"),
        Duration::from_secs(180),
        || async {
            let n = nodes.get(LOST).await?;
            Ok(lost::loss_recorded(&w.clusters, &old_id).await?
                && generated(n.metadata.labels.as_ref()).is_empty())
        },
    )
    .await?;
    // A dead kubelet never confirms a deletion: the user force-deletes the pod.
    if let Some(pod) = pool_pod(&w.pods, LOST).await? {
        lost::force_delete(&w.pods, &kube::ResourceExt::name_any(&pod)).await?;
    }
    let skipped =
        lost::remove_by_hand_and_prove(&w.clusters, &w.gns, &admin, &victim, &old_id).await?;
    wait(
        &format!("{victim} deleted by the operator"),
        Duration::from_secs(300),
        || async { Ok(w.gns.get_opt(&victim).await?.is_none()) },
    )
    .await?;
    let layout = admin.layout().await?;
    ensure!(
        layout.roles.len() == before.roles.len() - 1
            && !layout.roles.iter().any(|r| r.id.as_str() == old_id),
        "expected {} roles without {old_id}, got {}",
        before.roles.len() - 1,
        layout.roles.len()
    );
    wait_pools_ready(&w.clusters, Duration::from_secs(300)).await?;
    check_members(w, nodes, &SURVIVORS).await?;
    ensure!(
        pool_pod(&w.pods, LOST).await?.is_none(),
        "a pool pod is still bound to {LOST}"
    );
    ensure!(
        node_key_kept(w, LOST),
        "{LOST}'s metadata HostPath lost node_key: HostPath data is never deleted"
    );
    read_back_via(w, "n3").await?;
    println!(
        "pools: {LOST} lost: kept until acknowledged, fenced, removed by hand{}, proven on the destinations and deleted in {:.1}s; {} objects read back",
        if skipped { ", skip-dead-nodes" } else { "" },
        t.elapsed().as_secs_f64(),
        w.checksummed.len()
    );
    Ok(())
}
