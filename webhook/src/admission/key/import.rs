//! GK-IK: the credential material a GarageKey imports, from a Secret of its own namespace
//! (GK-M) or inline.

use shared_types::garage_key::{GarageKey, ImportKey};

use super::super::defaults::key::{DEFAULT_ACCESS_KEY_ID_KEY, DEFAULT_SECRET_ACCESS_KEY_KEY};
use crate::admission::Verdict;
use crate::admission::shared::secret_data::check_data_key;

fn set(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

/// True for an inline access key ID: `GK` followed by letters and digits.
fn is_access_key_id(id: &str) -> bool {
    id.strip_prefix("GK")
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// GK-IK, and GK-M's rule that an imported Secret lives in the key's own namespace.
pub fn check(key: &GarageKey, verdict: &mut Verdict) {
    let Some(import) = &key.spec.import_key else {
        return;
    };
    let inline = set(&import.access_key_id).is_some() || set(&import.secret_access_key).is_some();
    match &import.secret_ref {
        Some(secret) => {
            if inline {
                verdict.deny(
                    "GK-IK",
                    "spec.importKey",
                    "importKey: specify either secretRef or inline credentials (accessKeyId/secretAccessKey), not both; prefer secretRef",
                );
            }
            if set(&secret.name).is_none() {
                verdict.deny(
                    "GK-IK",
                    "spec.importKey.secretRef.name",
                    "importKey.secretRef.name is required: name the Secret holding the credentials to import",
                );
            }
            data_keys(import, verdict);
            let own = key.metadata.namespace.as_deref().unwrap_or_default();
            if let Some(ns) = set(&secret.namespace)
                && ns != own
            {
                verdict.deny(
                    "GK-M",
                    "spec.importKey.secretRef.namespace",
                    format!("importKey.secretRef.namespace must be empty or match metadata.namespace; cross-namespace Secret reads are not permitted: copy the Secret into namespace {own:?}"),
                );
            }
        }
        None => {
            if set(&import.access_key_id_key).is_some()
                || set(&import.secret_access_key_key).is_some()
            {
                verdict.deny(
                    "GK-IK",
                    "spec.importKey",
                    "importKey: accessKeyIdKey/secretAccessKeyKey can only be used with secretRef; add secretRef or remove them",
                );
            }
            if !inline {
                verdict.deny(
                    "GK-IK",
                    "spec.importKey",
                    "importKey: specify secretRef or both accessKeyId and secretAccessKey; remove importKey to have Garage generate the key",
                );
            } else {
                inline_pair(import, verdict);
            }
        }
    }
}

/// The data keys of an imported Secret: valid, and distinct once defaulted.
fn data_keys(import: &ImportKey, verdict: &mut Verdict) {
    for (field, key) in [
        ("accessKeyIdKey", set(&import.access_key_id_key)),
        ("secretAccessKeyKey", set(&import.secret_access_key_key)),
    ] {
        if let Some(p) = key.and_then(|k| check_data_key(&format!("spec.importKey.{field}"), k)) {
            verdict.deny("GK-IK", p.field, format!("importKey.{field} {}", p.message));
        }
    }
    let access = set(&import.access_key_id_key).unwrap_or(DEFAULT_ACCESS_KEY_ID_KEY);
    let secret = set(&import.secret_access_key_key).unwrap_or(DEFAULT_SECRET_ACCESS_KEY_KEY);
    if access == secret {
        verdict.deny(
            "GK-IK",
            "spec.importKey.secretAccessKeyKey",
            format!("importKey.accessKeyIdKey and secretAccessKeyKey must use distinct Secret data keys (both are {access:?})"),
        );
    }
}

/// Inline credentials: both halves, and an access key ID Garage would have issued.
fn inline_pair(import: &ImportKey, verdict: &mut Verdict) {
    match set(&import.access_key_id) {
        None => verdict.deny(
            "GK-IK",
            "spec.importKey.accessKeyId",
            "importKey: accessKeyId is required when specifying inline credentials; add it, or import from a Secret with secretRef",
        ),
        Some(id) if !is_access_key_id(id) => verdict.deny(
            "GK-IK",
            "spec.importKey.accessKeyId",
            "importKey: accessKeyId should start with 'GK' followed by alphanumeric characters, as Garage issues them",
        ),
        Some(_) => {}
    }
    if set(&import.secret_access_key).is_none() {
        verdict.deny(
            "GK-IK",
            "spec.importKey.secretAccessKey",
            "importKey: secretAccessKey is required when specifying inline credentials; add it, or import from a Secret with secretRef",
        );
    } else {
        // A secret in a spec is readable by anyone who may read GarageKeys (often far more
        // people than may read Secrets), and stays in manifests, audit logs and backups.
        verdict.warn("GK-W3", "spec.importKey.secretAccessKey holds the secret in the GarageKey itself, readable by everyone who may read GarageKeys and kept in audit logs and manifests; put it in a Secret of this namespace and use spec.importKey.secretRef instead");
    }
}
