//! The HTTPS adapter of `garage-webhook`: it decodes AdmissionReviews and ConversionReviews,
//! reads what the rules need from the API server, calls the pure rules and encodes their
//! verdicts.
//!
//! - [`tls`]: the accept loop (tokio-rustls, hyper) with a hot-swapped serving keypair, and
//!   the caps on open connections, in all and per source address;
//! - [`router`]: the axum routes, probes and metrics;
//! - [`body`]: reading a review's body, charged to the budget as it arrives, by a deadline;
//! - [`endpoint`]: the admission endpoints, their paths and what their rules read;
//! - [`dispatch`]: AdmissionReview -> rule set -> AdmissionResponse;
//! - [`context_reader`]: the live, uncached reads that fail closed;
//! - [`metrics`], [`limits`], [`budget`]: what is measured and what is bounded;
//! - [`readiness`]: when this replica should not be sent requests.
//!
//! [`Running::shutdown`] stops the server the way a terminating pod should: not ready at once,
//! still serving for a grace period while the endpoint removal propagates, then a drain.

pub mod body;
pub mod budget;
pub mod context_reader;
pub mod dispatch;
pub mod endpoint;
pub mod limits;
pub mod metrics;
pub mod readiness;
pub mod router;
pub mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use certs::{CertResolver, InjectionHealth, Mode, Mounted, SelfManaged};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use self::budget::Budget;
use self::context_reader::LiveReader;
use self::dispatch::Settings;
use self::limits::Limits;
use self::metrics::Metrics;
use self::readiness::Signals;
use self::router::AppState;
pub use self::tls::Drained;

/// Everything the server needs to start.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Where the serving keypair comes from.
    pub certificates: Mode,
    /// Rule settings.
    pub settings: Settings,
    /// Request limits.
    pub limits: Limits,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The listen address could not be bound.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The certificate configuration is unusable.
    #[error(transparent)]
    Certificates(#[from] certs::Error),
}

/// How the server stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shutdown {
    /// How long the server keeps accepting and answering after readiness turns false, so that
    /// the pod's endpoint is removed everywhere (EndpointSlices, the API server's and
    /// kube-proxy's view) before connections are refused.
    pub grace: Duration,
    /// How long open connections then get to finish the request they are serving before they
    /// are cut. The API server stops waiting after the webhook's `timeoutSeconds` anyway.
    pub drain: Duration,
}

impl Default for Shutdown {
    /// 10 s of grace and 10 s of drain: endpoint removal usually reaches the API server within
    /// a few seconds, and 10 s is the chart's webhook `timeoutSeconds`. Together well within
    /// the chart's 30 s `terminationGracePeriodSeconds`.
    fn default() -> Self {
        Shutdown {
            grace: Duration::from_secs(10),
            drain: Duration::from_secs(10),
        }
    }
}

/// A running server.
pub struct Running {
    addr: SocketAddr,
    resolver: Arc<CertResolver>,
    metrics: Arc<Metrics>,
    budget: Arc<Budget>,
    signals: Arc<Signals>,
    shutdown: Option<oneshot::Sender<Duration>>,
    server: JoinHandle<Drained>,
    certificates: JoinHandle<()>,
}

impl Running {
    /// The address actually bound (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The served keypair.
    pub fn resolver(&self) -> &Arc<CertResolver> {
        &self.resolver
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The memory budget of the reviews in flight (its counters show what was charged).
    pub fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }

    /// Shutdown and injection state readiness reads.
    pub fn signals(&self) -> &Arc<Signals> {
        &self.signals
    }

    /// Waits until the server stops on its own (it does not, short of a panic).
    pub async fn wait(&mut self) {
        let _ = (&mut self.server).await;
    }

    /// Stops the server as a terminating pod should. Readiness is false as soon as this
    /// returns; the returned future keeps answering requests for `timings.grace` (answers then
    /// close their connection), then closes the listening socket, lets open connections finish
    /// their current request for up to `timings.drain`, cuts the rest and stops certificate
    /// maintenance.
    pub fn shutdown(mut self, timings: Shutdown) -> impl Future<Output = Drained> + Send + 'static {
        self.signals.begin_draining();
        tracing::info!(
            grace_ms = timings.grace.as_millis() as u64,
            drain_ms = timings.drain.as_millis() as u64,
            "not ready; serving through the grace period"
        );
        async move {
            tokio::time::sleep(timings.grace).await;
            tracing::info!("no longer accepting; draining open connections");
            if let Some(shutdown) = self.shutdown.take() {
                let _ = shutdown.send(timings.drain);
            }
            let drained = (&mut self.server)
                .await
                .unwrap_or(Drained { open: 0, cut: 0 });
            self.certificates.abort();
            tracing::info!(open = drained.open, cut = drained.cut, "stopped");
            drained
        }
    }

    /// Stops at once: no grace period, open requests get 10 s to finish.
    pub async fn stop(self) {
        self.shutdown(Shutdown {
            grace: Duration::ZERO,
            ..Shutdown::default()
        })
        .await;
    }
}

/// Binds `config.listen`, starts certificate maintenance and serves until [`Running::stop`].
/// Requests are refused at the TLS layer until the first keypair is loaded; `/readyz` says so.
pub async fn start(config: ServeConfig, client: kube::Client) -> Result<Running, ServeError> {
    certs::install_default_provider();
    let resolver = Arc::new(CertResolver::new());
    let tls = certs::server_config(resolver.clone())?;
    let (certificates, injection) = match config.certificates {
        Mode::SelfManaged(cfg) => {
            let task = SelfManaged::new(client.clone(), cfg, resolver.clone())?;
            let injection = task.injection_health();
            (tokio::spawn(task.run()), injection)
        }
        // cert-manager's injector owns the caBundle; nothing records failures here.
        Mode::CertManager(cfg) => (
            tokio::spawn(Mounted::new(cfg, resolver.clone()).run()),
            Arc::new(InjectionHealth::new()),
        ),
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: config.listen,
        source,
    })?;
    let metrics = Arc::new(Metrics::new());
    let mut state = AppState::new(
        LiveReader::new(client).with_host_access(config.settings.host_access.clone()),
        config.settings,
        metrics.clone(),
        resolver.clone(),
        config.limits,
    );
    state.signals = Arc::new(Signals::new(injection));
    let (budget, signals) = (state.budget.clone(), state.signals.clone());
    let app = router::router(Arc::new(state));
    let (shutdown, stopped) = oneshot::channel::<Duration>();
    let limits = config.limits;
    let refusals = metrics.clone();
    let server = tokio::spawn(async move {
        tls::serve(listener, tls, app, limits, refusals, async {
            // Dropped without a value (the handle went away): drain as `stop` would.
            stopped.await.unwrap_or(Shutdown::default().drain)
        })
        .await
    });
    tracing::info!(%addr, "garage-webhook listening");
    Ok(Running {
        addr,
        resolver,
        metrics,
        budget,
        signals,
        shutdown: Some(shutdown),
        server,
        certificates,
    })
}
