//! Timestamps in the forms the API server expects, as read from one Node's
//! clock.

use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// A Node's clock: the host's, shifted by the Node's skew. Everything kubesim
/// writes on a Node's behalf reads this clock, as a kubelet's writes carry its
/// own host's time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    skew: SignedDuration,
}

impl Clock {
    /// A clock `seconds` ahead of the host's (behind when negative).
    pub(crate) fn skewed(seconds: i64) -> Self {
        Clock {
            skew: SignedDuration::from_secs(seconds),
        }
    }

    fn read(self) -> Timestamp {
        let now = Timestamp::now();
        // Saturates at jiff's range; only calendar units could fail, and a
        // SignedDuration has none.
        now.saturating_add(self.skew).unwrap_or(now)
    }

    /// Now as a `Time` (RFC 3339, whole seconds).
    pub(crate) fn now(self) -> String {
        format!("{:.0}", self.read())
    }

    /// Now as a `MicroTime` (RFC 3339, microseconds).
    pub(crate) fn now_micro(self) -> String {
        format!("{:.6}", self.read())
    }
}
