//! How caBundle injection has been going, for whoever reports the webhook's health (metrics,
//! readiness). The self-managed loop records every pass; cert-manager mode never writes it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::Error;

/// Counts of injection passes that failed. Shared between the certificate loop and readers.
#[derive(Debug, Default)]
pub struct InjectionHealth {
    failing_passes: AtomicU32,
    failures: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl InjectionHealth {
    /// A record with no failure.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one pass: a success clears the run of failures, a failure extends it.
    pub fn record<T>(&self, outcome: &Result<T, Error>) {
        let mut last = match self.last_error.lock() {
            Ok(guard) => guard,
            // Only this method writes, and it cannot leave the value half-written.
            Err(poisoned) => poisoned.into_inner(),
        };
        match outcome {
            Ok(_) => {
                self.failing_passes.store(0, Ordering::Release);
                *last = None;
            }
            Err(e) => {
                self.failing_passes.fetch_add(1, Ordering::AcqRel);
                self.failures.fetch_add(1, Ordering::AcqRel);
                // Error messages name objects and API errors, never key material.
                *last = Some(e.to_string());
            }
        }
    }

    /// Passes that failed in a row, up to the last one (0 when it succeeded).
    pub fn failing_passes(&self) -> u32 {
        self.failing_passes.load(Ordering::Acquire)
    }

    /// Passes that failed since start.
    pub fn failures_total(&self) -> u64 {
        self.failures.load(Ordering::Acquire)
    }

    /// The error of the last pass, when it failed.
    pub fn last_error(&self) -> Option<String> {
        match self.last_error.lock() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_success_ends_the_run_of_failures_but_not_the_total() {
        let health = InjectionHealth::new();
        let failed: Result<(), Error> = Err(Error::Config("patch refused".into()));
        health.record(&failed);
        health.record(&failed);
        assert_eq!(health.failing_passes(), 2);
        assert!(health.last_error().unwrap().contains("patch refused"));
        health.record(&Ok::<usize, Error>(1));
        assert_eq!(health.failing_passes(), 0);
        assert_eq!(health.failures_total(), 2);
        assert_eq!(health.last_error(), None);
    }
}
