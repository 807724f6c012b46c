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
    /// Warnings shown to the user (kubectl prints them) without denying. Private so that
    /// [`Verdict::warn`] is the only way in, and every warning ends with its rule ID.
    warnings: Vec<String>,
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

    /// Records a warning under rule `id` (listed in docs/admission-rules.md, e.g. `GC-W8`).
    /// The stored text is `message` followed by ` [id]`, as a denial ends with its rule, so a
    /// user can look the warning up; a message that already ends with `[id]` is kept as is.
    pub fn warn(&mut self, id: &'static str, message: impl Into<String>) {
        debug_assert!(!id.is_empty(), "a warning needs a rule ID");
        let mut message = message.into();
        if !message.ends_with(&format!("[{id}]")) {
            message.push_str(&format!(" [{id}]"));
        }
        self.warnings.push(message);
    }

    /// The warnings, in the order they were recorded, each ending with its rule ID.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
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

    #[test]
    fn a_warning_carries_its_rule_id_once_and_does_not_deny() {
        let mut verdict = Verdict::new();
        verdict.warn(
            "GC-W9",
            "ConsistencyMode 'dangerous' may lead to data loss.",
        );
        // A message written with its ID already is not tagged twice.
        verdict.warn("GK-W3", "inline secret [GK-W3]");
        verdict.warn("GN-W3", format!("{} is ignored", "spec.capacity"));
        assert!(verdict.allowed());
        assert_eq!(
            verdict.warnings(),
            [
                "ConsistencyMode 'dangerous' may lead to data loss. [GC-W9]",
                "inline secret [GK-W3]",
                "spec.capacity is ignored [GN-W3]",
            ]
        );
    }

    #[test]
    fn merge_keeps_the_ids_of_both_verdicts() {
        let mut first = Verdict::new();
        first.warn("RG-W1", "same namespace");
        let mut second = Verdict::new();
        second.warn("RG-W2", "matches every namespace");
        second.deny("RG-C1", "spec.from", "name who may reference");
        first.merge(second);
        assert!(first.broke("RG-C1"));
        assert_eq!(
            first.warnings(),
            ["same namespace [RG-W1]", "matches every namespace [RG-W2]"]
        );
    }
}
