//! Startup, liveness and readiness probes, executed for real against the
//! pod's address: httpGet (HTTPS without verification, like the kubelet),
//! tcpSocket, exec (argv[0] mapped like the container's), and grpc as a
//! TCP connect (kubesim speaks no gRPC health protocol).

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, ContainerPort, HTTPGetAction, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::sync::mpsc;

use crate::pods::{PodCtx, Prepared, events, launch};

/// Runs a container's probes until the container stops: the startup probe
/// first, then liveness and readiness side by side. A failed startup or
/// liveness probe asks the supervisor (through `kill`) to restart it.
pub(crate) async fn run(
    ctx: Arc<PodCtx>,
    init: bool,
    index: usize,
    container: Container,
    prepared: Arc<Prepared>,
    kill: mpsc::Sender<String>,
) {
    let ports = container.ports.clone().unwrap_or_default();
    if let Some(probe) = &container.startup_probe {
        let ok = until_verdict(
            &ctx,
            &prepared,
            &ports,
            probe,
            &container.name,
            "Startup",
            |_| {},
        )
        .await;
        if !ok {
            let _ = kill
                .send(format!(
                    "Container {} failed startup probe, will be restarted",
                    container.name
                ))
                .await;
            return;
        }
        ctx.update(init, index, |c| {
            c.started = true;
            c.ready = container.readiness_probe.is_none();
        });
    }
    let readiness = async {
        if let Some(probe) = &container.readiness_probe {
            let ctx2 = ctx.clone();
            let _ = until_verdict(
                &ctx,
                &prepared,
                &ports,
                probe,
                &container.name,
                "Readiness",
                move |ready| {
                    ctx2.update(init, index, |c| c.ready = ready);
                },
            )
            .await;
            // Readiness never ends by itself: `until_verdict` with a
            // callback loops forever.
        }
    };
    let liveness = async {
        if let Some(probe) = &container.liveness_probe {
            let alive = until_verdict(
                &ctx,
                &prepared,
                &ports,
                probe,
                &container.name,
                "Liveness",
                |_| {},
            )
            .await;
            if !alive {
                let _ = kill
                    .send(format!(
                        "Container {} failed liveness probe, will be restarted",
                        container.name
                    ))
                    .await;
            }
        }
    };
    tokio::join!(readiness, liveness);
}

/// Runs `probe` periodically. Startup: returns true on success, false when
/// the failure threshold is reached. Liveness: returns false at the failure
/// threshold and never returns true. Readiness: reports each verdict change
/// through `report` and never returns.
async fn until_verdict(
    ctx: &PodCtx,
    prepared: &Prepared,
    ports: &[ContainerPort],
    probe: &Probe,
    container: &str,
    role: &str,
    mut report: impl FnMut(bool),
) -> bool {
    let delay = secs(probe.initial_delay_seconds, 0);
    let period = secs(probe.period_seconds, 10).max(Duration::from_secs(1));
    let timeout = secs(probe.timeout_seconds, 1).max(Duration::from_secs(1));
    let success_threshold = probe.success_threshold.unwrap_or(1).max(1);
    let failure_threshold = probe.failure_threshold.unwrap_or(3).max(1);
    tokio::time::sleep(delay).await;
    let (mut successes, mut failures) = (0, 0);
    let mut verdict: Option<bool> = None;
    loop {
        let ok = check(ctx, prepared, ports, probe, timeout).await;
        if ok {
            successes += 1;
            failures = 0;
        } else {
            failures += 1;
            successes = 0;
            if failures == 1 {
                events::event(
                    ctx,
                    "Warning",
                    "Unhealthy",
                    &format!("{role} probe failed for container {container}"),
                )
                .await;
            }
        }
        match role {
            "Startup" if successes >= 1 => return true,
            "Startup" | "Liveness" if failures >= failure_threshold => return false,
            "Readiness" => {
                let new = if successes >= success_threshold {
                    Some(true)
                } else if failures >= failure_threshold {
                    Some(false)
                } else {
                    verdict
                };
                if new != verdict {
                    verdict = new;
                    report(new == Some(true));
                }
            }
            _ => {}
        }
        tokio::time::sleep(period).await;
    }
}

fn secs(value: Option<i32>, default: i32) -> Duration {
    Duration::from_secs(value.unwrap_or(default).max(0) as u64)
}

/// One probe attempt.
async fn check(
    ctx: &PodCtx,
    prepared: &Prepared,
    ports: &[ContainerPort],
    probe: &Probe,
    timeout: Duration,
) -> bool {
    if let Some(exec) = &probe.exec {
        return self::exec(
            ctx,
            prepared,
            exec.command.as_deref().unwrap_or_default(),
            timeout,
        )
        .await;
    }
    if let Some(action) = &probe.http_get {
        return http(ctx, ports, action, timeout).await;
    }
    if let Some(tcp) = &probe.tcp_socket {
        let Some(port) = resolve_port(&tcp.port, ports) else {
            return false;
        };
        let host = tcp.host.clone().unwrap_or_else(|| ctx.info.ip.to_string());
        return connect(&host, port, timeout).await;
    }
    if let Some(grpc) = &probe.grpc {
        return connect(&ctx.info.ip.to_string(), grpc.port as u16, timeout).await;
    }
    false
}

async fn connect(host: &str, port: u16, timeout: Duration) -> bool {
    let addr = match host.parse::<std::net::IpAddr>() {
        Ok(ip) => SocketAddr::new(ip, port),
        Err(_) => return false,
    };
    matches!(
        tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await,
        Ok(Ok(_))
    )
}

/// An exec probe or hook: exit code 0 within `timeout` is success.
pub(crate) async fn exec(
    ctx: &PodCtx,
    prepared: &Prepared,
    argv: &[String],
    timeout: Duration,
) -> bool {
    let Some(launch) = launch::exec_launch(prepared, argv) else {
        return false;
    };
    let mut child = match ctx.shared.processes.spawn_quiet(&launch) {
        Ok(child) => child,
        Err(_) => return false,
    };
    let pgid = child.id().unwrap_or(0) as i32;
    let result = tokio::time::timeout(timeout, child.wait()).await;
    ctx.shared.processes.reaped(pgid);
    match result {
        Ok(Ok(status)) => status.success(),
        _ => {
            let _ = child.wait().await;
            false
        }
    }
}

/// An httpGet probe or hook: a status in 200..400 within `timeout` is
/// success.
pub(crate) async fn http(
    ctx: &PodCtx,
    ports: &[ContainerPort],
    action: &HTTPGetAction,
    timeout: Duration,
) -> bool {
    let Some(port) = resolve_port(&action.port, ports) else {
        return false;
    };
    let host = action
        .host
        .clone()
        .unwrap_or_else(|| ctx.info.ip.to_string());
    let scheme = action
        .scheme
        .as_deref()
        .unwrap_or("HTTP")
        .to_ascii_lowercase();
    let path = action.path.clone().unwrap_or_else(|| "/".into());
    let path = if path.starts_with('/') {
        path
    } else {
        format!("/{path}")
    };
    let Some(client) = client() else { return false };
    let mut request = client
        .get(format!("{scheme}://{host}:{port}{path}"))
        .timeout(timeout)
        .header("User-Agent", "kube-probe/1.36");
    for h in action.http_headers.iter().flatten() {
        request = request.header(h.name.as_str(), h.value.as_str());
    }
    match request.send().await {
        Ok(response) => (200..400).contains(&response.status().as_u16()),
        Err(_) => false,
    }
}

fn resolve_port(port: &IntOrString, ports: &[ContainerPort]) -> Option<u16> {
    match port {
        IntOrString::Int(n) => u16::try_from(*n).ok(),
        IntOrString::String(name) => match name.parse::<u16>() {
            Ok(n) => Some(n),
            Err(_) => ports
                .iter()
                .find(|p| p.name.as_deref() == Some(name.as_str()))
                .and_then(|p| u16::try_from(p.container_port).ok()),
        },
    }
}

/// One HTTP client for every probe: certificates are not verified, as the
/// kubelet does not verify them either.
fn client() -> Option<&'static reqwest::Client> {
    static CLIENT: OnceLock<Option<reqwest::Client>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .tls_danger_accept_invalid_certs(true)
                .no_proxy()
                .pool_max_idle_per_host(0)
                .build()
                .ok()
        })
        .as_ref()
}
