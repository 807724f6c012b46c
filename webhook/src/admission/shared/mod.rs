//! Shared helper validators (the `SH-*` rules) used by several
//! resource rule sets.
//!
//! A helper never decides which rule id a finding is reported under: it
//! returns [`Problem`]s (field path and message) and the resource rule that
//! applies it (for example `GC-C1` applying SH-15 to `spec.publicEndpoint`)
//! records them with its own id, so a denial names the rule a user looks up.

pub mod drain_token;
pub mod durations;
pub mod endpoints;
pub mod env;
pub mod labels;
pub mod names;
pub mod node_id;
pub mod paths;
pub mod quantity;
pub mod readiness;
pub mod remote;
pub mod replication;
pub mod secret_data;
pub mod selector;
pub mod services;
pub mod volume;

use super::{Verdict, Violation};

/// One finding of a helper validator: the offending field and what to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Field path in the submitted object.
    pub field: String,
    /// What is wrong and what to do instead.
    pub message: String,
}

impl Problem {
    /// A finding on `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The finding as a broken `rule`, for rule sets that stop at the first
    /// violation.
    pub fn violation(self, rule: &'static str) -> Violation {
        Violation {
            rule,
            field: self.field,
            message: self.message,
        }
    }
}

/// Records every problem in `problems` under `rule`.
pub fn deny_all(verdict: &mut Verdict, rule: &'static str, problems: Vec<Problem>) {
    for p in problems {
        verdict.deny(rule, p.field, p.message);
    }
}

/// Records the first problem (if any) under `rule`; for rules whose
/// semantics are "first violation wins".
pub fn deny_first(verdict: &mut Verdict, rule: &'static str, problem: Option<Problem>) {
    if let Some(p) = problem {
        verdict.deny(rule, p.field, p.message);
    }
}
