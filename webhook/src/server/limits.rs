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
/// need 384 MiB for their bodies alone, and several times that decoded. Bodies are charged as
/// their bytes arrive, not by the length they declare, so a caller that declares large bodies
/// and sends them slowly holds only what it sent, and only until [`Limits::body_deadline`]. A
/// review whose charge exceeds the whole budget is refused (413): even alone it could not be
/// decoded safely within the memory limit.
pub const REVIEW_BUDGET_BYTES: usize = CHART_MEMORY_LIMIT_BYTES - BASELINE_BYTES - HEADROOM_BYTES;

const _: () = assert!(REVIEW_BUDGET_BYTES >= MAX_BODY_BYTES);

/// Connections one source address may hold open at once. The API server opens a connection
/// per concurrent call (HTTP/1.1) and keeps some open between calls, and the API servers of a
/// control plane may reach the webhook from one (NAT or tunnel) address; 64 leaves them room
/// for 64 calls at once to one replica, far more than writes of the operator's objects need,
/// while one client can take at most 64 of the 1,024 connections the server accepts in all.
pub const MAX_CONNECTIONS_PER_SOURCE: usize = 64;

/// The slowest a request body may arrive, in bytes per second, after
/// [`BODY_TIMEOUT_BASE`]. The API server writes a review in one piece; at this rate even the
/// largest (3 MiB) is given 5 s, half of the webhook's default 10 s timeout, which leaves a
/// caller holding the budget with a stalled body room for a retry within that timeout.
pub const MIN_BODY_BYTES_PER_SECOND: usize = MIB;

/// The time every body gets besides the time its length takes at the minimum rate: round
/// trips and a few TCP retransmissions of a review sent over a lossy link (Linux waits at
/// least 200 ms before each).
pub const BODY_TIMEOUT_BASE: Duration = Duration::from_secs(2);

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
    /// Time every request body gets to arrive besides what its length takes at
    /// `min_body_bytes_per_second` ([`Limits::body_deadline`]).
    pub body_timeout_base: Duration,
    /// The slowest a request body may arrive, in bytes per second, after
    /// `body_timeout_base`; a body that has not arrived by then is answered 408 and its
    /// connection closed, giving back what it was charged.
    pub min_body_bytes_per_second: usize,
    /// Reviews processed at once, over every review route together (one bound, not one per
    /// route). A review takes its slot once its body has arrived, so bodies still arriving
    /// hold none; further reviews wait for a slot.
    pub max_in_flight: usize,
    /// Open connections; further connections are closed at once.
    pub max_connections: usize,
    /// Open connections of one source address; its further connections are closed at once,
    /// so that one client cannot take every connection.
    pub max_connections_per_source: usize,
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
            body_timeout_base: BODY_TIMEOUT_BASE,
            min_body_bytes_per_second: MIN_BODY_BYTES_PER_SECOND,
            max_in_flight: 128,
            max_connections: 1024,
            max_connections_per_source: MAX_CONNECTIONS_PER_SOURCE,
            read_buffer_bytes: 64 * 1024,
            review_budget_bytes: REVIEW_BUDGET_BYTES,
            budget_wait: Duration::from_secs(1),
        }
    }
}

impl Limits {
    /// How long a body of `expected` bytes (its declared length, or `None` when it declares
    /// none) may take to arrive once its request's headers have: `body_timeout_base` plus its
    /// length (at most the size limit) at `min_body_bytes_per_second`, never more than the
    /// request timeout. A body's charge on the memory budget is therefore held at most this
    /// long before the body is read or the charge given back: just over 2 s for a typical
    /// review, 5 s for the largest.
    pub fn body_deadline(&self, expected: Option<usize>) -> Duration {
        let bytes = expected
            .unwrap_or(self.max_body_bytes)
            .min(self.max_body_bytes);
        let rate = self.min_body_bytes_per_second.max(1);
        let transfer = Duration::from_secs_f64(bytes as f64 / rate as f64);
        self.body_timeout_base
            .saturating_add(transfer)
            .min(self.request_timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_gets_the_base_plus_its_length_at_the_minimum_rate() {
        let limits = Limits::default();
        let slow = Limits {
            min_body_bytes_per_second: 1024,
            ..Limits::default()
        };
        let ms = Duration::from_millis;
        for (case, limits, expected, deadline) in [
            ("empty", limits, Some(0), ms(2000)),
            ("typical review", limits, Some(MIB / 32), ms(2031)),
            ("1 MiB", limits, Some(MIB), ms(3000)),
            ("largest", limits, Some(MAX_BODY_BYTES), ms(5000)),
            ("declared past the limit", limits, Some(100 * MIB), ms(5000)),
            ("no length declared", limits, None, ms(5000)),
            ("capped by the request timeout", slow, Some(MIB), ms(30_000)),
        ] {
            let got = limits.body_deadline(expected);
            assert!(
                got.abs_diff(deadline) < ms(1),
                "{case}: {got:?}, expected {deadline:?}"
            );
        }
    }

    #[test]
    fn the_default_deadline_is_well_within_the_webhook_timeout() {
        // A caller holding a charge until the deadline must leave a retry room within the
        // API server's default 10 s.
        let limits = Limits::default();
        assert!(limits.body_deadline(None) <= Duration::from_secs(5));
        assert!(limits.body_deadline(None) < limits.request_timeout / 2);
        assert!(limits.max_connections_per_source < limits.max_connections);
    }
}
