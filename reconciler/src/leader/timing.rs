//! The timing decisions of leader election, as pure functions of this process's monotonic
//! clock. Nothing here reads a wall clock or compares one process's time with another's: a
//! contender judges a holder by how long the Lease record has stayed unchanged *as it saw it*,
//! and a holder judges itself by when it *sent* its last successful renewal.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// How long a holder is trusted, how long it keeps leading without a successful renewal, and
/// how often the loops try.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// How long a contender waits, on its own clock, for the record to change before it takes
    /// the Lease over. Written into the Lease as `leaseDurationSeconds` (rounded up).
    pub lease_duration: Duration,
    /// How long a holder keeps leading after sending its last successful renewal. Shorter
    /// than `lease_duration`: the difference is the margin for clock rates and for stopping.
    pub renew_deadline: Duration,
    /// Pause between two attempts (renewals of a holder, reads of a contender).
    pub retry_period: Duration,
}

impl Timing {
    /// What the reconciler runs with: 15 s, 10 s, 2 s.
    pub const DEFAULT: Timing = Timing {
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
    };

    /// Refuses a timing under which a holder could outlive its lease in a contender's eyes.
    pub fn check(&self) -> Result<(), TimingError> {
        if self.retry_period.is_zero() {
            return Err(TimingError::ZeroRetry);
        }
        if self.renew_deadline <= self.retry_period {
            return Err(TimingError::DeadlineNotAfterRetry);
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(TimingError::DurationNotAfterDeadline);
        }
        Ok(())
    }

    /// `lease_duration` as written into the Lease: whole seconds, rounded up so that a
    /// contender reading it never waits less than the holder means.
    pub fn lease_duration_seconds(&self) -> i32 {
        let whole =
            self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(whole).unwrap_or(i32::MAX)
    }

    /// How long a loop may go without reporting progress before it counts as stuck. One
    /// iteration makes at most two requests, each bounded by `renew_deadline`, and sleeps
    /// `retry_period`; this allows a full iteration and one more retry besides.
    pub fn stuck_after(&self) -> Duration {
        self.renew_deadline * 2 + self.retry_period * 2
    }
}

/// A [`Timing`] that [`Timing::check`] refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TimingError {
    /// A zero retry period would spin.
    #[error("the retry period must be longer than zero")]
    ZeroRetry,
    /// A holder must get more than one attempt within its deadline.
    #[error("the renew deadline must be longer than the retry period")]
    DeadlineNotAfterRetry,
    /// A holder must stop before any contender may take over.
    #[error("the lease duration must be longer than the renew deadline")]
    DurationNotAfterDeadline,
}

/// The parts of a Lease record a contender compares between two reads. Any change (a new
/// resourceVersion, holder or renew stamp) means the holder, or someone, wrote it since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
    /// `spec.holderIdentity`; `None` or empty when nobody holds the Lease.
    pub holder: Option<String>,
    /// `spec.renewTime`, compared for equality only, never with a clock.
    pub renew_stamp: Option<Timestamp>,
    /// `spec.leaseDurationSeconds`, the holder's own declaration.
    pub lease_duration: Option<Duration>,
}

impl Record {
    /// A record nobody holds: released, or rendered empty by the chart.
    pub fn is_free(&self) -> bool {
        self.holder.as_deref().is_none_or(str::is_empty)
    }
}

/// A record and the moment (on the observer's monotonic clock) it was first seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// What was read.
    pub record: Record,
    /// When this exact record was first read. Taken after the response arrived: the record
    /// was written before that moment, never after it.
    pub since: Instant,
}

impl Observation {
    /// The observation after reading `record` at `now`: unchanged when the record is the one
    /// already seen, restarted at `now` when anything in it changed (or on the first read,
    /// however old the record's own stamps are).
    pub fn next(previous: Option<Observation>, record: Record, now: Instant) -> Observation {
        match previous {
            Some(seen) if seen.record == record => seen,
            _ => Observation { record, since: now },
        }
    }
}

/// Whether the holder of `seen` counts as gone at `now`: the record has stayed unchanged for
/// the lease duration on this process's clock. The duration is the longer of the holder's
/// declaration and our own, so neither side's setting can shorten the wait.
pub fn expired(seen: &Observation, own_duration: Duration, now: Instant) -> bool {
    let trusted = seen
        .record
        .lease_duration
        .map_or(own_duration, |theirs| theirs.max(own_duration));
    now.saturating_duration_since(seen.since) >= trusted
}

/// Whether a contender may try to take the Lease it observed: nobody holds it, or its holder
/// has expired.
pub fn may_take(seen: &Observation, own_duration: Duration, now: Instant) -> bool {
    seen.record.is_free() || expired(seen, own_duration, now)
}

/// The end of a holder's tenure, given the moment it sent the request of its last successful
/// acquisition or renewal. Measured from before the request left, so a slow answer uses up
/// the tenure instead of extending it.
pub fn tenure_end(sent: Instant, renew_deadline: Duration) -> Instant {
    // An instant this far out cannot be represented; end at once rather than never.
    sent.checked_add(renew_deadline).unwrap_or(sent)
}

/// Whether a holder whose last successful renewal was sent at `sent` still leads at `now`.
pub fn still_leading(sent: Instant, renew_deadline: Duration, now: Instant) -> bool {
    now < tenure_end(sent, renew_deadline)
}

/// Whether a loop that last reported progress at `beat` counts as stuck at `now`.
pub fn stuck(beat: Instant, limit: Duration, now: Instant) -> bool {
    now.saturating_duration_since(beat) > limit
}
