//! The errors kubesim reports to its caller.

use std::path::PathBuf;

/// Why kubesim could not start or carry out a request.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused or failed a request.
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// Loopback addresses could not be managed.
    #[error(
        "could not {action} address {address} on `lo`: {detail}; kubesim gives every Node and \
         Pod its own address from 198.18.0.0/15 and needs root or CAP_NET_ADMIN plus the `ip` \
         command (iproute2) for that"
    )]
    Address {
        /// `add` or `remove`.
        action: &'static str,
        /// The address.
        address: String,
        /// What `ip` said.
        detail: String,
    },
    /// No free /24 was found in 198.18.0.0/15.
    #[error("no free /24 left in 198.18.0.0/15 on `lo` (other kubesim instances hold them all)")]
    NoFreeSubnet,
    /// The /24 of this instance has no address left.
    #[error("the address range {0}.0/24 of this kubesim instance is exhausted")]
    AddressesExhausted(String),
    /// A file or directory operation failed.
    #[error("{what} ({}): {source}", path.display())]
    Io {
        /// What was being done.
        what: String,
        /// The path involved.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The node is not one of this instance's nodes.
    #[error("node {0} is not managed by this kubesim")]
    UnknownNode(String),
    /// The pod or container is not running here.
    #[error("{0} is not running on a node of this kubesim")]
    UnknownContainer(String),
    /// A signal could not be delivered.
    #[error("signal {signal} to process group {pgid}: {source}")]
    Signal {
        /// Signal name.
        signal: String,
        /// Process group.
        pgid: i32,
        /// Underlying error.
        source: nix::Error,
    },
    /// A host path given to a fault injection is outside the node's root.
    #[error("host path {0} must be absolute and must not contain `..`")]
    BadHostPath(String),
}

impl Error {
    pub(crate) fn io(
        what: impl Into<String>,
        path: impl Into<PathBuf>,
        source: std::io::Error,
    ) -> Self {
        Error::Io {
            what: what.into(),
            path: path.into(),
            source,
        }
    }
}
