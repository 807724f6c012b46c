//! Bounds on what one client can make the webhook do.

use std::time::Duration;

const MIB: usize = 1024 * 1024;

/// Largest request body accepted. The API server caps objects at about 1.5 MiB in etcd; a
/// review carries the object twice (object and oldObject), so 3 MiB admits every real review
/// and refuses anything larger before it is parsed.
pub const MAX_BODY_BYTES: usize = 3 * MIB;

/// The memory limit of the webhook container in the chart (`webhook.resources.limits.memory`),
/// which [`REVIEW_BUDGET_BYTES`] is derived from. A chart test keeps the two in step.
pub const CHART_MEMORY_LIMIT_BYTES: usize = 128 * MIB;

/// What the process holds besides the reviews it charges to the budget, at its measured worst:
/// 65.3 MiB peak RSS with 1,049 open connections and live-read reviews in flight
/// (`cargo xtask bench webhook`, docs/performance.md), rounded up.
pub const BASELINE_BYTES: usize = 66 * MIB;

/// Left free for what the allocator does not return at once (one glibc arena, whose mmap
/// threshold rises after large frees, keeps freed large blocks in its heap).
pub const HEADROOM_BYTES: usize = 14 * MIB;

/// Memory the reviews in flight may hold together ([`super::budget`]):
///
/// ```text
///   128 MiB  chart memory limit of the webhook container
/// -  66 MiB  baseline: binary, connections, live reads (measured peak 65.3 MiB)
/// -  14 MiB  headroom for allocator fragmentation
/// =  48 MiB  budget
/// ```
///
/// A review is charged its body, then what decoding it will take, estimated from the body's
/// structure ([`super::budget::decode_cost`]): about five times its size for a body of long
/// strings, about 35 times for one of small objects of a few fields (a 3 MiB review of 57,000
/// tolerations is charged 106 MiB and peaked at 91 MiB, body included), about 155 times for one of
/// one-member objects. With the 3 MiB body limit ([`MAX_BODY_BYTES`]) the budget holds three
/// of the largest plain reviews at once (15 MiB each) or a hundred typical ones (10-50 KiB
/// bodies, a few hundred KiB each), where the 128 reviews the concurrency limit lets in would
/// need 384 MiB for their bodies alone, and several times that decoded. A review whose charge
/// exceeds the whole budget is refused (413): even alone it could not be decoded safely within
/// the memory limit.
pub const REVIEW_BUDGET_BYTES: usize = CHART_MEMORY_LIMIT_BYTES - BASELINE_BYTES - HEADROOM_BYTES;

const _: () = assert!(REVIEW_BUDGET_BYTES >= MAX_BODY_BYTES);

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
    /// Largest read buffer of one connection, which also bounds a request's headers. Bodies are
    /// read through it in pieces; hyper's default (about 400 KiB) grows on every connection
    /// that receives a large body and is never given back, about 20 MiB more for 48
    /// connections sending 3 MiB bodies.
    pub read_buffer_bytes: usize,
    /// Memory the reviews in flight may hold together ([`super::budget`]).
    pub review_budget_bytes: usize,
    /// How long a review waits for room in the budget before it is answered 429 with a
    /// Retry-After, which the API server honours by calling again.
    pub budget_wait: Duration,
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
            read_buffer_bytes: 64 * 1024,
            review_budget_bytes: REVIEW_BUDGET_BYTES,
            budget_wait: Duration::from_secs(1),
        }
    }
}
