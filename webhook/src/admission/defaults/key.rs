//! DEF-GK: the GarageKey defaulter, and the data-key names the key rules fall back to when a
//! field is empty (GK-IK, GK-ST).

use shared_types::garage_key::GarageKey;

/// Secret type of the generated credentials Secret.
pub const DEFAULT_SECRET_TYPE: &str = "Opaque";
/// Data key of the access key ID (generated Secret and imported Secret).
pub const DEFAULT_ACCESS_KEY_ID_KEY: &str = "access-key-id";
/// Data key of the secret access key (generated Secret and imported Secret).
pub const DEFAULT_SECRET_ACCESS_KEY_KEY: &str = "secret-access-key";
/// Data key of the S3 endpoint URL.
pub const DEFAULT_ENDPOINT_KEY: &str = "endpoint";
/// Data key of the S3 `host:port`.
pub const DEFAULT_HOST_KEY: &str = "host";
/// Data key of the endpoint scheme.
pub const DEFAULT_SCHEME_KEY: &str = "scheme";
/// Data key of the S3 region.
pub const DEFAULT_REGION_KEY: &str = "region";
/// Data key of the bucket name.
pub const DEFAULT_BUCKET_NAME_KEY: &str = "bucket";
/// Data key of the AWS shared-credentials file.
pub const DEFAULT_CREDENTIALS_FILE_KEY: &str = "credentials";
/// Profile of the AWS shared-credentials file.
pub const DEFAULT_CREDENTIALS_FILE_PROFILE: &str = "default";

fn fill(value: &mut Option<String>, default: &str) {
    if value.as_deref().is_none_or(str::is_empty) {
        *value = Some(default.to_owned());
    }
}

/// DEF-GK: `spec.name` from `metadata.name` when empty. When `spec.secretTemplate` is present
/// (it is never created): its `name` from `metadata.name`, its `type` and every data-key name
/// and the credentials profile from their defaults.
pub fn default_key(obj: &GarageKey) -> GarageKey {
    let mut out = obj.clone();
    let name = out.metadata.name.clone().filter(|n| !n.is_empty());
    if let Some(name) = &name {
        fill(&mut out.spec.name, name);
    }
    if let Some(t) = out.spec.secret_template.as_mut() {
        if let Some(name) = &name {
            fill(&mut t.name, name);
        }
        fill(&mut t.type_, DEFAULT_SECRET_TYPE);
        fill(&mut t.access_key_id_key, DEFAULT_ACCESS_KEY_ID_KEY);
        fill(&mut t.secret_access_key_key, DEFAULT_SECRET_ACCESS_KEY_KEY);
        fill(&mut t.endpoint_key, DEFAULT_ENDPOINT_KEY);
        fill(&mut t.host_key, DEFAULT_HOST_KEY);
        fill(&mut t.scheme_key, DEFAULT_SCHEME_KEY);
        fill(&mut t.region_key, DEFAULT_REGION_KEY);
        fill(&mut t.bucket_name_key, DEFAULT_BUCKET_NAME_KEY);
        fill(&mut t.credentials_file_key, DEFAULT_CREDENTIALS_FILE_KEY);
        fill(
            &mut t.credentials_file_profile,
            DEFAULT_CREDENTIALS_FILE_PROFILE,
        );
    }
    out
}
