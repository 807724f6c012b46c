//! `garage-reconciler`: runs the GarageCluster and GarageNode controllers while holding the
//! leader Lease, serves `/metrics`, `/healthz` and `/readyz`, logs JSON, and stops cleanly on
//! SIGTERM or Ctrl-C.
//!
//! The install's identity, recorded on the GarageClusters it manages, is
//! `<POD_NAMESPACE>/<GARAGE_RECONCILER_LEASE>` (defaults `garage-operator` and
//! `garage-reconciler-leader`): the namespace and name of its leader Lease.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::routing::get;
use decide::cluster::capacity;
use decide::ownership::Install;
use reconciler::controller::cluster::network_policy;
use reconciler::controller::{self, Metrics};
use reconciler::leader::{self, Elector, LeaseConfig, Outcome, Status, Timing};
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
    let (namespace, lease_name, install) = install_lease();
    let identity = std::env::var("POD_NAME")
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_else(|_| format!("garage-reconciler-{}", std::process::id()));
    let client = kube::Client::try_default()
        .await
        .context("no Kubernetes client configuration (in-cluster or KUBECONFIG)")?;
    let metrics = Arc::new(Metrics::default());
    let config = config_from_env(install)?;
    log_config(&config);

    let lease = LeaseConfig {
        namespace,
        name: lease_name,
        identity,
        timing: Timing::DEFAULT,
    };
    let elector = Elector::new(client.clone(), lease).context("leader election settings")?;
    let status = elector.status();
    let server = TcpListener::bind(&listen)
        .await
        .with_context(|| format!("binding {listen}"))?;
    tokio::spawn(serve(server, metrics.clone(), status.clone()));
    // Probes may have a port of their own (the Go operator's charts probe :8081).
    if let Some(health) = env_value("GARAGE_RECONCILER_HEALTH_LISTEN").filter(|h| *h != listen) {
        let server = TcpListener::bind(&health)
            .await
            .with_context(|| format!("binding {health} (GARAGE_RECONCILER_HEALTH_LISTEN)"))?;
        tokio::spawn(serve(server, metrics.clone(), status));
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let terminate = async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    };
    let totals = metrics.clone();
    // On a worker thread, with the runtime's large stacks: the election task polls the
    // controllers itself, so that it can drop them the moment its tenure ends.
    let outcome = tokio::spawn(async move {
        elector
            .lead(terminate, move |stop| {
                controller::run(client, config, metrics, stop)
            })
            .await
    })
    .await
    .context("the election task panicked; exiting so that a restart re-elects")?;
    // What this process did, for whoever reads why it stopped: a process that lost its
    // tenure must show no write after the loss.
    tracing::info!(
        api_writes = totals.api_writes(),
        reconciles = totals.reconciles(),
        "controllers stopped"
    );
    match outcome {
        Outcome::NeverLed => tracing::info!("stopped before leadership"),
        Outcome::SteppedDown { .. } => tracing::info!("stopped"),
        Outcome::WorkEnded { .. } => {
            anyhow::bail!(
                "the controllers stopped on their own; exiting so that a restart re-elects"
            )
        }
        Outcome::Lost(loss) => {
            anyhow::bail!(
                "leadership lost ({loss}); exiting so that the restart waits as a standby"
            )
        }
    }
    Ok(())
}

/// The controllers' settings from the environment the chart sets, each refused with its
/// variable's name when it does not parse.
fn config_from_env(install: Install) -> anyhow::Result<controller::Config> {
    let defaults = controller::Config::default();
    let drain_quiet = match env_value("GARAGE_DRAIN_QUIET_SECONDS") {
        Some(v) => Duration::from_secs(v.parse().with_context(|| {
            format!("GARAGE_DRAIN_QUIET_SECONDS={v:?} is not a number of seconds")
        })?),
        None => defaults.drain_quiet,
    };
    let storage_capacity_low_percent = match env_value(capacity::LOW_PERCENT_ENV) {
        Some(v) => capacity::parse_low_percent(&v).map_err(anyhow::Error::msg)?,
        None => defaults.storage_capacity_low_percent,
    };
    let garage_network_policy = network_policy::from_env(env_value).map_err(anyhow::Error::msg)?;
    let config = controller::Config {
        drain_quiet,
        storage_capacity_low_percent,
        garage_network_policy,
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
        install,
        ..defaults
    };
    Ok(config)
}

/// What this process manages, said once at start.
fn log_config(config: &controller::Config) {
    tracing::info!(install = %config.install, "install identity");
    match &config.garage_network_policy {
        Some(callers) => tracing::info!(
            reconciler_namespace = callers.reconciler_namespace(),
            metrics_scrapers = callers.metrics_namespaces().is_some(),
            "a NetworkPolicy restricts each cluster's Garage pods"
        ),
        None => {
            tracing::info!("no NetworkPolicy for Garage pods; any the operator made is deleted")
        }
    }
    if config.namespaces.is_empty() {
        tracing::info!("managing every namespace");
    } else {
        tracing::info!(namespaces = ?config.namespaces, "managing only these namespaces");
    }
}

/// The namespace and name of the leader Lease, and the install identity they make: one
/// Lease per install, so its namespace and name identify the install on the GarageClusters
/// it manages.
fn install_lease() -> (String, String, Install) {
    let namespace =
        std::env::var("POD_NAMESPACE").unwrap_or_else(|_| leader::DEFAULT_LEASE_NAMESPACE.into());
    // The chart renders this Lease so that uninstalling removes it.
    let name =
        env_value("GARAGE_RECONCILER_LEASE").unwrap_or_else(|| leader::DEFAULT_LEASE_NAME.into());
    let install = Install::of_lease(&namespace, &name);
    (namespace, name, install)
}

/// A non-empty environment variable.
fn env_value(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// `/metrics`, `/healthz` and `/readyz`.
///
/// - `/readyz` answers 200 for a leader and for a standby alike; the body says which. A
///   standby is ready: were it not, a rolling update would wait for a new pod that cannot lead
///   before the old one has stopped.
/// - `/healthz` answers 503 when the election loop (renewals of a leader, reads of a standby)
///   has made no progress for longer than any of its iterations can take, so that the kubelet
///   restarts a process whose loop is stuck.
async fn serve(listener: TcpListener, metrics: Arc<Metrics>, status: Arc<Status>) {
    let health = status.clone();
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
        .route(
            "/healthz",
            get(move || {
                let live = health.live(tokio::time::Instant::now());
                async move {
                    if live {
                        (StatusCode::OK, "ok\n")
                    } else {
                        (
                            StatusCode::SERVICE_UNAVAILABLE,
                            "leader election loop stuck\n",
                        )
                    }
                }
            }),
        )
        .route(
            "/readyz",
            get(move || {
                let leading = status.leading(tokio::time::Instant::now());
                async move { if leading { "leading\n" } else { "standby\n" } }
            }),
        );
    if let Err(e) = axum::serve(listener, app).await {
        tracing::error!(error = %e, "metrics and health endpoint stopped");
    }
}
