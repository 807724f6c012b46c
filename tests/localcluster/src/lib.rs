//! A real Kubernetes control plane on loopback: etcd, kube-apiserver,
//! kube-controller-manager and kube-scheduler, built from their pinned Go
//! modules by `cargo xtask tools` and started on free ports.
//!
//! The cluster has no kubelet: `kubesim` registers Nodes and runs their Pods
//! as local processes. Everything else (admission, CEL, webhooks,
//! conversion, controllers, garbage collection, scheduling, PV binding) is
//! the real implementation.
//!
//! Every process is stopped when the [`LocalCluster`] is dropped; logs stay
//! under the state directory (by default `target/localcluster/<name>`).

mod cluster;
mod kubeconfig;
mod pki;
mod process;
pub mod tools;
mod wait;

pub use wait::wait_until;

use std::path::PathBuf;

pub use cluster::{LocalCluster, Options};
pub use pki::KUBERNETES_SERVICE_IP;

/// Waits for Ctrl-C (SIGINT), SIGTERM or SIGHUP, so that a command-line tool
/// holding a cluster stops it however it is asked to stop.
pub async fn shutdown_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result,
        _ = terminate.recv() => Ok(()),
        _ = hangup.recv() => Ok(()),
    }
}

/// Why the local cluster could not be started or used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A required tool has not been built.
    #[error(transparent)]
    MissingTool(#[from] tools::MissingTool),
    /// A process could not be started.
    #[error("could not start {name} ({}): {source}", program.display())]
    Spawn {
        /// Component name.
        name: String,
        /// Program path.
        program: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A component exited while the cluster was starting or running.
    #[error("{name} exited ({status}); last lines of {}:\n{tail}", log.display())]
    Exited {
        /// Component name.
        name: String,
        /// Exit status.
        status: String,
        /// Its log file.
        log: PathBuf,
        /// The end of the log.
        tail: String,
    },
    /// A component did not become ready in time.
    #[error("{what} was not ready after {seconds}s; logs are in {}", logs.display())]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long.
        seconds: u64,
        /// Log directory.
        logs: PathBuf,
    },
    /// Certificate generation failed.
    #[error("certificate generation failed: {0}")]
    Certificate(#[from] rcgen::Error),
    /// File or process I/O failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// JSON encoding failed.
    #[error("JSON error: {0}")]
    Json(#[from] serde_json::Error),
    /// The Kubernetes client could not be built.
    #[error("Kubernetes client: {0}")]
    Kube(String),
}
