//! AT-C5: the generated bootstrap Secret: a valid name, labels and annotations the API server
//! accepts, and two distinct valid data keys.

use shared_types::garage_admin_token::GarageAdminToken;

use crate::admission::Verdict;
use crate::admission::shared::deny_all;
use crate::admission::shared::secret_data::{check_data_key, check_secret_template};

/// Data key of the bearer token when `secretTemplate.tokenKey` is empty.
pub const DEFAULT_TOKEN_KEY: &str = "admin-token";
/// Data key of the Admin API URL when `secretTemplate.endpointKey` is empty.
pub const DEFAULT_ENDPOINT_KEY: &str = "admin-endpoint";

fn or<'a>(value: Option<&'a str>, default: &'a str) -> &'a str {
    value.filter(|v| !v.is_empty()).unwrap_or(default)
}

/// The generated Secret's name and the data key of the token, as the reconciler writes them.
pub fn secret_identity(token: &GarageAdminToken) -> (&str, &str) {
    let template = token.spec.secret_template.as_ref();
    (
        or(
            template.and_then(|t| t.name.as_deref()),
            token.metadata.name.as_deref().unwrap_or_default(),
        ),
        or(
            template.and_then(|t| t.token_key.as_deref()),
            DEFAULT_TOKEN_KEY,
        ),
    )
}

/// AT-C5 on `spec.secretTemplate`.
pub fn check(token: &GarageAdminToken, verdict: &mut Verdict) {
    let Some(t) = &token.spec.secret_template else {
        return;
    };
    deny_all(
        verdict,
        "AT-C5",
        check_secret_template(
            "spec.secretTemplate",
            t.name.as_deref(),
            t.labels.as_ref(),
            t.annotations.as_ref(),
        ),
    );
    let (_, token_key) = secret_identity(token);
    let endpoint_key = or(t.endpoint_key.as_deref(), DEFAULT_ENDPOINT_KEY);
    if token_key == endpoint_key {
        verdict.deny(
            "AT-C5",
            "spec.secretTemplate.endpointKey",
            format!("secretTemplate.tokenKey and endpointKey must be different (both are {token_key:?}); give each its own data key"),
        );
    }
    for (field, key) in [("tokenKey", token_key), ("endpointKey", endpoint_key)] {
        if let Some(p) = check_data_key(&format!("spec.secretTemplate.{field}"), key) {
            verdict.deny(
                "AT-C5",
                p.field,
                format!("secretTemplate.{field} {}", p.message),
            );
        }
    }
}
