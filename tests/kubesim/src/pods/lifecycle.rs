//! One pod from start to deletion: volumes, init containers in order, app
//! containers, completion, and graceful deletion ending with the final
//! `DELETE` (grace period 0, UID precondition) the kubelet issues.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DeleteParams, Preconditions};
use tokio::sync::watch;

use super::container::{self, Kind, Outcome};
use super::{CState, CStatus, PodCtx, PodInfo, PodRuntime, Stop, events, status};
use crate::volumes;

/// How long a pod waits between attempts to set up its volumes.
const MOUNT_RETRY: Duration = Duration::from_secs(3);
/// How often ConfigMap, Secret, projected and downward-API volumes are
/// written again (the kubelet's sync period is about a minute; tests want
/// changes to show quickly).
const VOLUME_REFRESH: Duration = Duration::from_secs(10);
/// How long the final delete waits before trying again.
const FINAL_DELETE_RETRY: Duration = Duration::from_secs(1);
/// The grace period when a pod does not say.
const DEFAULT_GRACE: i64 = 30;

/// The runtime state of a pod kubesim has just taken on.
pub(super) fn initial_runtime(info: &PodInfo) -> PodRuntime {
    let spec = info.pod.spec.clone().unwrap_or_default();
    let has_init = spec.init_containers.as_ref().is_some_and(|c| !c.is_empty());
    let waiting = |reason: &str| CState::Waiting {
        reason: reason.into(),
        message: None,
    };
    let status = |c: &k8s_openapi::api::core::v1::Container, reason: &str| CStatus {
        name: c.name.clone(),
        image: c.image.clone().unwrap_or_default(),
        pgid: None,
        last_pid: None,
        restart_count: 0,
        state: waiting(reason),
        last_state: None,
        ready: false,
        started: false,
    };
    let app_reason = if has_init {
        "PodInitializing"
    } else {
        "ContainerCreating"
    };
    PodRuntime {
        phase: "Pending",
        start_time: info.clock.now(),
        sandbox_ready: false,
        initialized: false,
        init: spec
            .init_containers
            .iter()
            .flatten()
            .map(|c| status(c, "PodInitializing"))
            .collect(),
        app: spec
            .containers
            .iter()
            .map(|c| status(c, app_reason))
            .collect(),
        transitions: BTreeMap::new(),
        frozen: false,
    }
}

/// The pod's worker: runs it, follows updates of the object, and tears it
/// down on deletion, disappearance or node loss.
pub(super) async fn run(ctx: Arc<PodCtx>, mut updates: watch::Receiver<Option<Arc<Pod>>>) {
    let publisher = tokio::spawn(status::publish_loop(ctx.clone()));
    let mut life = tokio::spawn(lifecycle(ctx.clone()));
    let mut life_done = false;
    let mut stop_rx = ctx.stop.subscribe();
    let mut closed = false;
    loop {
        if let Some(pod) = updates.borrow_and_update().clone() {
            if pod.metadata.deletion_timestamp.is_some() && ctx.stop_mode() == Stop::Run {
                let grace = pod
                    .metadata
                    .deletion_grace_period_seconds
                    .or_else(|| {
                        pod.spec
                            .as_ref()
                            .and_then(|s| s.termination_grace_period_seconds)
                    })
                    .unwrap_or(DEFAULT_GRACE)
                    .max(0);
                ctx.stop
                    .send_replace(Stop::Graceful(Duration::from_secs(grace as u64)));
            }
        } else if ctx.stop_mode() == Stop::Run || matches!(ctx.stop_mode(), Stop::Graceful(_)) {
            ctx.stop.send_replace(Stop::Kill);
        }
        if life_done && ctx.stop_mode() != Stop::Run {
            break;
        }
        tokio::select! {
            changed = updates.changed(), if !closed => {
                if changed.is_err() {
                    // The agent dropped the pod (shutdown): stop hard.
                    closed = true;
                    if ctx.stop_mode() == Stop::Run {
                        ctx.stop.send_replace(Stop::Kill);
                    }
                }
            }
            _ = &mut life, if !life_done => {
                life_done = true;
                if ctx.stop_mode() == Stop::Run {
                    // A finished pod keeps status.podIP but, as with the
                    // kubelet, no longer holds the address.
                    ctx.release_address();
                }
            }
            _ = stop_rx.changed() => {}
        }
    }
    let mode = ctx.stop_mode();
    if matches!(mode, Stop::Abandon | Stop::Shutdown(_)) {
        // A dead kubelet writes nothing; the pod stays as it is.
        publisher.abort();
        ctx.release_address();
        return;
    }
    ctx.release_address();
    if let Stop::Graceful(_) = mode {
        status::publish_now(&ctx).await;
        ctx.update_pod(|rt| rt.frozen = true);
        publisher.abort();
        final_delete(&ctx).await;
    } else {
        ctx.update_pod(|rt| rt.frozen = true);
        publisher.abort();
    }
    let key = (ctx.info.namespace.clone(), ctx.info.name.clone());
    let mut pods = ctx.shared.pods();
    if pods
        .get(&key)
        .is_some_and(|h| h.ctx.info.uid == ctx.info.uid)
    {
        pods.remove(&key);
    }
}

/// The kubelet's last word on a deleted pod: `DELETE` with grace period 0 and the pod's UID
/// as precondition, retried until the API server answers. A single attempt that met an API
/// server outage would leave the pod Terminating for good, and its StatefulSet waiting on it.
/// Stops early only when kubesim shuts down or the node is lost, which write nothing more.
async fn final_delete(ctx: &PodCtx) {
    let pods: Api<Pod> = Api::namespaced(ctx.shared.client.clone(), &ctx.info.namespace);
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: Some(ctx.info.uid.clone()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    loop {
        match pods.delete(&ctx.info.name, &params).await {
            Ok(_) => return,
            // Gone already, or another pod of the same name now: nothing of ours is left.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => return,
            Err(e) => tracing::warn!(pod = %ctx.key(), "final delete: {e}; retrying"),
        }
        tokio::time::sleep(FINAL_DELETE_RETRY).await;
        if matches!(ctx.stop_mode(), Stop::Abandon | Stop::Shutdown(_)) {
            return;
        }
    }
}

/// Volumes, init containers, app containers; returns when the pod is done
/// or asked to stop.
async fn lifecycle(ctx: Arc<PodCtx>) {
    // The first status (addresses, ContainerCreating) goes out before any
    // volume is tried, as the kubelet's first sync does.
    ctx.changed.notify_one();
    let mut stop = ctx.stop.subscribe();
    if !setup_volumes(&ctx, &mut stop).await {
        return;
    }
    let refresher = tokio::spawn(refresh_volumes(ctx.clone()));
    let spec = ctx.info.pod.spec.clone().unwrap_or_default();
    let mut sidecars = Vec::new();
    for (index, c) in spec.init_containers.iter().flatten().enumerate() {
        if c.restart_policy.as_deref() == Some("Always") {
            // A sidecar: keeps running beside the app containers; the next
            // init container starts once it has started.
            let task = tokio::spawn(container::supervise(ctx.clone(), Kind::Sidecar, index));
            sidecars.push(task);
            wait_started(&ctx, index, &mut stop).await;
        } else {
            match container::supervise(ctx.clone(), Kind::Init, index).await {
                Outcome::Completed => {}
                Outcome::Failed => {
                    ctx.update_pod(|rt| rt.phase = "Failed");
                    refresher.abort();
                    return;
                }
                Outcome::Stopped => {
                    refresher.abort();
                    return;
                }
            }
        }
        if ctx.stop_mode() != Stop::Run {
            refresher.abort();
            return;
        }
    }
    ctx.update_pod(|rt| {
        rt.initialized = true;
        for c in &mut rt.app {
            if matches!(&c.state, CState::Waiting { reason, .. } if reason == "PodInitializing") {
                c.state = CState::Waiting {
                    reason: "ContainerCreating".into(),
                    message: None,
                };
            }
        }
    });
    let apps: Vec<_> = (0..spec.containers.len())
        .map(|index| tokio::spawn(container::supervise(ctx.clone(), Kind::App, index)))
        .collect();
    let mut outcomes = Vec::new();
    for app in apps {
        outcomes.push(app.await.unwrap_or(Outcome::Stopped));
    }
    if ctx.stop_mode() == Stop::Run {
        let failed = outcomes.contains(&Outcome::Failed);
        ctx.update_pod(|rt| rt.phase = if failed { "Failed" } else { "Succeeded" });
        // A finished pod's sidecars are stopped, as the kubelet does.
        for s in &sidecars {
            s.abort();
        }
        container::kill_sidecars(&ctx);
    } else {
        for s in sidecars {
            let _ = s.await;
        }
    }
    refresher.abort();
}

async fn wait_started(ctx: &PodCtx, index: usize, stop: &mut watch::Receiver<Stop>) {
    loop {
        if ctx.runtime().init.get(index).is_none_or(|c| c.started) || *stop.borrow() != Stop::Run {
            return;
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            _ = stop.changed() => {}
        }
    }
}

/// Sets up the volumes, retrying with `FailedMount` events until it works
/// or the pod is stopped. Returns whether containers may start.
async fn setup_volumes(ctx: &PodCtx, stop: &mut watch::Receiver<Stop>) -> bool {
    let client = ctx.shared.client.clone();
    if let Err(e) = std::fs::create_dir_all(ctx.info.dir.join("logs")) {
        tracing::error!(pod = %ctx.key(), "creating the pod directory: {e}");
    }
    let mut attempt = 0u32;
    loop {
        if *stop.borrow() != Stop::Run {
            return false;
        }
        match volumes::materialise(&client, &ctx.info, false).await {
            Ok(map) => {
                *ctx.volumes.lock().unwrap_or_else(|p| p.into_inner()) = map;
                ctx.update_pod(|rt| rt.sandbox_ready = true);
                return true;
            }
            Err(e) => {
                // The kubelet repeats the event on every failed sync; one
                // every few attempts is enough to be seen without flooding.
                if attempt.is_multiple_of(5) {
                    events::warn(ctx, "FailedMount", &e.0).await;
                }
                attempt += 1;
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(MOUNT_RETRY) => {}
            _ = stop.changed() => {}
        }
    }
}

async fn refresh_volumes(ctx: Arc<PodCtx>) {
    loop {
        tokio::time::sleep(VOLUME_REFRESH).await;
        if ctx.stop_mode() != Stop::Run {
            return;
        }
        if let Err(e) = volumes::materialise(&ctx.shared.client, &ctx.info, true).await {
            tracing::debug!(pod = %ctx.key(), "refreshing volumes: {}", e.0);
        }
    }
}
