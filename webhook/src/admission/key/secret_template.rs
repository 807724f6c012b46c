//! GK-ST: the generated credentials Secret. Every data key the operator may write must be a
//! valid Secret key even when its entry is disabled; the enabled ones and `additionalData`
//! must not overwrite each other. GK-M: the Secret must not take the name of the controller's
//! import snapshot; GK-U3 tolerates an unchanged legacy collision.

use std::collections::BTreeMap;

use shared_types::garage_key::{GarageKey, KeySecretTemplate, import_snapshot_secret_name};

use super::super::defaults::key::{
    DEFAULT_ACCESS_KEY_ID_KEY, DEFAULT_BUCKET_NAME_KEY, DEFAULT_CREDENTIALS_FILE_KEY,
    DEFAULT_CREDENTIALS_FILE_PROFILE, DEFAULT_ENDPOINT_KEY, DEFAULT_HOST_KEY, DEFAULT_REGION_KEY,
    DEFAULT_SCHEME_KEY, DEFAULT_SECRET_ACCESS_KEY_KEY,
};
use crate::admission::Verdict;
use crate::admission::shared::deny_all;
use crate::admission::shared::secret_data::{check_data_key, check_secret_template};

const FIELD: &str = "spec.secretTemplate";

fn or<'a>(value: &'a Option<String>, default: &'a str) -> &'a str {
    value
        .as_deref()
        .filter(|v| !v.is_empty())
        .unwrap_or(default)
}

/// `^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`.
fn is_profile(profile: &str) -> bool {
    profile.len() <= 128
        && profile.starts_with(|c: char| c.is_ascii_alphanumeric())
        && profile
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
}

/// One data key of the generated Secret: its field, effective name and whether it is written.
struct DataKey<'a> {
    field: &'static str,
    key: &'a str,
    written: bool,
}

fn data_keys(t: &KeySecretTemplate) -> [DataKey<'_>; 8] {
    let endpoint = t.include_endpoint != Some(false);
    let region = t.include_region != Some(false);
    let bucket = t.include_bucket_name == Some(true);
    let credentials = t.include_credentials_file == Some(true);
    let key = |field, value, default, written| DataKey {
        field,
        key: or(value, default),
        written,
    };
    [
        key(
            "accessKeyIdKey",
            &t.access_key_id_key,
            DEFAULT_ACCESS_KEY_ID_KEY,
            true,
        ),
        key(
            "secretAccessKeyKey",
            &t.secret_access_key_key,
            DEFAULT_SECRET_ACCESS_KEY_KEY,
            true,
        ),
        key(
            "endpointKey",
            &t.endpoint_key,
            DEFAULT_ENDPOINT_KEY,
            endpoint,
        ),
        key("hostKey", &t.host_key, DEFAULT_HOST_KEY, endpoint),
        key("schemeKey", &t.scheme_key, DEFAULT_SCHEME_KEY, endpoint),
        key("regionKey", &t.region_key, DEFAULT_REGION_KEY, region),
        key(
            "bucketNameKey",
            &t.bucket_name_key,
            DEFAULT_BUCKET_NAME_KEY,
            bucket,
        ),
        key(
            "credentialsFileKey",
            &t.credentials_file_key,
            DEFAULT_CREDENTIALS_FILE_KEY,
            credentials,
        ),
    ]
}

/// GK-ST on `spec.secretTemplate`.
pub fn check(key: &GarageKey, verdict: &mut Verdict) {
    let Some(t) = &key.spec.secret_template else {
        return;
    };
    deny_all(
        verdict,
        "GK-ST",
        check_secret_template(
            FIELD,
            t.name.as_deref(),
            t.labels.as_ref(),
            t.annotations.as_ref(),
        ),
    );
    let profile = or(
        &t.credentials_file_profile,
        DEFAULT_CREDENTIALS_FILE_PROFILE,
    );
    if !is_profile(profile) {
        verdict.deny(
            "GK-ST",
            format!("{FIELD}.credentialsFileProfile"),
            format!("secretTemplate.credentialsFileProfile {profile:?} must start with an alphanumeric character and contain only alphanumeric characters, dots, underscores, or hyphens (maximum 128 characters)"),
        );
    }
    let mut written: BTreeMap<&str, &str> = BTreeMap::new();
    for k in data_keys(t) {
        if let Some(p) = check_data_key(&format!("{FIELD}.{}", k.field), k.key) {
            verdict.deny(
                "GK-ST",
                p.field,
                format!("secretTemplate.{} {}", k.field, p.message),
            );
        }
        if !k.written {
            continue;
        }
        if let Some(previous) = written.insert(k.key, k.field) {
            verdict.deny(
                "GK-ST",
                format!("{FIELD}.{}", k.field),
                format!(
                    "secretTemplate.{} and {previous} both use Secret data key {:?}; give each its own key",
                    k.field, k.key
                ),
            );
        }
    }
    for extra in t.additional_data.iter().flatten().map(|(k, _)| k) {
        if let Some(p) = check_data_key(&format!("{FIELD}.additionalData"), extra) {
            verdict.deny(
                "GK-ST",
                p.field,
                format!("secretTemplate.additionalData key {}", p.message),
            );
        } else if let Some(generated) = written.get(extra.as_str()) {
            verdict.deny(
                "GK-ST",
                format!("{FIELD}.additionalData"),
                format!("secretTemplate.additionalData key {extra:?} collides with {generated}; rename the additional entry"),
            );
        }
    }
}

/// GK-M: the generated Secret of an importing key takes the name of its import snapshot.
pub fn snapshot_collision(key: &GarageKey) -> bool {
    let imports_secret = key
        .spec
        .import_key
        .as_ref()
        .is_some_and(|i| i.secret_ref.is_some());
    let name = key
        .spec
        .secret_template
        .as_ref()
        .and_then(|t| t.name.as_deref())
        .filter(|n| !n.is_empty());
    imports_secret
        && name.is_some_and(|n| {
            n == import_snapshot_secret_name(key.metadata.name.as_deref().unwrap_or_default())
        })
}

/// GK-U3: the stored object already collided and the template is unchanged.
pub fn collision_tolerated(old: &GarageKey, new: &GarageKey) -> bool {
    snapshot_collision(old) && old.spec.secret_template == new.spec.secret_template
}
