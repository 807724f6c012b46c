//! The Events a decision asks for: what a user should see in `kubectl describe` (layout
//! applies, teardown steps, refusals). The reconciler publishes them.

/// One Event to publish about the object being reconciled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// True for a warning (a refusal or a failure), false for normal progress.
    pub warning: bool,
    /// PascalCase reason (a condition reason where one fits).
    pub reason: &'static str,
    /// PascalCase action taken or refused.
    pub action: &'static str,
    /// A sentence for people (never a secret).
    pub message: String,
}

impl Note {
    /// Normal progress.
    pub fn normal(reason: &'static str, action: &'static str, message: String) -> Self {
        Self {
            warning: false,
            reason,
            action,
            message,
        }
    }

    /// A refusal or failure.
    pub fn warning(reason: &'static str, action: &'static str, message: String) -> Self {
        Self {
            warning: true,
            reason,
            action,
            message,
        }
    }
}
