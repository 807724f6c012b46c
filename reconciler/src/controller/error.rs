//! Why a reconcile pass failed, typed up to the controller: each variant names the condition
//! reason it is reported under and the label it is counted with.

use shared_types::conditions::reason;

use crate::desired::DesiredError;
use crate::garage::GarageError;

/// Why a reconcile pass failed. Each is retried after [`super::Config::error_requeue`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Kubernetes API refused or failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// Garage's Admin API refused or failed.
    #[error("garage admin API: {0}")]
    Garage(#[from] GarageError),
    /// Desired state cannot be rendered.
    #[error(transparent)]
    Desired(#[from] DesiredError),
    /// An object the reconciler would write exists but is not controlled by the expected
    /// owner; it is never adopted or overwritten.
    #[error("{kind} {name} exists but is not controlled by {owner}; it is left untouched")]
    Foreign {
        /// Kind.
        kind: &'static str,
        /// Name.
        name: String,
        /// Expected owner.
        owner: String,
    },
    /// A safety invariant failed; nothing destructive was done.
    #[error("{0}")]
    Unsafe(String),
    /// An immutable object the reconciler would reuse holds other content than its name
    /// promises; it is left untouched.
    #[error("{kind} {name} does not hold the content its name promises; it is left untouched")]
    ContentMismatch {
        /// Kind.
        kind: &'static str,
        /// Name.
        name: String,
    },
    /// An object or patch could not be encoded or built; nothing was written with it.
    #[error("{0}")]
    Encoding(String),
    /// The pass panicked; it is retried like any failed pass.
    #[error("the pass panicked: {0}")]
    Panicked(String),
    /// A write guarded by the resourceVersion it was decided from found the object changed:
    /// nothing was written, and the next pass decides again from the new state.
    #[error("{0} changed since it was read; deciding again")]
    Stale(String),
    /// Local I/O (the random source).
    #[error("local I/O: {0}")]
    Io(#[from] std::io::Error),
    /// The pass did not finish within [`super::Config::pass_timeout`]; it was stopped.
    #[error("the pass did not finish within {0:?}; it was stopped and is tried again")]
    TimedOut(std::time::Duration),
}

impl Error {
    /// The label this error is counted under in `garage_reconciler_failures_total`.
    pub fn metric_label(&self) -> &'static str {
        match self {
            Error::Kube(kube::Error::Api(e)) if e.code == 409 => "conflict",
            Error::Stale(_) => "conflict",
            Error::Kube(_) => "kubernetes",
            Error::Garage(_) => "garage",
            Error::Desired(e) => e.reported_as().2,
            Error::Foreign { .. } => "foreign_object",
            Error::Unsafe(_) => "unsafe",
            Error::ContentMismatch { .. } => "content_mismatch",
            Error::Encoding(_) => "encoding",
            Error::Panicked(_) => "panic",
            Error::Io(_) => "io",
            Error::TimedOut(_) => "timeout",
        }
    }

    /// The condition reason this error is reported under.
    pub fn reason(&self) -> &'static str {
        match self {
            Error::Kube(_)
            | Error::Io(_)
            | Error::TimedOut(_)
            | Error::Encoding(_)
            | Error::Panicked(_) => reason::REASON_RECONCILE_FAILED,
            Error::Garage(_) => reason::REASON_GARAGE_API_ERROR,
            Error::Desired(e) => e.reported_as().0,
            Error::Foreign { .. } | Error::Unsafe(_) | Error::ContentMismatch { .. } => {
                reason::REASON_RECONCILE_FAILED
            }
            Error::Stale(_) => reason::REASON_RECONCILE_IN_PROGRESS,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_shapes_are_not_validation_failures() {
        let e = Error::Desired(DesiredError::Unsupported("spec.gateway"));
        assert_eq!(e.reason(), reason::REASON_UNSUPPORTED);
        assert_eq!(e.metric_label(), "unsupported");
        let e = Error::Desired(DesiredError::Invalid {
            field: "spec.storage.replicas",
            message: "must not be negative".into(),
        });
        assert_eq!(e.reason(), reason::REASON_VALIDATION_FAILED);
        assert_eq!(e.metric_label(), "invalid_spec");
    }

    #[test]
    fn each_failure_kind_has_its_own_label() {
        let table: Vec<(Error, &str)> = vec![
            (Error::Unsafe("x".into()), "unsafe"),
            (
                Error::ContentMismatch {
                    kind: "ConfigMap",
                    name: "c".into(),
                },
                "content_mismatch",
            ),
            (Error::Encoding("x".into()), "encoding"),
            (Error::Panicked("x".into()), "panic"),
            (
                Error::TimedOut(std::time::Duration::from_secs(1)),
                "timeout",
            ),
            (Error::Stale("x".into()), "conflict"),
        ];
        for (e, label) in table {
            assert_eq!(e.metric_label(), label, "{e}");
            assert_eq!(
                e.reason(),
                if label == "conflict" {
                    reason::REASON_RECONCILE_IN_PROGRESS
                } else {
                    reason::REASON_RECONCILE_FAILED
                }
            );
        }
    }
}
