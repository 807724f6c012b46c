//! `garage-reconciler`: runs the GarageCluster and GarageNode controllers while holding the
//! leader Lease, serves `/metrics`, `/healthz` and `/readyz`, logs JSON, and stops cleanly on
//! SIGTERM or Ctrl-C.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::http::header;
use axum::routing::get;
use reconciler::controller::{self, Metrics};
use reconciler::leader::{self, LeaseConfig};
use tokio::net::TcpListener;

fn main() -> anyhow::Result<()> {
    // Reconcile futures hold many Kubernetes objects; debug builds keep them on the stack.
    tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(16 << 20)
        .enable_all()
        .build()
        .context("starting the tokio runtime")?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let listen =
        std::env::var("GARAGE_RECONCILER_LISTEN").unwrap_or_else(|_| "0.0.0.0:8080".into());
    let namespace = std::env::var("POD_NAMESPACE").unwrap_or_else(|_| "garage-operator".into());
    let identity = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("garage-reconciler-{}", std::process::id()));
    let client = kube::Client::try_default()
        .await
        .context("no Kubernetes client configuration (in-cluster or KUBECONFIG)")?;
    let metrics = Arc::new(Metrics::default());
    let leading = Arc::new(AtomicBool::new(false));
    let server = TcpListener::bind(&listen)
        .await
        .with_context(|| format!("binding {listen}"))?;
    tokio::spawn(serve(server, metrics.clone(), leading.clone()));
    // Probes may have a port of their own (the Go operator's charts probe :8081).
    if let Some(health) = env_value("GARAGE_RECONCILER_HEALTH_LISTEN").filter(|h| *h != listen) {
        let server = TcpListener::bind(&health)
            .await
            .with_context(|| format!("binding {health} (GARAGE_RECONCILER_HEALTH_LISTEN)"))?;
        tokio::spawn(serve(server, metrics.clone(), leading.clone()));
    }
    let defaults = controller::Config::default();
    let drain_quiet = match env_value("GARAGE_DRAIN_QUIET_SECONDS") {
        Some(v) => Duration::from_secs(v.parse().with_context(|| {
            format!("GARAGE_DRAIN_QUIET_SECONDS={v:?} is not a number of seconds")
        })?),
        None => defaults.drain_quiet,
    };
    let config = controller::Config {
        drain_quiet,
        default_garage_image: env_value("GARAGE_DEFAULT_IMAGE"),
        namespaces: env_value("WATCH_NAMESPACES")
            .map(|list| {
                list.split(',')
                    .map(str::trim)
                    .filter(|ns| !ns.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        ..defaults
    };
    if config.namespaces.is_empty() {
        tracing::info!("managing every namespace");
    } else {
        tracing::info!(namespaces = ?config.namespaces, "managing only these namespaces");
    }

    let lease = LeaseConfig {
        namespace,
        // The chart renders this Lease so that uninstalling removes it.
        name: env_value("GARAGE_RECONCILER_LEASE")
            .unwrap_or_else(|| "garage-reconciler-leader".into()),
        identity,
        duration: Duration::from_secs(15),
        renew_every: Duration::from_secs(4),
    };
    let terminate = async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        anyhow::Ok(())
    };
    tokio::pin!(terminate);
    tokio::select! {
        () = leader::acquire(&client, &lease) => {}
        r = &mut terminate => { r?; tracing::info!("stopping before leadership"); return Ok(()); }
    }
    leading.store(true, Ordering::Relaxed);
    tracing::info!(identity = %lease.identity, "leading");
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let controllers = tokio::spawn(controller::run(
        client.clone(),
        config,
        metrics,
        async move {
            let _ = stop_rx.await;
        },
    ));
    let lost = tokio::select! {
        () = leader::hold(&client, &lease) => true,
        r = &mut terminate => { r?; false }
    };
    let _ = stop_tx.send(());
    // In-flight reconciles finish; each Garage write is a single call, so none is cut in half.
    let stopped = tokio::time::timeout(Duration::from_secs(20), controllers)
        .await
        .is_ok();
    leading.store(false, Ordering::Relaxed);
    if !lost && stopped {
        // The controllers have stopped: no write of ours can follow the hand-over.
        if let Err(e) = leader::release(&client, &lease).await {
            tracing::warn!(error = %e, "could not release the lease; a successor waits for it to expire");
        }
    }
    if lost {
        anyhow::bail!("leadership lost; exiting so that a restart re-elects");
    }
    tracing::info!("stopped");
    Ok(())
}

/// A non-empty environment variable.
fn env_value(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// `/metrics`, `/healthz` (process alive) and `/readyz` (ready to lead or leading; the body
/// says which). A standby is ready: were it not, a rolling update would wait for a new pod that
/// cannot lead before the old one has stopped.
async fn serve(listener: TcpListener, metrics: Arc<Metrics>, leading: Arc<AtomicBool>) {
    let app = Router::new()
        .route(
            "/metrics",
            get(move || {
                let metrics = metrics.clone();
                async move {
                    (
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        metrics.render(),
                    )
                }
            }),
        )
        .route("/healthz", get(|| async { "ok\n" }))
        .route(
            "/readyz",
            get(move || {
                let leading = leading.clone();
                async move {
                    if leading.load(Ordering::Relaxed) {
                        "leading\n"
                    } else {
                        "standby\n"
                    }
                }
            }),
        );
    if let Err(e) = axum::serve(listener, app).await {
        tracing::error!(error = %e, "metrics and health endpoint stopped");
    }
}
