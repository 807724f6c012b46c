//! What the election loop reports to the probes (and to tests): whether this process leads
//! now, and whether its loop still makes progress.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::timing;

/// Shared between the election loop, which writes it, and the health endpoint.
#[derive(Debug)]
pub struct Status {
    renew_deadline: Duration,
    stuck_after: Duration,
    inner: Mutex<Inner>,
}

#[derive(Debug, Clone, Copy)]
struct Inner {
    beat: Instant,
    tenure: Option<Tenure>,
    /// The current tenure, or the one before it once it is over.
    last: Option<Tenure>,
}

/// The current term of leadership, on this process's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tenure {
    /// When the request that won the Lease was sent.
    pub since: Instant,
    /// When the request of the last successful renewal (or the acquisition) was sent.
    pub renewed: Instant,
}

impl Status {
    /// A standby that has just started.
    pub fn new(timing: &timing::Timing, now: Instant) -> Self {
        Status {
            renew_deadline: timing.renew_deadline,
            stuck_after: timing.stuck_after(),
            inner: Mutex::new(Inner {
                beat: now,
                tenure: None,
                last: None,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // The fields are plain values written whole; a panic elsewhere cannot leave them torn.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The loop made progress.
    pub(super) fn beat(&self, now: Instant) {
        self.lock().beat = now;
    }

    /// The Lease was won by a request sent at `sent`.
    pub(super) fn acquired(&self, sent: Instant) {
        let mut inner = self.lock();
        inner.tenure = Some(Tenure {
            since: sent,
            renewed: sent,
        });
        inner.last = inner.tenure;
    }

    /// A renewal sent at `sent` succeeded.
    pub(super) fn renewed(&self, sent: Instant) {
        let mut inner = self.lock();
        if let Some(tenure) = inner.tenure.as_mut() {
            tenure.renewed = tenure.renewed.max(sent);
        }
        inner.last = inner.tenure.or(inner.last);
    }

    /// Leadership is over (lost, or handed back).
    pub(super) fn stepped_down(&self) {
        self.lock().tenure = None;
    }

    /// The current tenure, if any, ended or not.
    pub fn tenure(&self) -> Option<Tenure> {
        self.lock().tenure
    }

    /// The current tenure, or the most recent one once it is over (for logs and tests).
    pub fn last_tenure(&self) -> Option<Tenure> {
        self.lock().last
    }

    /// When the current tenure ends; `None` when there is none.
    pub fn tenure_end(&self) -> Option<Instant> {
        self.tenure()
            .map(|t| timing::tenure_end(t.renewed, self.renew_deadline))
    }

    /// Whether this process leads at `now`: it holds a tenure that has not ended. A holder
    /// whose loop is stuck stops counting as leader when its tenure ends, renewed or not.
    pub fn leading(&self, now: Instant) -> bool {
        self.tenure()
            .is_some_and(|t| timing::still_leading(t.renewed, self.renew_deadline, now))
    }

    /// Whether the election loop has reported progress recently enough.
    pub fn live(&self, now: Instant) -> bool {
        !timing::stuck(self.lock().beat, self.stuck_after, now)
    }
}
