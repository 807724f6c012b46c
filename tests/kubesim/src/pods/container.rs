//! One container: start its process, watch it, run its probes, and restart
//! it as the restart policy says, with back-off.
//!
//! Back-off starts at 1s and doubles up to 30s (the kubelet uses 10s up to
//! 5 minutes; tests would wait too long), and is reset once a container has
//! run for [`BACKOFF_RESET`].

use std::process::ExitStatus;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, LifecycleHandler};
use nix::sys::signal::Signal;
use tokio::process::Child;
use tokio::sync::{mpsc, watch};

use super::launch::{self, Prepared};
use super::{CState, PodCtx, Stop, events};
use crate::probes;
use crate::process::signal_group;

const BACKOFF_START: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// A container that ran this long without trouble starts over at the
/// shortest back-off.
const BACKOFF_RESET: Duration = Duration::from_secs(60);

/// Which list a container is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An init container run to completion.
    Init,
    /// An init container with `restartPolicy: Always`.
    Sidecar,
    /// An app container.
    App,
}

impl Kind {
    fn in_init_list(self) -> bool {
        self != Kind::App
    }
}

/// How a supervised container ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Exited 0 and will not be restarted.
    Completed,
    /// Exited non-zero and will not be restarted.
    Failed,
    /// The pod is being stopped.
    Stopped,
}

/// Runs a container until it is done for good or the pod stops.
pub(crate) async fn supervise(ctx: Arc<PodCtx>, kind: Kind, index: usize) -> Outcome {
    let spec = ctx.info.pod.spec.clone().unwrap_or_default();
    let list = if kind.in_init_list() {
        spec.init_containers.clone().unwrap_or_default()
    } else {
        spec.containers.clone()
    };
    let Some(container) = list.get(index).cloned() else {
        return Outcome::Stopped;
    };
    let pod_policy = spec
        .restart_policy
        .clone()
        .unwrap_or_else(|| "Always".into());
    let policy = match kind {
        Kind::Sidecar => "Always".to_owned(),
        Kind::Init if pod_policy == "Always" => "OnFailure".to_owned(),
        _ => container.restart_policy.clone().unwrap_or(pod_policy),
    };
    let init = kind.in_init_list();
    let mut stop = ctx.stop.subscribe();
    let mut backoff = BACKOFF_START;
    loop {
        if *stop.borrow() != Stop::Run {
            return Outcome::Stopped;
        }
        let prepared = match launch::prepare(&ctx, &container, kind == Kind::Init).await {
            Ok(p) => Arc::new(p),
            Err(message) => {
                ctx.update(init, index, |c| {
                    c.state = CState::Waiting {
                        reason: "CreateContainerConfigError".into(),
                        message: Some(message),
                    }
                });
                if !sleep_or_stop(backoff, &mut stop).await {
                    return Outcome::Stopped;
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        let log = ctx
            .info
            .dir
            .join("logs")
            .join(format!("{}.log", container.name));
        let mut child = match ctx.shared.processes.spawn(&prepared.launch, &log) {
            Ok(child) => child,
            Err(e) => {
                ctx.update(init, index, |c| {
                    c.state = CState::Waiting {
                        reason: "RunContainerError".into(),
                        message: Some(e.to_string()),
                    }
                });
                if !sleep_or_stop(backoff, &mut stop).await {
                    return Outcome::Stopped;
                }
                backoff = (backoff * 2).min(BACKOFF_MAX);
                continue;
            }
        };
        let pid = child.id().unwrap_or(0);
        let pgid = pid as i32;
        let started_at = ctx.info.clock.now();
        let began = Instant::now();
        let has_startup = container.startup_probe.is_some();
        let has_readiness = container.readiness_probe.is_some();
        ctx.update(init, index, |c| {
            c.pgid = Some(pgid);
            c.last_pid = Some(pid);
            c.state = CState::Running {
                started_at: started_at.clone(),
            };
            c.started = !has_startup;
            c.ready = kind != Kind::Init && !has_startup && !has_readiness;
        });
        let (kill_tx, mut kill_rx) = mpsc::channel::<String>(1);
        let probe_task = (kind != Kind::Init).then(|| {
            tokio::spawn(probes::run(
                ctx.clone(),
                init,
                index,
                container.clone(),
                prepared.clone(),
                kill_tx,
            ))
        });
        if let Some(hook) = container
            .lifecycle
            .as_ref()
            .and_then(|l| l.post_start.clone())
        {
            // The container counts as started only once postStart returns.
            let _ = run_hook(&ctx, &prepared, &hook, Duration::from_secs(30)).await;
        }
        let grace =
            Duration::from_secs(spec.termination_grace_period_seconds.unwrap_or(30).max(0) as u64);
        let mut stopped = false;
        let status = tokio::select! {
            status = child.wait() => status.ok(),
            Some(reason) = kill_rx.recv() => {
                events::event(&ctx, "Normal", "Killing", &reason).await;
                terminate(&ctx, &mut child, pgid, None, grace).await
            }
            _ = wait_for_stop(&mut stop) => {
                stopped = true;
                let mode = *stop.borrow();
                match mode {
                    Stop::Graceful(grace) => terminate(&ctx, &mut child, pgid, Some((&prepared, &container)), grace).await,
                    Stop::Shutdown(grace) => terminate(&ctx, &mut child, pgid, None, grace).await,
                    _ => terminate(&ctx, &mut child, pgid, None, Duration::ZERO).await,
                }
            }
        };
        if let Some(task) = probe_task {
            task.abort();
        }
        ctx.shared.processes.reaped(pgid);
        let (exit_code, signal) = exit_of(status);
        let reason = if exit_code == 0 { "Completed" } else { "Error" };
        let terminated = CState::Terminated {
            exit_code,
            signal,
            reason: reason.into(),
            started_at,
            finished_at: ctx.info.clock.now(),
            pid,
        };
        if stopped || *stop.borrow() != Stop::Run {
            ctx.update(init, index, |c| {
                c.pgid = None;
                c.ready = false;
                c.state = terminated;
            });
            return Outcome::Stopped;
        }
        let restart = match policy.as_str() {
            "Always" => true,
            "OnFailure" => exit_code != 0,
            _ => false,
        };
        if !restart {
            ctx.update(init, index, |c| {
                c.pgid = None;
                c.ready = false;
                c.state = terminated;
            });
            return if exit_code == 0 {
                Outcome::Completed
            } else {
                Outcome::Failed
            };
        }
        if began.elapsed() >= BACKOFF_RESET {
            backoff = BACKOFF_START;
        }
        let message = format!(
            "back-off {}s restarting failed container={} pod={}_{}({})",
            backoff.as_secs(),
            container.name,
            ctx.info.name,
            ctx.info.namespace,
            ctx.info.uid
        );
        ctx.update(init, index, |c| {
            c.pgid = None;
            c.ready = false;
            c.restart_count += 1;
            c.last_state = Some(terminated);
            c.state = CState::Waiting {
                reason: "CrashLoopBackOff".into(),
                message: Some(message),
            };
        });
        if !sleep_or_stop(backoff, &mut stop).await {
            return Outcome::Stopped;
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Stops a running container: preStop (when given, within the grace
/// period), SIGTERM, SIGKILL once `grace` has passed.
async fn terminate(
    ctx: &PodCtx,
    child: &mut Child,
    pgid: i32,
    pre_stop: Option<(&Prepared, &Container)>,
    grace: Duration,
) -> Option<ExitStatus> {
    let deadline = Instant::now() + grace;
    if let Some((prepared, container)) = pre_stop
        && let Some(hook) = container
            .lifecycle
            .as_ref()
            .and_then(|l| l.pre_stop.clone())
    {
        let _ = tokio::time::timeout(grace, run_hook(ctx, prepared, &hook, grace)).await;
    }
    if !grace.is_zero() {
        let _ = signal_group(pgid, Signal::SIGTERM);
        let left = deadline.saturating_duration_since(Instant::now());
        if let Ok(status) = tokio::time::timeout(left, child.wait()).await {
            return status.ok();
        }
    }
    let _ = signal_group(pgid, Signal::SIGKILL);
    // A stopped process is killed by SIGKILL too; no SIGCONT needed.
    child.wait().await.ok()
}

/// Runs a lifecycle hook (exec, httpGet or sleep); returns whether it
/// succeeded.
async fn run_hook(
    ctx: &PodCtx,
    prepared: &Prepared,
    hook: &LifecycleHandler,
    limit: Duration,
) -> bool {
    if let Some(exec) = &hook.exec {
        return probes::exec(
            ctx,
            prepared,
            exec.command.as_deref().unwrap_or_default(),
            limit,
        )
        .await;
    }
    if let Some(http) = &hook.http_get {
        return probes::http(ctx, &container_ports(ctx), http, limit).await;
    }
    if let Some(sleep) = &hook.sleep {
        tokio::time::sleep(Duration::from_secs(sleep.seconds.max(0) as u64).min(limit)).await;
        return true;
    }
    true
}

/// Every port the pod's containers name (a hook may use any of them).
fn container_ports(ctx: &PodCtx) -> Vec<k8s_openapi::api::core::v1::ContainerPort> {
    let spec = ctx.info.pod.spec.clone().unwrap_or_default();
    spec.containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .flat_map(|c| c.ports.clone().unwrap_or_default())
        .collect()
}

/// Kills the sidecars of a finished pod.
pub(crate) fn kill_sidecars(ctx: &PodCtx) {
    let groups: Vec<i32> = ctx.runtime().init.iter().filter_map(|c| c.pgid).collect();
    for pgid in groups {
        let _ = signal_group(pgid, Signal::SIGKILL);
    }
}

fn exit_of(status: Option<ExitStatus>) -> (i32, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => (code, None),
            (None, Some(sig)) => (128 + sig, Some(sig)),
            _ => (-1, None),
        },
        None => (-1, None),
    }
}

async fn wait_for_stop(stop: &mut watch::Receiver<Stop>) {
    loop {
        if *stop.borrow_and_update() != Stop::Run {
            return;
        }
        if stop.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Sleeps unless the pod is stopped first; returns false when stopped.
async fn sleep_or_stop(duration: Duration, stop: &mut watch::Receiver<Stop>) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(duration) => *stop.borrow() == Stop::Run,
        _ = wait_for_stop(stop) => false,
    }
}
