//! Readiness: whether this replica should be sent admission requests now. It is not ready
//! without a serving certificate, once shutdown has begun, when its certificate is about to
//! expire, and when publishing its CA bundle has failed several passes in a row: in each case
//! the Service should route to another replica before handshakes start failing.
//!
//! The decision is the pure [`decide`]; `/readyz` gathers its inputs.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use certs::InjectionHealth;
use certs::inspect::Validity;

/// What readiness reads besides the served certificate: the shutdown sequence and how the
/// caBundle injection goes.
#[derive(Debug, Default)]
pub struct Signals {
    draining: AtomicBool,
    injection: Arc<InjectionHealth>,
}

impl Signals {
    /// Signals reading `injection` (never written in cert-manager mode).
    pub fn new(injection: Arc<InjectionHealth>) -> Self {
        Signals {
            draining: AtomicBool::new(false),
            injection,
        }
    }

    /// Shutdown has begun: readiness is false from now on.
    pub fn begin_draining(&self) {
        self.draining.store(true, Ordering::Release);
    }

    /// Whether shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// How caBundle injection goes.
    pub fn injection(&self) -> &InjectionHealth {
        &self.injection
    }
}

/// When certificate trouble makes a replica not ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// Not ready once the served certificate expires within this long...
    pub expiry_window: Duration,
    /// ...or within this fraction (1/n) of its whole validity, when that is shorter, so that a
    /// short-lived certificate is not unready most of its life.
    pub expiry_fraction: u32,
    /// Not ready after this many injection passes failed in a row.
    pub injection_failures: u32,
}

impl Default for Thresholds {
    /// Five minutes: long enough for the readiness probe (every 5 s, three failures) and the
    /// endpoint update to take the replica out before its certificate expires, short enough
    /// that a replica which simply has not renewed yet keeps serving. Three failed injection
    /// passes: the self-managed loop retries a failed pass after 5 s, so about 10 to 15 s.
    fn default() -> Self {
        Thresholds {
            expiry_window: Duration::from_secs(5 * 60),
            expiry_fraction: 10,
            injection_failures: 3,
        }
    }
}

/// Everything readiness is decided from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inputs {
    /// Shutdown has begun.
    pub draining: bool,
    /// Validity of the served certificate; `None` when none is served.
    pub certificate: Option<Validity>,
    /// The clock.
    pub now: SystemTime,
    /// Injection passes that failed in a row.
    pub injection_failing_passes: u32,
    /// The last injection error, for the message.
    pub injection_error: Option<String>,
}

/// The decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Send requests here.
    Ready,
    /// Do not, and why.
    NotReady(String),
}

/// How long before expiry a certificate of `validity` makes the replica not ready.
pub fn expiry_window(validity: Validity, thresholds: &Thresholds) -> Duration {
    let span = validity
        .not_after
        .duration_since(validity.not_before)
        .unwrap_or(Duration::ZERO);
    thresholds
        .expiry_window
        .min(span / thresholds.expiry_fraction.max(1))
}

/// Decides readiness.
pub fn decide(inputs: &Inputs, thresholds: &Thresholds) -> Readiness {
    if inputs.draining {
        return Readiness::NotReady("shutting down".to_owned());
    }
    let Some(validity) = inputs.certificate else {
        return Readiness::NotReady("no serving certificate is loaded yet".to_owned());
    };
    let left = validity.not_after.duration_since(inputs.now).ok();
    let window = expiry_window(validity, thresholds);
    match left {
        None | Some(Duration::ZERO) => {
            return Readiness::NotReady("the serving certificate has expired".to_owned());
        }
        Some(left) if left <= window => {
            return Readiness::NotReady(format!(
                "the serving certificate expires in {} s and has not been renewed",
                left.as_secs()
            ));
        }
        Some(_) => {}
    }
    if inputs.injection_failing_passes >= thresholds.injection_failures {
        return Readiness::NotReady(format!(
            "publishing the CA bundle failed {} times in a row: {}",
            inputs.injection_failing_passes,
            inputs
                .injection_error
                .as_deref()
                .unwrap_or("no error recorded")
        ));
    }
    Readiness::Ready
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);
    const DAY: Duration = Duration::from_secs(86_400);

    fn valid(start: SystemTime, life: Duration) -> Option<Validity> {
        Some(Validity {
            not_before: start,
            not_after: start + life,
        })
    }

    #[test]
    fn table() {
        let t0 = SystemTime::UNIX_EPOCH + 1000 * DAY;
        let healthy = Inputs {
            draining: false,
            certificate: valid(t0, 90 * DAY),
            now: t0 + DAY,
            injection_failing_passes: 0,
            injection_error: None,
        };
        let thresholds = Thresholds::default();
        let cases: Vec<(&str, Inputs, Option<&str>)> = vec![
            ("healthy", healthy.clone(), None),
            (
                "draining wins over everything",
                Inputs {
                    draining: true,
                    injection_failing_passes: 9,
                    ..healthy.clone()
                },
                Some("shutting down"),
            ),
            (
                "no certificate",
                Inputs {
                    certificate: None,
                    ..healthy.clone()
                },
                Some("no serving certificate"),
            ),
            (
                "six minutes left of 90 days",
                Inputs {
                    now: t0 + 90 * DAY - 6 * MIN,
                    ..healthy.clone()
                },
                None,
            ),
            (
                "five minutes left of 90 days",
                Inputs {
                    now: t0 + 90 * DAY - 5 * MIN,
                    ..healthy.clone()
                },
                Some("expires in 300 s"),
            ),
            (
                "expired",
                Inputs {
                    now: t0 + 91 * DAY,
                    ..healthy.clone()
                },
                Some("has expired"),
            ),
            (
                "a 15 s certificate with 2 s left",
                Inputs {
                    certificate: valid(t0, Duration::from_secs(15)),
                    now: t0 + Duration::from_secs(13),
                    ..healthy.clone()
                },
                None,
            ),
            (
                "a 15 s certificate with 1 s left",
                Inputs {
                    certificate: valid(t0, Duration::from_secs(15)),
                    now: t0 + Duration::from_secs(14),
                    ..healthy.clone()
                },
                Some("expires in 1 s"),
            ),
            (
                "two failed injections",
                Inputs {
                    injection_failing_passes: 2,
                    injection_error: Some("forbidden".into()),
                    ..healthy.clone()
                },
                None,
            ),
            (
                "three failed injections",
                Inputs {
                    injection_failing_passes: 3,
                    injection_error: Some("patching the caBundle: forbidden".into()),
                    ..healthy.clone()
                },
                Some("failed 3 times in a row: patching the caBundle: forbidden"),
            ),
        ];
        for (name, inputs, expected) in cases {
            match (decide(&inputs, &thresholds), expected) {
                (Readiness::Ready, None) => {}
                (Readiness::NotReady(why), Some(needle)) => {
                    assert!(why.contains(needle), "{name}: {why:?} lacks {needle:?}")
                }
                (got, _) => panic!("{name}: {got:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn the_window_is_five_minutes_or_a_tenth_of_the_validity() {
        let t0 = SystemTime::UNIX_EPOCH;
        let t = Thresholds::default();
        assert_eq!(expiry_window(valid(t0, 90 * DAY).unwrap(), &t), 5 * MIN);
        assert_eq!(expiry_window(valid(t0, 20 * MIN).unwrap(), &t), 2 * MIN);
    }

    #[test]
    fn signals_flip_once() {
        let signals = Signals::new(Arc::new(InjectionHealth::new()));
        assert!(!signals.is_draining());
        signals.begin_draining();
        assert!(signals.is_draining());
        assert_eq!(signals.injection().failing_passes(), 0);
    }
}
