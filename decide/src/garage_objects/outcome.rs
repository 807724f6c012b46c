//! How a pass over a GarageKey, GarageBucket or GarageAdminToken ends, as its plan decides:
//! converged, waiting with the reason and message its `Ready` condition says, or finished
//! (finalized), and when each is looked at again. The plans of the three controllers return
//! it and their act requeues as [`Outcome::requeue`] says.

use std::time::Duration;

use shared_types::conditions::reason;

use super::{ReadyStatus, WAITING, with_ready};

/// The end of one pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The object is what it declares; it is looked at again after the resync period.
    Converged,
    /// It cannot be made ready now: `Ready=False` with this reason and message, and a look
    /// again after [`WAITING`].
    Waiting {
        /// The condition's reason.
        reason: &'static str,
        /// The condition's message: why, and what to do.
        message: String,
    },
    /// Nothing is left to do until the object changes (its finalizer is gone or was never
    /// there).
    Finished,
}

impl Outcome {
    /// A waiting outcome.
    pub fn waiting(reason: &'static str, message: String) -> Self {
        Outcome::Waiting { reason, message }
    }

    /// When to look again after this outcome (`None`: only when the object changes);
    /// `resync` is the controller's period for converged objects.
    pub fn requeue(&self, resync: Duration) -> Option<Duration> {
        match self {
            Outcome::Converged => Some(resync),
            Outcome::Waiting { .. } => Some(WAITING),
            Outcome::Finished => None,
        }
    }
}

/// The reason and message of an object whose GarageCluster `cluster` does not exist.
pub fn cluster_missing(cluster: &str) -> (&'static str, String) {
    (
        reason::REASON_CLUSTER_NOT_READY,
        format!("GarageCluster {cluster} does not exist; create it or fix spec.clusterRef"),
    )
}

/// A step the plan expects Garage may refuse, and how the pass then ends: the status it
/// writes and the outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused<S> {
    /// The status written when Garage refuses.
    pub status: S,
    /// The outcome the pass then ends with.
    pub outcome: Outcome,
}

/// `current` with `Ready` as given, the generation observed and `adjust` applied (its phase,
/// what else the verdict changes).
pub fn reported<S: ReadyStatus>(
    current: Option<&S>,
    generation: Option<i64>,
    ready: bool,
    why: &'static str,
    message: String,
    adjust: impl FnOnce(&mut S),
) -> S {
    let mut status = current.cloned().unwrap_or_default();
    let conditions = with_ready(
        status.conditions_mut().as_deref(),
        ready,
        why,
        message,
        generation,
    );
    *status.conditions_mut() = Some(conditions);
    *status.observed_generation_mut() = generation;
    adjust(&mut status);
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_requeues_as_its_controller_says() {
        let resync = Duration::from_secs(300);
        assert_eq!(
            Outcome::Converged.requeue(resync),
            Some(resync),
            "converged: the resync period"
        );
        assert_eq!(
            Outcome::waiting("R", "m".into()).requeue(resync),
            Some(WAITING)
        );
        assert_eq!(Outcome::Finished.requeue(resync), None);
    }
}
