//! Pod status: computed from the runtime state and written with a
//! strategic-merge patch of the status subresource, only when it changed
//! (steady state is silent).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use super::{CState, CStatus, PodCtx, PodRuntime};

/// Coalesces bursts of changes into one write.
const DEBOUNCE: Duration = Duration::from_millis(50);
/// Waits before retrying a failed write.
const RETRY: Duration = Duration::from_secs(1);

/// Writes the status whenever the runtime state changes.
pub(super) async fn publish_loop(ctx: Arc<PodCtx>) {
    let mut last: Option<Value> = None;
    loop {
        ctx.changed.notified().await;
        tokio::time::sleep(DEBOUNCE).await;
        while !publish(&ctx, &mut last).await {
            tokio::time::sleep(RETRY).await;
        }
    }
}

/// Writes the status now (before the final delete).
pub(super) async fn publish_now(ctx: &PodCtx) {
    let mut last = None;
    let _ = publish(ctx, &mut last).await;
}

/// Returns false when the write should be retried.
async fn publish(ctx: &PodCtx, last: &mut Option<Value>) -> bool {
    let status = {
        let mut rt = ctx.runtime();
        if rt.frozen {
            return true;
        }
        compute(ctx, &mut rt)
    };
    if last.as_ref() == Some(&status) {
        return true;
    }
    let pods: Api<Pod> = Api::namespaced(ctx.shared.client.clone(), &ctx.info.namespace);
    let patch = json!({ "metadata": { "uid": ctx.info.uid }, "status": status });
    match pods
        .patch_status(
            &ctx.info.name,
            &PatchParams::default(),
            &Patch::Strategic(&patch),
        )
        .await
    {
        Ok(_) => {
            *last = Some(status);
            true
        }
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => true,
        Err(e) => {
            tracing::warn!(pod = %ctx.key(), "writing pod status: {e}");
            false
        }
    }
}

fn compute(ctx: &PodCtx, rt: &mut PodRuntime) -> Value {
    let all_ready = !rt.app.is_empty() && rt.app.iter().all(|c| c.ready);
    let mut phase = rt.phase;
    if phase == "Pending" && rt.initialized && rt.app.iter().any(|c| c.last_pid.is_some()) {
        phase = "Running";
        rt.phase = "Running";
    }
    let ready = all_ready && phase == "Running";
    let mut conditions = Vec::new();
    for (kind, status) in [
        ("PodReadyToStartContainers", rt.sandbox_ready),
        ("Initialized", rt.initialized),
        ("ContainersReady", ready),
        ("Ready", ready),
    ] {
        let entry = rt
            .transitions
            .entry(kind.to_owned())
            .or_insert_with(|| (status, ctx.info.clock.now()));
        if entry.0 != status {
            *entry = (status, ctx.info.clock.now());
        }
        let mut condition = json!({
            "type": kind,
            "status": if status { "True" } else { "False" },
            "lastTransitionTime": entry.1,
            "lastProbeTime": null,
        });
        if !status && kind != "PodReadyToStartContainers" {
            let not_ready: Vec<&str> = if kind == "Initialized" {
                rt.init
                    .iter()
                    .filter(|c| {
                        !matches!(c.state, CState::Terminated { exit_code: 0, .. })
                            && c.pgid.is_none()
                    })
                    .map(|c| c.name.as_str())
                    .collect()
            } else {
                rt.app
                    .iter()
                    .filter(|c| !c.ready)
                    .map(|c| c.name.as_str())
                    .collect()
            };
            let (reason, what) = if kind == "Initialized" {
                (
                    "ContainersNotInitialized",
                    "containers with incomplete status",
                )
            } else {
                ("ContainersNotReady", "containers with unready status")
            };
            condition["reason"] = json!(reason);
            condition["message"] = json!(format!("{what}: [{}]", not_ready.join(" ")));
        }
        conditions.push(condition);
    }
    let pod_ip = ctx.info.ip.to_string();
    let host_ip = ctx.info.host_ip.to_string();
    let mut status = json!({
        "phase": phase,
        "hostIP": host_ip,
        "hostIPs": [{ "ip": host_ip }],
        "podIP": pod_ip,
        "podIPs": [{ "ip": pod_ip }],
        "startTime": rt.start_time,
        "conditions": conditions,
        "containerStatuses": rt.app.iter().map(container_status).collect::<Vec<_>>(),
    });
    if !rt.init.is_empty() {
        status["initContainerStatuses"] =
            json!(rt.init.iter().map(container_status).collect::<Vec<_>>());
    }
    status
}

fn container_status(c: &CStatus) -> Value {
    let mut v = json!({
        "name": c.name,
        "image": c.image,
        "imageID": format!("kubesim://{}", c.image),
        "ready": c.ready,
        "started": matches!(c.state, CState::Running { .. }) && c.started,
        "restartCount": c.restart_count,
        "state": state(&c.state),
        "lastState": c.last_state.as_ref().map_or_else(|| json!({}), state),
    });
    if let Some(pid) = c.last_pid {
        v["containerID"] = json!(format!("kubesim://{pid}"));
    }
    v
}

/// A container state; the other two variants are set to null so that a
/// merge never leaves a stale one behind.
fn state(s: &CState) -> Value {
    match s {
        CState::Waiting { reason, message } => {
            let mut w = json!({ "reason": reason });
            if let Some(m) = message {
                w["message"] = json!(m);
            }
            json!({ "waiting": w, "running": null, "terminated": null })
        }
        CState::Running { started_at } => {
            json!({ "waiting": null, "running": { "startedAt": started_at }, "terminated": null })
        }
        CState::Terminated {
            exit_code,
            signal,
            reason,
            started_at,
            finished_at,
            pid,
        } => {
            let mut t = json!({
                "exitCode": exit_code,
                "reason": reason,
                "startedAt": started_at,
                "finishedAt": finished_at,
                "containerID": format!("kubesim://{pid}"),
            });
            if let Some(sig) = signal {
                t["signal"] = json!(sig);
            }
            json!({ "waiting": null, "running": null, "terminated": t })
        }
    }
}
