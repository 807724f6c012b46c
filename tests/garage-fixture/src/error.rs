//! What can go wrong while setting up or driving the fixture.

use std::path::PathBuf;

/// A fixture failure. Tests are expected to fail on it (never skip), so every variant says what
/// to do or where to look.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    /// The pinned `garage` binary is not where the fixture looked.
    #[error(
        "the garage binary was not found at {path} (from {source_of_path}); run `cargo xtask tools` \
         to build the pinned version, or point GARAGE_BIN at a garage 2.x binary"
    )]
    BinaryMissing {
        /// Where the fixture looked.
        path: PathBuf,
        /// Which rule produced that path (`GARAGE_BIN` or the cache default).
        source_of_path: &'static str,
    },
    /// The caller asked for something the fixture does not support.
    #[error("invalid fixture request: {0}")]
    Invalid(String),
    /// A file or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What the fixture was doing.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A garage process did not become ready, or exited; the log tail helps diagnose why.
    #[error("garage node {node} ({addr}): {reason}\n--- last lines of {log} ---\n{log_tail}")]
    Node {
        /// Index of the node in the cluster.
        node: usize,
        /// Its address.
        addr: String,
        /// What went wrong.
        reason: String,
        /// Path of its log file.
        log: PathBuf,
        /// The last lines of the log file.
        log_tail: String,
    },
    /// An Admin API call made by the fixture itself failed.
    #[error("admin call {endpoint} on node {node} failed: {reason}")]
    Admin {
        /// Index of the node the call was sent to.
        node: usize,
        /// The endpoint path.
        endpoint: String,
        /// Status and body, or the transport error.
        reason: String,
    },
    /// Waiting for a cluster-wide condition ran out of time.
    #[error("timed out after {seconds}s waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long the fixture waited.
        seconds: u64,
    },
}

impl FixtureError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}
