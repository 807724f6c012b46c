//! GarageAdminToken admission (`AT-*`). There is no defaulter.
//!
//! A GarageAdminToken provisions static Admin API bootstrap material into a Secret of its own
//! namespace, which the GarageCluster consumes through `spec.admin.adminTokenSecretRef`.
//!
//! - CREATE: AT-C1…AT-C5, and always the warning AT-W1.
//! - UPDATE: the same rules on the new object (AT-C2 and AT-C5 skipped when the spec is
//!   unchanged, the legacy flag; AT-C3 and AT-C4 are never relaxed), then the identity of the
//!   generated Secret (AT-U1), and AT-W1.
//! - DELETE: refused while the same-namespace GarageCluster still names the generated Secret
//!   and key in `spec.admin.adminTokenSecretRef` (AT-D3); the cluster is read live, and a read
//!   that fails refuses the deletion (AT-D1, AT-D2, in the adapter).

mod deletion;
mod identity;
mod material;

use shared_types::garage_admin_token::GarageAdminToken;

use super::shared::names::is_dns1123_subdomain;
use super::shared::remote::{check_cluster_reference, effective_namespace};
use super::{Context, Operation, Review, Verdict};

pub use material::{DEFAULT_ENDPOINT_KEY, DEFAULT_TOKEN_KEY};

/// The text of AT-W1, returned with every CREATE and UPDATE (followed by ` [AT-W1]`).
pub const STATIC_MATERIAL_WARNING: &str = "GarageAdminToken creates immutable static bootstrap material only; deletion is refused while the referenced GarageCluster consumes the Secret, and removing the source does not revoke bearer bytes already loaded by Garage";

/// Validates a GarageAdminToken CREATE, UPDATE or DELETE. For DELETE `ctx` must hold the
/// GarageCluster [`cluster_read`] names, if it exists.
pub fn validate_admin_token(review: Review<'_, GarageAdminToken>, ctx: &Context) -> Verdict {
    let mut verdict = Verdict::new();
    match (review.operation, review.old, review.new) {
        (Operation::Create, _, Some(new)) => {
            check(new, false, &mut verdict);
            verdict.warn("AT-W1", STATIC_MATERIAL_WARNING);
        }
        (Operation::Update, Some(old), Some(new)) => {
            check(new, old.spec == new.spec, &mut verdict);
            identity::check(old, new, &mut verdict);
            verdict.warn("AT-W1", STATIC_MATERIAL_WARNING);
        }
        (Operation::Delete, old, _) => deletion::check(old, ctx, &mut verdict),
        (operation, _, _) => verdict.deny(
            "AT-REQ",
            "request",
            format!("a {operation:?} review lacks the GarageAdminToken it needs; the admission request is malformed"),
        ),
    }
    verdict
}

/// The GarageCluster (namespace, name) a DELETE reads (AT-D2); `None` for other operations or
/// when the reference cannot name a cluster, so nothing is read.
pub fn cluster_read(review: &Review<'_, GarageAdminToken>) -> Option<(String, String)> {
    let token = match (review.operation, review.old) {
        (Operation::Delete, Some(old)) => old,
        _ => return None,
    };
    let r = &token.spec.cluster_ref;
    let namespace = token.metadata.namespace.as_deref().unwrap_or_default();
    is_dns1123_subdomain(&r.name).then(|| {
        (
            effective_namespace(r.namespace.as_deref(), namespace).to_owned(),
            r.name.clone(),
        )
    })
}

fn check(token: &GarageAdminToken, legacy: bool, verdict: &mut Verdict) {
    let cluster = &token.spec.cluster_ref;
    let own = token.metadata.namespace.as_deref().unwrap_or_default();
    if cluster.name.is_empty() {
        verdict.deny(
            "AT-C1",
            "spec.clusterRef.name",
            "clusterRef.name is required: name the GarageCluster of this namespace that consumes the token",
        );
    } else if !legacy && let Some(p) = check_cluster_reference("spec.clusterRef", cluster) {
        verdict.deny("AT-C2", p.field, p.message);
    }
    if effective_namespace(cluster.namespace.as_deref(), own) != own {
        verdict.deny(
            "AT-C3",
            "spec.clusterRef.namespace",
            format!("clusterRef.namespace must match metadata.namespace: GarageAdminToken provisions a local static bootstrap Secret, and GarageCluster credential refs cannot consume it across namespaces (a GarageReferenceGrant does not change this); create the token in the cluster's namespace, or leave clusterRef.namespace empty (here {own:?})"),
        );
    }
    let spec = &token.spec;
    if spec.expires_at.is_some() && spec.never_expires == Some(true) {
        verdict.deny(
            "AT-C4",
            "spec.expiresAt",
            "expiresAt and neverExpires are mutually exclusive; remove expiresAt, which static bootstrap material does not support",
        );
    } else if spec.expires_at.is_some() {
        verdict.deny(
            "AT-C4",
            "spec.expiresAt",
            "expiresAt is unsupported for static bootstrap material; Garage does not assign or revoke this token; remove expiresAt",
        );
    }
    if spec.name.as_deref().is_some_and(|n| !n.is_empty()) {
        verdict.deny(
            "AT-C4",
            "spec.name",
            "spec.name is unsupported for static bootstrap material because no Garage Admin-token row is created; remove spec.name",
        );
    }
    if !legacy {
        material::check(token, verdict);
    }
}

#[cfg(test)]
mod tests;
