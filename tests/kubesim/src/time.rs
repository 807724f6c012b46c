//! Timestamps in the forms the API server expects.

use k8s_openapi::jiff::Timestamp;

/// Now as a `Time` (RFC 3339, whole seconds).
pub(crate) fn now() -> String {
    format!("{:.0}", Timestamp::now())
}

/// Now as a `MicroTime` (RFC 3339, microseconds).
pub(crate) fn now_micro() -> String {
    format!("{:.6}", Timestamp::now())
}
