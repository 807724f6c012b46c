//! Probes run for real, restarts and the kill/pause faults.

use std::time::Duration;

use anyhow::ensure;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use super::{Ctx, create, namespace, ready, restarts, target, wait_pod};

/// Readiness flips Ready both ways; a failing liveness probe restarts the
/// container (restartCount, lastState); kill_container restarts it too;
/// a paused container fails its readiness probe until resumed.
pub async fn probes_and_restarts(ctx: &Ctx) -> anyhow::Result<()> {
    let ns = namespace(ctx, "kubesim-probes").await?;
    let mut container = target("web", "/ctl/report.json", Some(8080), &[]);
    container["ports"] = json!([{ "name": "http", "containerPort": 8080 }]);
    container["env"] = json!([
        { "name": "POD_IP", "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } },
        { "name": "FAIL_READY_FILE", "value": "/ctl/unready" },
        { "name": "FAIL_LIVE_FILE", "value": "/ctl/dead" },
    ]);
    container["volumeMounts"] = json!([{ "name": "ctl", "mountPath": "/ctl" }]);
    container["startupProbe"] =
        json!({ "tcpSocket": { "port": 8080 }, "periodSeconds": 1, "failureThreshold": 30 });
    container["readinessProbe"] = json!({ "httpGet": { "path": "/ready", "port": "http" }, "periodSeconds": 1, "failureThreshold": 1 });
    container["livenessProbe"] = json!({
        "httpGet": { "path": "/live", "port": 8080, "httpHeaders": [{ "name": "X-Probe", "value": "1" }] },
        "periodSeconds": 1, "failureThreshold": 2, "timeoutSeconds": 1,
    });
    container["readinessProbe"]["timeoutSeconds"] = json!(1);
    create::<Pod>(ctx, &ns, json!({
        "metadata": { "name": "probed" },
        "spec": {
            "nodeSelector": { "kubernetes.io/hostname": "node-a" },
            "terminationGracePeriodSeconds": 5,
            "containers": [container],
            "volumes": [{ "name": "ctl", "hostPath": { "path": "/data/probes", "type": "DirectoryOrCreate" } }],
        },
    }))
    .await?;
    let ctl = |name: &str| ctx.sim.host_path("node-a", &format!("/data/probes/{name}"));
    let limit = Duration::from_secs(30);
    wait_pod(ctx, &ns, "probed", "Ready", limit, ready).await?;

    std::fs::write(ctl("unready"), "")?;
    wait_pod(
        ctx,
        &ns,
        "probed",
        "NotReady after /ready fails",
        limit,
        |p| !ready(p),
    )
    .await?;
    std::fs::remove_file(ctl("unready"))?;
    wait_pod(ctx, &ns, "probed", "Ready again", limit, ready).await?;

    std::fs::write(ctl("dead"), "")?;
    let pod = wait_pod(
        ctx,
        &ns,
        "probed",
        "a restart after /live fails",
        limit,
        |p| restarts(p, "web") >= 1,
    )
    .await?;
    std::fs::remove_file(ctl("dead"))?;
    let last = last_terminated(&pod);
    ensure!(
        last.is_some(),
        "lastState.terminated is not set after the liveness restart"
    );
    let signals = std::fs::read_to_string(ctl("report.json.signals")).unwrap_or_default();
    ensure!(
        signals.contains("SIGTERM"),
        "liveness restart did not SIGTERM the container"
    );
    wait_pod(
        ctx,
        &ns,
        "probed",
        "Ready after the liveness restart",
        limit,
        ready,
    )
    .await?;
    let starts = std::fs::read_to_string(ctl("report.json.starts"))?;
    ensure!(
        starts.lines().count() >= 2,
        "the process was not started again: {starts:?}"
    );

    let before = restarts(
        &wait_pod(ctx, &ns, "probed", "status", limit, |_| true).await?,
        "web",
    );
    ctx.sim.kill_container(&ns, "probed", "web").await?;
    let pod = wait_pod(ctx, &ns, "probed", "a restart after SIGKILL", limit, |p| {
        restarts(p, "web") > before
    })
    .await?;
    let code = last_terminated(&pod).map(|t| t.exit_code);
    ensure!(
        code == Some(137),
        "exit code after SIGKILL is {code:?}, want 137"
    );
    wait_pod(ctx, &ns, "probed", "Ready after the kill", limit, ready).await?;

    ctx.sim.pause_container(&ns, "probed", "web").await?;
    let paused = wait_pod(ctx, &ns, "probed", "NotReady while paused", limit, |p| {
        !ready(p)
    })
    .await;
    ctx.sim.resume_container(&ns, "probed", "web").await?;
    paused?;
    wait_pod(ctx, &ns, "probed", "Ready after resume", limit, ready).await?;
    Ok(())
}

fn last_terminated(pod: &Pod) -> Option<k8s_openapi::api::core::v1::ContainerStateTerminated> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .last_state
        .as_ref()?
        .terminated
        .clone()
}
