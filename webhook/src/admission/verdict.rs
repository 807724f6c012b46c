//! The outcome of an admission review.

use std::fmt;

/// One broken rule: which rule, on which field, and what to do instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// Stable rule identifier, e.g. `GC-C21` (listed in docs/admission-rules.md).
    pub rule: &'static str,
    /// Field path in the submitted object, e.g. `spec.storage.nodeLocalPools[0].selector`.
    pub field: String,
    /// What is wrong and what to do instead, in one or two sentences.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} [{}]", self.field, self.message, self.rule)
    }
}

/// Violations and warnings collected by a rule set. No violation means the
/// request is allowed; warnings are returned either way.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Broken rules, in the order they were found.
    pub violations: Vec<Violation>,
    /// Warnings shown to the user (kubectl prints them) without denying.
    pub warnings: Vec<String>,
}

impl Verdict {
    /// An empty verdict: allowed, no warnings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a broken rule.
    pub fn deny(
        &mut self,
        rule: &'static str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) {
        self.violations.push(Violation {
            rule,
            field: field.into(),
            message: message.into(),
        });
    }

    /// Records a warning.
    pub fn warn(&mut self, message: impl Into<String>) {
        self.warnings.push(message.into());
    }

    /// Adds another verdict's findings to this one.
    pub fn merge(&mut self, other: Verdict) {
        self.violations.extend(other.violations);
        self.warnings.extend(other.warnings);
    }

    /// True when no rule was broken.
    pub fn allowed(&self) -> bool {
        self.violations.is_empty()
    }

    /// True when `rule` was broken (for tests and metrics).
    pub fn broke(&self, rule: &str) -> bool {
        self.violations.iter().any(|v| v.rule == rule)
    }

    /// The denial message: every violation, separated by `; `.
    pub fn message(&self) -> String {
        self.violations
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_verdict_allows() {
        assert!(Verdict::new().allowed());
    }

    #[test]
    fn the_message_names_field_message_and_rule() {
        let mut verdict = Verdict::new();
        verdict.deny("GC-C14", "spec", "set storage, gateway or connectTo");
        verdict.deny("GC-C15", "spec.storage.replicas", "must be non-negative");
        assert!(!verdict.allowed());
        assert!(verdict.broke("GC-C15"));
        assert_eq!(
            verdict.message(),
            "spec: set storage, gateway or connectTo [GC-C14]; spec.storage.replicas: must be non-negative [GC-C15]"
        );
    }
}
