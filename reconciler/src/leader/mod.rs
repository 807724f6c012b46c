//! Leader election on a coordination.k8s.io Lease. Two active reconcilers could stage and
//! apply layouts concurrently, so only the holder of the Lease runs controllers, and the
//! controllers stop before any other process can win the Lease.
//!
//! The guarantee rests on two clocks that are never compared with each other:
//!
//! - A **holder** leads until `renew_deadline` after it *sent* the request of its last
//!   successful renewal ([`timing::tenure_end`]). Every renewal is bounded by that end, and
//!   the end is checked before the work is polled, so the work never runs past it.
//! - A **contender** takes the Lease over only when the record (resourceVersion, holder,
//!   renew stamp) has not changed for `lease_duration` on *its own* monotonic clock, counted
//!   from a moment after it read that record ([`timing::expired`]); or at once when nobody
//!   holds it. Its write is conditional on the resourceVersion it read.
//!
//! A record a contender read was written after its holder sent the request, so the holder's
//! tenure ends at least `lease_duration - renew_deadline` before any takeover of that record
//! can be written. A process restarted under the same name does not trust a Lease naming it:
//! it cannot tell its previous run from a namesake, so it waits like any contender.

mod record;
mod status;
#[cfg(test)]
mod tests;
pub mod timing;

use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube::{Api, Client};
use tokio::sync::oneshot;
use tokio::time::Instant;

use record::{Failure, Renewal};
pub use status::{Status, Tenure};
pub use timing::{Observation, Timing, TimingError};

// The default Lease is also the default install identity, which the ownership decision
// needs without this module's I/O.
pub use decide::ownership::{DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE};

/// Which Lease to hold and how. Its namespace and name also identify the install (see
/// [`decide::ownership::Install`]): every reconciler process of one install
/// contends for this one Lease, and no two installs share it.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Lease name.
    pub name: String,
    /// This process (pod name).
    pub identity: String,
    /// Durations of the election.
    pub timing: Timing,
}

/// How [`Elector::lead`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Asked to stop before it ever led.
    NeverLed,
    /// Led, stopped its work on request, and handed the Lease back (`released`) or left it
    /// to expire.
    SteppedDown {
        /// The Lease was cleared, so a contender takes over at once.
        released: bool,
    },
    /// The work ended by itself while leading; the Lease was handed back as on a stop.
    WorkEnded {
        /// The Lease was cleared, so a contender takes over at once.
        released: bool,
    },
    /// Leadership was lost and the work dropped at once.
    Lost(Loss),
}

/// Why leadership was lost.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Loss {
    /// The tenure ended before a renewal succeeded (the API server did not answer in time,
    /// refused, or this process was not scheduled).
    #[error("the lease was not renewed before its deadline")]
    Expired,
    /// A renewal found the Lease naming someone else, nobody, or gone.
    #[error("the lease is now held by {}", .0.as_deref().unwrap_or("nobody (cleared or deleted)"))]
    Taken(Option<String>),
}

/// Resolves when the leader is asked to stop gracefully (handed to the work).
#[derive(Debug)]
pub struct Stop(oneshot::Receiver<()>);

impl Future for Stop {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        // A dropped sender (the election ended) also means stop.
        Pin::new(&mut self.0).poll(cx).map(drop)
    }
}

/// One contender for the Lease.
#[derive(Debug)]
pub struct Elector {
    api: Api<Lease>,
    cfg: LeaseConfig,
    status: Arc<Status>,
    drain_limit: Duration,
}

impl Elector {
    /// How long a graceful stop may take before the work is dropped: within the Deployment's
    /// 30 s termination grace period with the release after it.
    pub const DEFAULT_DRAIN_LIMIT: Duration = Duration::from_secs(15);

    /// A contender on `cfg`'s Lease. Refuses a timing that could let two processes lead.
    pub fn new(client: Client, cfg: LeaseConfig) -> Result<Self, TimingError> {
        cfg.timing.check()?;
        Ok(Elector {
            api: Api::namespaced(client, &cfg.namespace),
            status: Arc::new(Status::new(&cfg.timing, Instant::now())),
            cfg,
            drain_limit: Self::DEFAULT_DRAIN_LIMIT,
        })
    }

    /// Sets how long a graceful stop may take.
    #[must_use]
    pub fn with_drain_limit(mut self, limit: Duration) -> Self {
        self.drain_limit = limit;
        self
    }

    /// What the probes read.
    pub fn status(&self) -> Arc<Status> {
        self.status.clone()
    }

    /// Waits as a standby until this process holds the Lease, then runs `work` while it
    /// leads. Returns when `shutdown` resolves (the work is asked to stop through [`Stop`],
    /// and the Lease handed back once it has), when the work ends by itself, or at once when
    /// leadership is lost. The caller exits in every case but a requested stop: a process
    /// whose work ended must not keep the Lease, and one that lost it starts again as a
    /// standby.
    pub async fn lead<W, F>(&self, shutdown: impl Future<Output = ()>, work: W) -> Outcome
    where
        W: FnOnce(Stop) -> F,
        F: Future<Output = ()>,
    {
        let mut shutdown = std::pin::pin!(shutdown);
        tokio::select! {
            () = self.acquire() => {}
            () = &mut shutdown => return Outcome::NeverLed,
        }
        tracing::info!(identity = %self.cfg.identity, "leading");
        let (stop_tx, stop_rx) = oneshot::channel();
        let mut stop_tx = Some(stop_tx);
        let mut work = Box::pin(work(Stop(stop_rx)));
        let mut renewals = std::pin::pin!(self.keep());
        let mut tenure_over = std::pin::pin!(tenure_over(&self.status));
        let mut drain_until = None;
        let ended = loop {
            tokio::select! {
                biased;
                // The clock comes first: a task polled late (a paused process, a starved
                // thread) sees the end of its tenure before its work runs again.
                () = &mut tenure_over => break Err(Loss::Expired),
                loss = &mut renewals => break Err(loss),
                () = &mut work => break Ok(stop_tx.is_none()),
                () = &mut shutdown, if stop_tx.is_some() => {
                    tracing::info!("stopping: the controllers finish their passes, then the lease is handed back");
                    if let Some(tx) = stop_tx.take() {
                        // The work may have ended already; its end is seen next.
                        let _ = tx.send(());
                    }
                    drain_until = Some(Instant::now() + self.drain_limit);
                }
                () = tokio::time::sleep_until(drain_until.unwrap_or_else(Instant::now)),
                    if drain_until.is_some() =>
                {
                    tracing::warn!("the controllers did not stop in time; dropping them");
                    break Ok(true);
                }
            }
        };
        // The work is dropped, not drained, whatever the reason. For the controllers this
        // drops kube-runtime's applier, whose handles abort every in-flight reconcile task at
        // its next await: no new pass starts and no pass makes a further request. A request
        // already handed to its connection (a Garage layout apply, a status patch) cannot be
        // recalled by anything; the next leader observes the state it left before deciding.
        // Draining instead would let passes keep writing after the tenure ended, which is
        // exactly what a lost lease must prevent. (On a requested stop the passes were
        // already given `drain_limit` to finish while the lease was still renewed.)
        drop(work);
        self.status.stepped_down();
        match ended {
            Err(loss) => {
                tracing::error!(identity = %self.cfg.identity, reason = %loss, "leadership lost; work stopped");
                Outcome::Lost(loss)
            }
            Ok(requested) => {
                // The work has stopped: no write of ours can follow the hand-over.
                let until = Instant::now() + self.cfg.timing.renew_deadline;
                let released = match record::release(&self.api, &self.cfg, until).await {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!(error = %e, "could not hand the lease back; a successor waits for it to expire");
                        false
                    }
                };
                if requested {
                    Outcome::SteppedDown { released }
                } else {
                    Outcome::WorkEnded { released }
                }
            }
        }
    }

    /// Returns once this process holds the Lease.
    async fn acquire(&self) {
        let mut seen = None;
        loop {
            self.status.beat(Instant::now());
            if self.try_acquire(&mut seen).await {
                return;
            }
            tokio::time::sleep(self.cfg.timing.retry_period).await;
        }
    }

    /// One read and, when the Lease is free, absent or expired by observation, one write.
    async fn try_acquire(&self, seen: &mut Option<Observation>) -> bool {
        let timing = &self.cfg.timing;
        let until = Instant::now() + timing.renew_deadline;
        let lease = match record::read(&self.api, &self.cfg, until).await {
            Ok(lease) => lease,
            Err(e) => {
                tracing::warn!(error = %e, "reading the leader lease failed");
                return false;
            }
        };
        let (sent, written) = match lease {
            None => {
                let sent = Instant::now();
                let until = timing::tenure_end(sent, timing.renew_deadline);
                (sent, record::create(&self.api, &self.cfg, until).await)
            }
            Some(lease) => {
                // Taken after the answer arrived: the record existed before this moment.
                let read_at = Instant::now();
                let observed = Observation::next(seen.take(), record::record_of(&lease), read_at);
                let may = timing::may_take(&observed, timing.lease_duration, read_at);
                *seen = Some(observed);
                if !may {
                    return false;
                }
                let sent = Instant::now();
                let until = timing::tenure_end(sent, timing.renew_deadline);
                (
                    sent,
                    record::claim(&self.api, &self.cfg, lease, until).await,
                )
            }
        };
        match written {
            Ok(()) => {
                self.status.acquired(sent);
                true
            }
            Err(Failure::Conflict) => false,
            Err(e) => {
                // A write without an answer may have landed; the next read sees a changed
                // record and waits a full lease duration for it, as for anyone's.
                tracing::warn!(error = %e, "taking the leader lease failed");
                false
            }
        }
    }

    /// Renews the Lease every retry period until a renewal finds it taken or cannot finish
    /// within the tenure; returns why.
    async fn keep(&self) -> Loss {
        let timing = &self.cfg.timing;
        loop {
            self.status.beat(Instant::now());
            tokio::time::sleep(timing.retry_period).await;
            let sent = Instant::now();
            let Some(end) = self.status.tenure_end().filter(|end| sent < *end) else {
                return Loss::Expired;
            };
            match record::renew(&self.api, &self.cfg, end).await {
                Ok(Renewal::Renewed) => self.status.renewed(sent),
                Ok(Renewal::NotOurs(holder)) => return Loss::Taken(holder),
                Err(Failure::Timeout) => return Loss::Expired,
                Err(e) => tracing::warn!(error = %e, "renewing the leader lease failed; retrying"),
            }
        }
    }
}

/// Resolves once the tenure recorded in `status` has ended (or there is none). Reads the
/// clock on every poll before anything else, so it never reports a tenure as running late.
fn tenure_over(status: &Status) -> impl Future<Output = ()> + '_ {
    let mut timer = Box::pin(tokio::time::sleep_until(Instant::now()));
    std::future::poll_fn(move |cx| {
        let Some(end) = status.tenure_end() else {
            return Poll::Ready(());
        };
        if !status.leading(Instant::now()) {
            return Poll::Ready(());
        }
        if timer.deadline() != end {
            timer.as_mut().reset(end);
        }
        timer.as_mut().poll(cx)
    })
}
