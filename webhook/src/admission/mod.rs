//! Admission rules: pure functions of (operation, old object, new object,
//! context) that return a [`Verdict`].
//!
//! Nothing here performs I/O. The HTTPS adapter decodes the AdmissionReview,
//! reads the [`Context`] a rule set needs from the API server, calls the rule
//! set and encodes the verdict; the CLI does the same from files. Every rule
//! has a stable identifier (`GC-*`, `GN-*`, ..., listed in
//! `docs/admission-rules.md`) that
//! appears in the denial message, so a user can look the rule up and a test
//! can assert which rule fired.

pub mod admin_token;
pub mod bucket;
pub mod cluster;
mod context;
pub mod defaults;
pub mod host_access;
pub mod key;
pub mod node;
pub mod pvc_guard;
pub mod reference_grant;
pub mod shared;
#[cfg(test)]
mod testing;
mod verdict;

pub use context::Context;
pub use verdict::{Verdict, Violation};

/// The admission operation being reviewed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A new object.
    Create,
    /// A change to an existing object; both old and new are present.
    Update,
    /// Removal of an object; only old is present.
    Delete,
}

/// One object under review: what is being done and the object's two sides.
#[derive(Clone, Copy, Debug)]
pub struct Review<'a, T> {
    /// The operation.
    pub operation: Operation,
    /// The stored object (UPDATE and DELETE).
    pub old: Option<&'a T>,
    /// The incoming object (CREATE and UPDATE).
    pub new: Option<&'a T>,
}

impl<'a, T> Review<'a, T> {
    /// A CREATE of `new`.
    pub fn create(new: &'a T) -> Self {
        Review {
            operation: Operation::Create,
            old: None,
            new: Some(new),
        }
    }

    /// An UPDATE from `old` to `new`.
    pub fn update(old: &'a T, new: &'a T) -> Self {
        Review {
            operation: Operation::Update,
            old: Some(old),
            new: Some(new),
        }
    }

    /// A DELETE of `old`.
    pub fn delete(old: &'a T) -> Self {
        Review {
            operation: Operation::Delete,
            old: Some(old),
            new: None,
        }
    }
}
