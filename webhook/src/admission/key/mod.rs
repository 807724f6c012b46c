//! GarageKey admission (`GK-*`).
//!
//! - CREATE: GK-C1…GK-C5, the credential material GK-M (import GK-IK, generated Secret GK-ST,
//!   the import snapshot's name), then the cross-namespace references GK-X1 (the cluster) and
//!   GK-X2 (every `bucketRef`), authorised by GarageReferenceGrants (RG-CHK). Warnings GK-W1
//!   (no permission at all) and GK-W2 (both `allBuckets` and `bucketPermissions`).
//! - UPDATE: identity first (GK-U1 clusterRef, GK-U2 importKey), then the same rules on the new
//!   object. When the stored spec, defaulted as the mutating webhook would default it, equals
//!   the new spec (the "legacy flag"), the rules that became stricter after objects were
//!   released are skipped (GK-C2, GK-M, the reference and alias syntax of GK-C4, GK-X1,
//!   GK-X2). An unchanged legacy collision of the generated Secret with the import snapshot is
//!   tolerated with a warning (GK-U3).
//! - DELETE: always allowed (GK-D).
//!
//! Every broken rule is reported, not only the first.

mod bucket_permissions;
mod identity;
mod import;
mod secret_template;

use shared_types::garage_key::GarageKey;
use shared_types::garage_reference_grant::{GrantFromKind, GrantToKind};

use super::defaults::default_key;
use super::reference_grant::authorise::{
    Checked, GrantReads, Source, deny_unauthorised, review_reads,
};
use super::shared::remote::check_cluster_reference;
use super::{Context, Operation, Review, Verdict};

/// Validates a GarageKey CREATE, UPDATE or DELETE. `ctx` must hold the GarageReferenceGrants
/// (and the referring Namespace) [`grant_reads`] names.
pub fn validate_key(review: Review<'_, GarageKey>, ctx: &Context) -> Verdict {
    let mut verdict = Verdict::new();
    match (review.operation, review.old, review.new) {
        (Operation::Create, _, Some(new)) => check(new, Relaxed::default(), ctx, &mut verdict),
        (Operation::Update, Some(old), Some(new)) => {
            identity::check(old, new, &mut verdict);
            let relaxed = Relaxed {
                legacy: unchanged_legacy(old, new),
                snapshot_collision: secret_template::collision_tolerated(old, new),
            };
            check(new, relaxed, ctx, &mut verdict);
            if relaxed.snapshot_collision && secret_template::snapshot_collision(new) {
                verdict.warn("GK-U3", "unchanged legacy secretTemplate.name collision with the internal import snapshot is temporarily tolerated so metadata/finalizers can be repaired or the output Secret can be renamed; rename spec.secretTemplate.name");
            }
        }
        (Operation::Delete, _, _) => {}
        (operation, _, _) => verdict.deny(
            "GK-REQ",
            "request",
            format!("a {operation:?} review lacks the GarageKey it needs; the admission request is malformed"),
        ),
    }
    verdict
}

/// Which rules an UPDATE relaxes.
#[derive(Clone, Copy, Debug, Default)]
struct Relaxed {
    /// The legacy flag: the defaulted stored spec equals the new spec.
    legacy: bool,
    /// GK-U3: the stored object's generated Secret already took the snapshot's name and the
    /// template is unchanged.
    snapshot_collision: bool,
}

/// The legacy flag: the stored spec, defaulted as the mutating webhook defaults it, equals the
/// new spec.
pub fn unchanged_legacy(old: &GarageKey, new: &GarageKey) -> bool {
    default_key(old).spec == new.spec
}

/// What the rules read for `review`: the GarageReferenceGrants of every namespace the key
/// references into (GK-X1, GK-X2); `None` when nothing is read.
pub fn grant_reads(review: &Review<'_, GarageKey>) -> Option<GrantReads> {
    review_reads(review, unchanged_legacy, references)
}

/// The key as a referring object, and its references that may cross namespaces: its cluster
/// (GK-X1) and every `bucketRef` (GK-X2).
fn references(key: &GarageKey) -> (Source<'_>, Vec<Checked<'_>>) {
    let source = Source::of(GrantFromKind::GarageKey, &key.metadata);
    let cluster = source.cluster("GK-X1", &key.spec.cluster_ref);
    let buckets = key
        .spec
        .bucket_permissions
        .iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, p)| {
            let bucket = p.bucket_ref.as_ref()?;
            source.reference(
                "GK-X2",
                format!("spec.bucketPermissions[{i}].bucketRef"),
                GrantToKind::GarageBucket,
                &bucket.name,
                bucket.namespace.as_deref(),
            )
        });
    let refs = cluster.into_iter().chain(buckets).collect();
    (source, refs)
}

fn check(key: &GarageKey, relaxed: Relaxed, ctx: &Context, verdict: &mut Verdict) {
    let cluster = &key.spec.cluster_ref;
    if cluster.name.is_empty() {
        verdict.deny(
            "GK-C1",
            "spec.clusterRef.name",
            "clusterRef.name is required: name the GarageCluster in which the key is created",
        );
    } else if !relaxed.legacy
        && let Some(p) = check_cluster_reference("spec.clusterRef", cluster)
    {
        verdict.deny("GK-C2", p.field, p.message);
    }
    if !relaxed.legacy {
        import::check(key, verdict);
        secret_template::check(key, verdict);
        if !relaxed.snapshot_collision && secret_template::snapshot_collision(key) {
            let name = key
                .spec
                .secret_template
                .as_ref()
                .and_then(|t| t.name.as_deref())
                .unwrap_or_default();
            verdict.deny(
                "GK-M",
                "spec.secretTemplate.name",
                format!("secretTemplate.name {name:?} collides with the controller's immutable import material snapshot Secret; choose a different generated Secret name"),
            );
        }
    }
    if key.spec.expires_at.is_some() && key.spec.never_expires == Some(true) {
        verdict.deny(
            "GK-C3",
            "spec.expiresAt",
            "expiresAt and neverExpires are mutually exclusive; keep expiresAt for a key that expires, or neverExpires: true for one that does not",
        );
    }
    bucket_permissions::check(key, relaxed.legacy, verdict);
    bucket_permissions::check_all_buckets(key, verdict);
    if !relaxed.legacy {
        let (source, refs) = references(key);
        deny_unauthorised(ctx, &source, &refs, verdict);
    }
    let has_permissions = key
        .spec
        .bucket_permissions
        .as_ref()
        .is_some_and(|p| !p.is_empty());
    match (has_permissions, key.spec.all_buckets.is_some()) {
        (false, false) => verdict.warn("GK-W1", "No bucket permissions defined. The key will not have access to any buckets. You can grant access via GarageKey.bucketPermissions, GarageKey.allBuckets, or GarageBucket.keyPermissions."),
        (true, true) => verdict.warn("GK-W2", "Both allBuckets and bucketPermissions are set. allBuckets grants a baseline permission set on every bucket; bucketPermissions entries are applied on top. Verify this is intentional."),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
