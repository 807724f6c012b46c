//! The GarageAdminToken decisions: the plan of a pass ([`plan`]: the immutable Secret to
//! create, never to regenerate or adopt, the status and the outcome); here, where the token's
//! Secret lives and what its spec may not ask for.

pub mod plan;

use kube::ResourceExt;
use shared_types::garage_admin_token::GarageAdminToken;

/// `credential-kind` of the Secrets the GarageAdminToken controller writes.
pub const STATIC_BOOTSTRAP: &str = "static-bootstrap";

/// The Secret name and the data key of the token.
pub fn secret_location(t: &GarageAdminToken) -> (String, String) {
    let template = t.spec.secret_template.as_ref();
    let name = template
        .and_then(|s| s.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| t.name_any());
    let key = template
        .and_then(|s| s.token_key.clone())
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| "admin-token".into());
    (name, key)
}

/// What is wrong with the spec, if anything; these fields exist for compatibility only.
pub fn spec_problem(t: &GarageAdminToken) -> Option<String> {
    let ns = t.namespace().unwrap_or_default();
    if t.spec
        .cluster_ref
        .namespace
        .as_deref()
        .is_some_and(|n| !n.is_empty() && n != ns)
    {
        return Some(format!(
            "spec.clusterRef.namespace must be empty or {ns}: an admin token never serves a cluster in another namespace"
        ));
    }
    if t.spec.name.as_deref().is_some_and(|n| !n.is_empty()) {
        return Some("spec.name is not supported: the token is a static bearer with no Garage-side name; remove it".into());
    }
    if t.spec.expires_at.is_some() {
        return Some("spec.expiresAt is not supported: a static bearer cannot expire; remove it and delete the object to retire the token".into());
    }
    None
}
