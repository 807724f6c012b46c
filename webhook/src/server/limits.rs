//! Bounds on what one client can make the webhook do.

use std::time::Duration;

/// Largest request body accepted. The API server caps objects at about 1.5 MiB in etcd; a
/// review carries the object twice (object and oldObject), so 3 MiB admits every real review
/// and refuses anything larger before it is parsed.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// Limits of the HTTPS server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body.
    pub max_body_bytes: usize,
    /// Time allowed for a TLS handshake.
    pub handshake_timeout: Duration,
    /// Time allowed to receive a request's headers (slowloris guard).
    pub header_read_timeout: Duration,
    /// Time allowed for a whole request, body read and rules included. The API server stops
    /// waiting after the webhook's timeoutSeconds (10 s by default, 30 s at most).
    pub request_timeout: Duration,
    /// Reviews processed at once; further requests wait for a slot.
    pub max_in_flight: usize,
    /// Open connections; further connections are closed at once.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: MAX_BODY_BYTES,
            handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            max_in_flight: 128,
            max_connections: 1024,
        }
    }
}
