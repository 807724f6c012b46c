//! A typed client of Garage's Admin API v2 (Garage 2.0.0 and later; tested against 2.5.0).
//!
//! One [`AdminClient`] talks to one endpoint. Every call has a timeout; read-only calls are
//! retried with backoff on 503, timeouts and connection errors; writes never are, because a
//! write that timed out may have been applied. Errors are typed ([`GarageError`]) so that
//! callers can tell "absent" (only a Garage 404) from "unknown" (everything else).
//! Node-local calls return [`NodeResults`], which keeps per-node failures next to the
//! successes.
//!
//! The DTOs are hand-written (Garage's own crates are AGPL) and a contract test checks every
//! field against the OpenAPI document of the pinned binary.

// The request and response types live in `garage-api-types`, which has no I/O, so that code
// deciding from Garage's answers need not depend on this client; every one is re-exported
// here, so `garage_admin::X` names the same type.
pub use garage_api_types::*;

mod blocks;
mod buckets;
mod cluster;
mod error;
mod keys;
mod layout;
mod nodes;
mod repair;
mod tokens;
mod transport;
mod workers;

pub use error::GarageError;
pub use nodes::NodeResults;
pub use transport::{AdminClient, ClientConfig, decode as decode_response};
