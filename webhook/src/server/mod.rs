//! The HTTPS adapter of `garage-webhook`: it decodes AdmissionReviews and ConversionReviews,
//! reads what the rules need from the API server, calls the pure rules and encodes their
//! verdicts.
//!
//! - [`tls`]: the accept loop (tokio-rustls, hyper) with a hot-swapped serving keypair;
//! - [`router`]: the axum routes, probes and metrics;
//! - [`endpoint`]: the admission endpoints, their paths and what their rules read;
//! - [`dispatch`]: AdmissionReview -> rule set -> AdmissionResponse;
//! - [`context_reader`]: the live, uncached reads that fail closed;
//! - [`metrics`], [`limits`]: what is measured and what is bounded.

pub mod context_reader;
pub mod dispatch;
pub mod endpoint;
pub mod limits;
pub mod metrics;
pub mod router;
pub mod tls;

use std::net::SocketAddr;
use std::sync::Arc;

use certs::{CertResolver, Mode, Mounted, SelfManaged};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use self::context_reader::LiveReader;
use self::dispatch::Settings;
use self::limits::Limits;
use self::metrics::Metrics;
use self::router::AppState;

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

/// A running server.
pub struct Running {
    addr: SocketAddr,
    resolver: Arc<CertResolver>,
    metrics: Arc<Metrics>,
    shutdown: Option<oneshot::Sender<()>>,
    server: JoinHandle<()>,
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

    /// Waits until the server stops on its own (it does not, short of a panic).
    pub async fn wait(&mut self) {
        let _ = (&mut self.server).await;
    }

    /// Stops accepting, lets open requests finish, stops certificate maintenance.
    pub async fn stop(mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        let _ = (&mut self.server).await;
        self.certificates.abort();
    }
}

/// Binds `config.listen`, starts certificate maintenance and serves until [`Running::stop`].
/// Requests are refused at the TLS layer until the first keypair is loaded; `/readyz` says so.
pub async fn start(config: ServeConfig, client: kube::Client) -> Result<Running, ServeError> {
    certs::install_default_provider();
    let resolver = Arc::new(CertResolver::new());
    let tls = certs::server_config(resolver.clone())?;
    let certificates = match config.certificates {
        Mode::SelfManaged(cfg) => {
            let task = SelfManaged::new(client.clone(), cfg, resolver.clone())?;
            tokio::spawn(task.run())
        }
        Mode::CertManager(cfg) => tokio::spawn(Mounted::new(cfg, resolver.clone()).run()),
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
    let state = Arc::new(AppState {
        source: LiveReader::new(client),
        settings: config.settings,
        metrics: metrics.clone(),
        resolver: resolver.clone(),
        limits: config.limits,
    });
    let app = router::router(state);
    let (shutdown, stopped) = oneshot::channel();
    let limits = config.limits;
    let server = tokio::spawn(async move {
        tls::serve(listener, tls, app, limits, async {
            let _ = stopped.await;
        })
        .await;
    });
    tracing::info!(%addr, "garage-webhook listening");
    Ok(Running {
        addr,
        resolver,
        metrics,
        shutdown: Some(shutdown),
        server,
        certificates,
    })
}
