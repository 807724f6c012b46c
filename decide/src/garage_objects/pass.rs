//! The shape of a planned pass over a GarageKey or GarageBucket: the steps in order, Garage's
//! object as the plan expects it before Garage answers, the status to publish once the steps
//! are done, and the [`Outcome`]. Pure; each controller names its own steps.

use super::outcome::Outcome;

/// The status a pass publishes once its steps are done.
#[derive(Debug, Clone, PartialEq)]
pub enum Publish<S, R> {
    /// This status.
    Status(Box<S>),
    /// The status of a converged object, made from `R` and Garage's last answer.
    Ready(R),
    /// None.
    Nothing,
}

/// Everything one pass does: `Step`s, about a Garage object `Info`, publishing a status `S`
/// (or one made from `R` and Garage's last answer).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan<Step, Info, S, R> {
    /// The operations, in order.
    pub steps: Vec<Step>,
    /// Garage's object as the plan expects it before Garage answers: as observed, or as the
    /// step that creates it leaves it. Each answer of Garage replaces it; a `Ready` status is
    /// made from the last.
    pub garage: Option<Info>,
    /// The status to publish.
    pub publish: Publish<S, R>,
    /// How the pass ends.
    pub outcome: Outcome,
}

impl<Step, Info, S, R> Plan<Step, Info, S, R> {
    /// A plan about no Garage object in particular.
    pub fn ending(steps: Vec<Step>, publish: Publish<S, R>, outcome: Outcome) -> Self {
        Plan {
            steps,
            garage: None,
            publish,
            outcome,
        }
    }
}
