//! GarageBucket admission (`GB-*`).
//!
//! - CREATE: the shape rules GB-C1…GB-C7, then the cross-namespace references GB-X1 (the
//!   cluster) and GB-X2 (every key permission), authorised by GarageReferenceGrants (RG-CHK).
//! - UPDATE: identity first (GB-U1 clusterRef, GB-U2 bucketId once Garage assigned one), then
//!   the same rules on the new object. When the stored spec, defaulted as the mutating webhook
//!   would default it, equals the new spec (the "legacy flag": a label, annotation or
//!   finalizer write), the rules that became stricter after objects were released are skipped
//!   (GB-C2, GB-C3, GB-C4, GB-C6, the reference syntax of GB-C5, GB-X1, GB-X2), so an old
//!   object can always be cleaned up. GB-C1, the rest of GB-C5 and GB-C7 always apply.
//! - CREATE and UPDATE: GB-OP1, a `cleanup-mpu` request set or changed to a value the
//!   reconciler could not run.
//! - DELETE: always allowed (GB-D; the webhook is not registered for DELETE of this kind).
//!
//! Every broken rule is reported, not only the first, so a manifest is fixed in one round trip.

pub mod aliases;
mod identity;
mod key_permissions;
mod lifecycle;
mod operations;
mod quotas;

use shared_types::garage_bucket::{GarageBucket, GarageBucketSpec};
use shared_types::garage_reference_grant::{GrantFromKind, GrantToKind};

use super::defaults::default_bucket;
use super::reference_grant::authorise::{
    Checked, GrantReads, Source, deny_unauthorised, review_reads,
};
use super::shared::quantity::quantity_eq;
use super::shared::remote::check_cluster_reference;
use super::{Context, Operation, Review, Verdict};

/// Validates a GarageBucket CREATE, UPDATE or DELETE. `ctx` must hold the
/// GarageReferenceGrants (and the referring Namespace) [`grant_reads`] names.
pub fn validate_bucket(review: Review<'_, GarageBucket>, ctx: &Context) -> Verdict {
    let mut verdict = Verdict::new();
    match (review.operation, review.old, review.new) {
        (Operation::Create, _, Some(new)) => {
            operations::check(None, new, &mut verdict);
            check(new, false, ctx, &mut verdict);
        }
        (Operation::Update, Some(old), Some(new)) => {
            identity::check(old, new, &mut verdict);
            operations::check(Some(old), new, &mut verdict);
            check(new, unchanged_legacy(old, new), ctx, &mut verdict);
        }
        (Operation::Delete, _, _) => {}
        (operation, _, _) => verdict.deny(
            "GB-REQ",
            "request",
            format!("a {operation:?} review lacks the GarageBucket it needs; the admission request is malformed"),
        ),
    }
    verdict
}

/// The legacy flag: the stored spec, defaulted as the mutating webhook defaults it, equals the
/// new spec (quantities compared by value).
pub fn unchanged_legacy(old: &GarageBucket, new: &GarageBucket) -> bool {
    fn max_size(
        spec: &GarageBucketSpec,
    ) -> Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity> {
        spec.quotas.as_ref().and_then(|q| q.max_size.as_ref())
    }
    fn without_max_size(spec: &GarageBucketSpec) -> GarageBucketSpec {
        let mut spec = spec.clone();
        if let Some(quotas) = spec.quotas.as_mut() {
            quotas.max_size = None;
        }
        spec
    }
    let old = default_bucket(old);
    quantity_eq(max_size(&old.spec), max_size(&new.spec))
        && without_max_size(&old.spec) == without_max_size(&new.spec)
}

/// What the rules read for `review`: the GarageReferenceGrants of every namespace the bucket
/// references into (GB-X1, GB-X2); `None` when no reference crosses a namespace or the rules
/// check none (DELETE, an unchanged legacy spec), so the review reads nothing.
pub fn grant_reads(review: &Review<'_, GarageBucket>) -> Option<GrantReads> {
    review_reads(review, unchanged_legacy, references)
}

/// The bucket as a referring object, and its references that may cross namespaces: its
/// cluster (GB-X1) and the keys of its permissions (GB-X2).
fn references(bucket: &GarageBucket) -> (Source<'_>, Vec<Checked<'_>>) {
    let source = Source::of(GrantFromKind::GarageBucket, &bucket.metadata);
    let cluster = source.cluster("GB-X1", &bucket.spec.cluster_ref);
    let keys = bucket
        .spec
        .key_permissions
        .iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, p)| {
            source.reference(
                "GB-X2",
                format!("spec.keyPermissions[{i}].keyRef"),
                GrantToKind::GarageKey,
                &p.key_ref.name,
                p.key_ref.namespace.as_deref(),
            )
        });
    let refs = cluster.into_iter().chain(keys).collect();
    (source, refs)
}

fn check(bucket: &GarageBucket, legacy: bool, ctx: &Context, verdict: &mut Verdict) {
    let cluster = &bucket.spec.cluster_ref;
    if cluster.name.is_empty() {
        verdict.deny(
            "GB-C1",
            "spec.clusterRef.name",
            "clusterRef.name is required: name the GarageCluster that hosts this bucket",
        );
    } else if !legacy && let Some(p) = check_cluster_reference("spec.clusterRef", cluster) {
        verdict.deny("GB-C2", p.field, p.message);
    }
    if !legacy {
        aliases::check_global_alias(bucket, verdict);
        aliases::check_local_aliases(bucket, verdict);
        quotas::check(bucket, verdict);
    }
    key_permissions::check(bucket, legacy, verdict);
    lifecycle::check(bucket, verdict);
    if !legacy {
        let (source, refs) = references(bucket);
        deny_unauthorised(ctx, &source, &refs, verdict);
    }
}

#[cfg(test)]
mod tests;
