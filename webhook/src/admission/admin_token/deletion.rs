//! AT-D1…AT-D3: a GarageAdminToken may be deleted once no GarageCluster of its namespace
//! consumes its Secret. Deleting never revokes bearer bytes a running Garage already loaded,
//! which every allowed deletion says.
//!
//! The referenced cluster is read live by the adapter; a read that fails refuses the deletion
//! there (AT-D1, AT-D2: the webhook cannot prove the Secret unused). In the snapshot, an
//! absent cluster does not exist.

use shared_types::garage_admin_token::GarageAdminToken;

use super::material::{DEFAULT_TOKEN_KEY, secret_identity};
use crate::admission::shared::remote::effective_namespace;
use crate::admission::{Context, Verdict};

/// AT-D on the stored token `old`.
pub fn check(old: Option<&GarageAdminToken>, ctx: &Context, verdict: &mut Verdict) {
    let Some(token) = old else {
        verdict.deny(
            "AT-D1",
            "request.oldObject",
            "cannot prove the generated static bootstrap Secret is no longer referenced: the DELETE review carries no stored GarageAdminToken; retry the deletion",
        );
        return;
    };
    let own = token.metadata.namespace.as_deref().unwrap_or_default();
    let r = &token.spec.cluster_ref;
    let namespace = effective_namespace(r.namespace.as_deref(), own);
    let cluster = ctx.garage_clusters.iter().find(|c| {
        c.metadata.namespace.as_deref() == Some(namespace)
            && c.metadata.name.as_deref() == Some(r.name.as_str())
    });
    let Some(cluster) = cluster else {
        verdict.warn("AT-D2", "deleting the Kubernetes Secret cannot revoke static bearer bytes already loaded by a surviving Garage process");
        return;
    };
    let (secret, key) = secret_identity(token);
    let consumed = cluster
        .spec
        .admin
        .as_ref()
        .and_then(|a| a.admin_token_secret_ref.as_ref())
        .is_some_and(|s| {
            let used_key = if s.key.is_empty() {
                DEFAULT_TOKEN_KEY
            } else {
                s.key.as_str()
            };
            s.name == secret && used_key == key
        });
    if namespace == own && consumed {
        verdict.deny(
            "AT-D3",
            "metadata.name",
            format!("garageCluster {namespace}/{} still references generated Secret {own}/{secret}:{key}; rotate or remove spec.admin.adminTokenSecretRef before deletion", r.name),
        );
    } else {
        verdict.warn("AT-D3", "deleting the Kubernetes Secret cannot revoke static bearer bytes already loaded by a Garage process; complete credential rotation before deletion");
    }
}
