//! GarageReferenceGrant admission (`RG-*`) and the reference authorisation the
//! GarageBucket and GarageKey rules apply with it (RG-CHK, [`authorise`]).
//!
//! A grant has no defaulter and no immutable field: an UPDATE re-validates the new object only,
//! and DELETE is always allowed (the webhook is not registered for it). Every broken
//! entry is reported, so a grant is fixed in one round trip.

pub mod authorise;

use shared_types::garage_reference_grant::GarageReferenceGrant;

use super::shared::selector;
use super::{Context, Operation, Review, Verdict};

/// Validates a GarageReferenceGrant CREATE, UPDATE or DELETE (RG-C1, RG-C2, warnings RG-W1,
/// RG-W2). The rules read nothing besides the object.
pub fn validate_reference_grant(
    review: Review<'_, GarageReferenceGrant>,
    _ctx: &Context,
) -> Verdict {
    let mut verdict = Verdict::new();
    match (review.operation, review.new) {
        (Operation::Create | Operation::Update, Some(grant)) => check(grant, &mut verdict),
        (Operation::Delete, _) => {}
        (operation, None) => verdict.deny(
            "RG-REQ",
            "request",
            format!("a {operation:?} review must carry the GarageReferenceGrant; the admission request is malformed"),
        ),
    }
    verdict
}

fn check(grant: &GarageReferenceGrant, verdict: &mut Verdict) {
    let own = grant.metadata.namespace.as_deref().unwrap_or_default();
    if grant.spec.from.is_empty() {
        verdict.deny(
            "RG-C1",
            "spec.from",
            "spec.from must have at least one entry: list each kind and namespace (or namespaceSelector) allowed to reference objects in this namespace",
        );
    }
    for (i, from) in grant.spec.from.iter().enumerate() {
        let field = format!("spec.from[{i}]");
        let namespace = from.namespace.as_deref().filter(|ns| !ns.is_empty());
        match (namespace, &from.namespace_selector) {
            (Some(_), Some(_)) | (None, None) => verdict.deny(
                "RG-C2",
                field.clone(),
                "exactly one of namespace or namespaceSelector must be set: name one source namespace, or select source namespaces by label",
            ),
            _ => {}
        }
        if namespace == Some(own) {
            verdict.warn("RG-W1", format!(
                "{field}: namespace {own:?} is the same as this resource's namespace; same-namespace references are always permitted without a grant"
            ));
        }
        if let Some(s) = &from.namespace_selector {
            if let Some(why) = selector::conversion_error(s) {
                verdict.deny(
                    "RG-C2",
                    format!("{field}.namespaceSelector"),
                    format!("namespaceSelector is invalid: {why}; write a valid Kubernetes label selector"),
                );
            } else if selector::is_empty(Some(s)) {
                verdict.warn("RG-W2", format!(
                    "{field}.namespaceSelector matches every namespace; use an explicit label requirement to limit access"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests;
