//! Errors of certificate generation, loading and injection.

use std::path::PathBuf;

/// Everything that can go wrong while making, storing, loading or publishing webhook
/// certificates. Messages never contain key material.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// rcgen refused to build or sign a certificate.
    #[error("generating the {what}: {source}")]
    Generate {
        /// Which certificate or key was being made.
        what: &'static str,
        /// The rcgen error.
        #[source]
        source: rcgen::Error,
    },
    /// A PEM document did not hold what it should.
    #[error("parsing the {what}: {reason}")]
    Parse {
        /// Which document (for example "serving certificate").
        what: &'static str,
        /// Why it was refused.
        reason: String,
    },
    /// rustls refused the keypair (unsupported key type, key not matching the certificate).
    #[error("loading the serving keypair into rustls: {0}")]
    Rustls(#[from] rustls::Error),
    /// A request to the Kubernetes API server failed.
    #[error("{action}: {source}")]
    Kube {
        /// What was being done, naming the object.
        action: String,
        /// The client error.
        #[source]
        source: kube::Error,
    },
    /// Replicas kept overwriting each other's Secret; the caller retries later.
    #[error(
        "the certificate Secret {namespace}/{name} changed under us {attempts} times in a row; retrying later"
    )]
    Contended {
        /// Secret namespace.
        namespace: String,
        /// Secret name.
        name: String,
        /// Attempts made.
        attempts: u32,
    },
    /// A mounted certificate file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The configuration is unusable.
    #[error("invalid certificate configuration: {0}")]
    Config(String),
}

impl Error {
    pub(crate) fn parse(what: &'static str, reason: impl std::fmt::Display) -> Self {
        Error::Parse {
            what,
            reason: reason.to_string(),
        }
    }

    pub(crate) fn kube(action: impl Into<String>, source: kube::Error) -> Self {
        Error::Kube {
            action: action.into(),
            source,
        }
    }

    pub(crate) fn generate(what: &'static str, source: rcgen::Error) -> Self {
        Error::Generate { what, source }
    }
}
