//! GarageNode admission (`GN-*`), including VolumeAttributesClass on node
//! volumes (GN-VAC1…GN-VAC3, the carve-out from volume immutability, GN-W9)
//! and node-local-pool members (GN-W10, GN-W11 on top of
//! GN-C19/GN-K4/GN-U12).
//!
//! Each operation reports the first broken rule, as ordered
//! pipelines do: later rules assume earlier ones hold. Warnings collected up
//! to that point are returned either way.

mod create;
mod cycle;
mod delete;
mod facts;
mod parent;
mod shape;
mod storage;
mod update;
mod volume_update;

use super::{Context, Operation, Review, Verdict, Violation};
use shared_types::garage_node::GarageNode;

/// Outcome of one ordered rule pipeline: the first broken rule, if any.
type Step = Result<(), Violation>;

/// A broken rule.
fn deny(rule: &'static str, field: impl Into<String>, message: impl Into<String>) -> Violation {
    Violation {
        rule,
        field: field.into(),
        message: message.into(),
    }
}

/// Validates a GarageNode CREATE, UPDATE or DELETE against the GN rules.
///
/// `ctx` must hold the GarageClusters (for the parent, its layout owner and
/// their rollout/drain state), the GarageNodes of the owner's namespace, the
/// Pods of the node's namespace and, for DELETE, the request's
/// DeleteOptions.
pub fn validate_node(review: Review<'_, GarageNode>, ctx: &Context) -> Verdict {
    let mut verdict = Verdict::new();
    let result = match (review.operation, review.old, review.new) {
        (Operation::Create, _, Some(new)) => create::validate(new, ctx, &mut verdict),
        (Operation::Update, Some(old), Some(new)) => update::validate(old, new, ctx, &mut verdict),
        (Operation::Delete, old, _) => delete::validate(old, ctx),
        (operation, _, _) => Err(deny(
            "GN-REQ",
            "request",
            format!(
                "{operation:?} review is missing the object it needs; the admission request is malformed"
            ),
        )),
    };
    if let Err(violation) = result {
        verdict.violations.push(violation);
    }
    if let (Operation::Create | Operation::Update, Some(new)) = (review.operation, review.new) {
        crate::admission::host_access::check_container(
            &ctx.host_access,
            "spec.containerSecurityContext",
            new.spec.container_security_context.as_ref(),
            review
                .old
                .and_then(|o| o.spec.container_security_context.as_ref()),
            &mut verdict,
        );
    }
    verdict
}

#[cfg(test)]
mod tests;
