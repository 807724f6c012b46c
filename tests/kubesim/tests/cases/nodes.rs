//! Node registration and node loss.

use std::time::Duration;

use anyhow::{Context as _, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use serde_json::json;

use super::{Ctx, alive, create, namespace, pids, ready, target, wait, wait_pod};

fn node_ready(node: &Node) -> Option<String> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

/// Registered nodes are Ready with a fresh Lease; losing one kills its
/// processes at once, stops its Lease, and the node lifecycle controller
/// turns it NotReady (Unknown) after its grace period; its pods are left
/// as they are.
pub async fn lose_node(ctx: &Ctx) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(ctx.client.clone());
    let node = nodes.get("node-c").await?;
    ensure!(
        node_ready(&node).as_deref() == Some("True"),
        "node-c is not Ready before the test"
    );
    let labels = node.metadata.labels.clone().unwrap_or_default();
    ensure!(
        labels
            .get("topology.kubernetes.io/zone")
            .map(String::as_str)
            == Some("zone-c"),
        "zone label: {labels:?}"
    );
    ensure!(
        labels.get("kubernetes.io/hostname").map(String::as_str) == Some("node-c"),
        "hostname label: {labels:?}"
    );
    let leases: Api<Lease> = Api::namespaced(ctx.client.clone(), "kube-node-lease");
    let lease = leases.get("node-c").await.context("node-c has no Lease")?;
    lease
        .spec
        .and_then(|s| s.renew_time)
        .context("Lease has no renewTime")?;

    let ns = namespace(ctx, "kubesim-nodeloss").await?;
    create::<Pod>(
        ctx,
        &ns,
        json!({
            "metadata": { "name": "victim" },
            "spec": {
                "nodeSelector": { "kubernetes.io/hostname": "node-c" },
                "containers": [target("main", "/tmp/ignored.json", Some(8083), &[])],
            },
        }),
    )
    .await?;
    let pod = wait_pod(ctx, &ns, "victim", "Ready", Duration::from_secs(30), ready).await?;
    let pid = *pids(&pod).first().context("no container id")?;
    ensure!(alive(pid), "process {pid} is not running");

    ctx.sim.lose_node("node-c").await?;
    ensure!(!alive(pid), "process {pid} survived the node loss");
    wait("node-c NotReady", Duration::from_secs(90), || {
        let nodes = nodes.clone();
        async move { Ok(node_ready(&nodes.get("node-c").await?).as_deref() != Some("True")) }
    })
    .await?;
    let lease = leases.get("node-c").await?;
    let after = lease
        .spec
        .and_then(|s| s.renew_time)
        .context("Lease has no renewTime")?;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let later = leases
        .get("node-c")
        .await?
        .spec
        .and_then(|s| s.renew_time)
        .context("renewTime")?;
    ensure!(after == later, "the Lease is still renewed after the loss");
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let pod = pods.get("victim").await?;
    ensure!(
        pod.status.and_then(|s| s.phase).as_deref() == Some("Running"),
        "the lost pod's status was rewritten"
    );
    ensure!(
        ctx.sim.pod_ip(&ns, "victim").is_none(),
        "kubesim still manages the lost pod"
    );
    Ok(())
}
