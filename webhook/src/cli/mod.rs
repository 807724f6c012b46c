//! The `garage-webhook review` and `garage-webhook convert` commands: the same rules the server
//! runs, applied to files, so that a GitOps repository can check its manifests in CI without a
//! cluster.

pub mod convert;
pub mod manifest;
pub mod request;
pub mod review;
pub mod state;

use std::path::PathBuf;

/// Exit code: the request is allowed (or the conversion succeeded).
pub const EXIT_ALLOWED: i32 = 0;
/// Exit code: a rule denied the request.
pub const EXIT_DENIED: i32 = 1;
/// Exit code: the input could not be used (unreadable file, not a manifest, no rules for it).
pub const EXIT_UNUSABLE: i32 = 2;

/// Why a command could not use its input.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not what it should be.
    #[error("{path}: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// The arguments or documents do not make a reviewable request.
    #[error("{0}")]
    Input(String),
}
