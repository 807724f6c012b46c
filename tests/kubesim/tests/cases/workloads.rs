//! Controllers and the scheduler working with kubesim's nodes.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::ensure;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use super::{Ctx, create, list_pods, namespace, node_of, ready, target, wait, wait_pod};

/// A DaemonSet with a nodeSelector gets exactly one Ready pod on each
/// selected node and none elsewhere.
pub async fn daemonset_node_selector(ctx: &Ctx) -> anyhow::Result<()> {
    let ns = namespace(ctx, "kubesim-daemonset").await?;
    create::<DaemonSet>(
        ctx,
        &ns,
        json!({
            "metadata": { "name": "agent" },
            "spec": {
                "selector": { "matchLabels": { "app": "agent" } },
                "template": {
                    "metadata": { "labels": { "app": "agent" } },
                    "spec": {
                        "nodeSelector": { "kubesim.test/role": "storage" },
                        "containers": [target("agent", "/tmp/ignored.json", Some(8081), &[])],
                    },
                },
            },
        }),
    )
    .await?;
    let sets: Api<DaemonSet> = Api::namespaced(ctx.client.clone(), &ns);
    wait(
        "DaemonSet numberReady == 2",
        Duration::from_secs(60),
        || {
            let sets = sets.clone();
            async move {
                let s = sets.get("agent").await?.status.unwrap_or_default();
                Ok(s.desired_number_scheduled == 2 && s.number_ready == 2)
            }
        },
    )
    .await?;
    let pods = list_pods(ctx, &ns, "app=agent").await?;
    let nodes: Vec<String> = pods.iter().map(node_of).collect();
    let unique: BTreeSet<&String> = nodes.iter().collect();
    ensure!(nodes.len() == 2 && unique.len() == 2, "pods on {nodes:?}");
    ensure!(
        unique.iter().all(|n| *n == "node-a" || *n == "node-b"),
        "pods on {nodes:?}, want node-a and node-b"
    );
    ensure!(pods.iter().all(ready), "not every DaemonSet pod is Ready");
    Ok(())
}

/// A pod with a scheduling gate stays Pending and unscheduled until the
/// gate is removed, then runs.
pub async fn scheduling_gate(ctx: &Ctx) -> anyhow::Result<()> {
    let ns = namespace(ctx, "kubesim-gates").await?;
    create::<Pod>(
        ctx,
        &ns,
        json!({
            "metadata": { "name": "gated" },
            "spec": {
                "schedulingGates": [{ "name": "kubesim.test/hold" }],
                "containers": [target("main", "/tmp/ignored.json", Some(8082), &[])],
            },
        }),
    )
    .await?;
    let pod = wait_pod(
        ctx,
        &ns,
        "gated",
        "PodScheduled=False/SchedulingGated",
        Duration::from_secs(20),
        |p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|c| {
                    c.iter().any(|c| {
                        c.type_ == "PodScheduled" && c.reason.as_deref() == Some("SchedulingGated")
                    })
                })
        },
    )
    .await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let pod = pods.get("gated").await.unwrap_or(pod);
    ensure!(
        node_of(&pod).is_empty(),
        "gated pod was bound to {}",
        node_of(&pod)
    );
    ensure!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending"),
        "gated pod is not Pending"
    );
    let patch = json!({ "spec": { "schedulingGates": null } });
    pods.patch("gated", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    wait_pod(
        ctx,
        &ns,
        "gated",
        "Ready once ungated",
        Duration::from_secs(30),
        ready,
    )
    .await?;
    Ok(())
}
