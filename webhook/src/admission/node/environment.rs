//! Operator-reserved Garage environment (SH-11) and the grandfathering of
//! released entries on update (SH-12), applied to GarageNode `spec`.
//!
//! Private stand-in for the shared helper in `admission/shared` (not yet
//! available when this was written).

use super::Finding;
use k8s_openapi::api::core::v1::{EnvFromSource, EnvVar};

/// Names whose values the operator controls; overriding them would let a pod
/// run with another identity or credentials than the one it is drained as.
pub const RESERVED_ENV: &[&str] = &[
    "GARAGE_CONFIG_FILE",
    "GARAGE_RPC_SECRET",
    "GARAGE_RPC_SECRET_FILE",
    "GARAGE_ADMIN_TOKEN",
    "GARAGE_ADMIN_TOKEN_FILE",
    "GARAGE_METRICS_TOKEN",
    "GARAGE_METRICS_TOKEN_FILE",
];

/// Most entries `env` may have.
pub const MAX_ENV: usize = 256;

fn reserved(name: &str) -> bool {
    RESERVED_ENV.contains(&name)
}

/// The first reserved name an envFrom prefix could produce, if any. An empty
/// prefix passes every key of the source through unchanged.
fn unsafe_prefix(source: &EnvFromSource) -> Option<&'static str> {
    let prefix = source.prefix.as_deref().unwrap_or_default();
    RESERVED_ENV.iter().copied().find(|n| n.starts_with(prefix))
}

/// SH-11 on `field` (`spec` for a GarageNode): the first problem found.
pub fn check(field: &str, env: &[EnvVar], env_from: &[EnvFromSource]) -> Option<Finding> {
    if env.len() > MAX_ENV {
        return Some(Finding::new(
            format!("{field}.env"),
            format!(
                "may contain at most {MAX_ENV} entries; remove entries or move them into a ConfigMap referenced by envFrom"
            ),
        ));
    }
    if let Some((i, e)) = env.iter().enumerate().find(|(_, e)| reserved(&e.name)) {
        return Some(Finding::new(
            format!("{field}.env[{i}].name"),
            format!(
                "{} is operator-reserved: the operator renders the Garage configuration and pins its RPC, admin and metrics secrets; remove this entry",
                e.name
            ),
        ));
    }
    for (i, source) in env_from.iter().enumerate() {
        if let Some(name) = unsafe_prefix(source) {
            return Some(Finding::new(
                format!("{field}.envFrom[{i}].prefix"),
                format!(
                    "{:?} could inject operator-reserved Garage environment variables such as {name}; set a prefix such as \"CUSTOM_\" that no reserved name starts with",
                    source.prefix.as_deref().unwrap_or_default()
                ),
            ));
        }
    }
    None
}

/// Result of SH-12: the validation copy's env lists and the warnings.
pub struct Grandfathered {
    /// Env of the validation copy (matched released unsafe entries removed).
    pub env: Vec<EnvVar>,
    /// EnvFrom of the validation copy.
    pub env_from: Vec<EnvFromSource>,
    /// Warnings to show.
    pub warnings: Vec<String>,
}

/// SH-12: lets unchanged released unsafe entries stay (with a warning) and an
/// overlong env shrink, refusing anything that introduces or changes them.
pub fn grandfather(
    field: &str,
    old_env: &[EnvVar],
    old_env_from: &[EnvFromSource],
    new_env: &[EnvVar],
    new_env_from: &[EnvFromSource],
) -> Result<Grandfathered, Finding> {
    let mut warnings = Vec::new();
    let mut unmatched: Vec<&EnvVar> = old_env.iter().filter(|e| reserved(&e.name)).collect();
    let mut env = Vec::with_capacity(new_env.len());
    let mut retained = false;
    for (i, e) in new_env.iter().enumerate() {
        if !reserved(&e.name) {
            env.push(e.clone());
            continue;
        }
        match unmatched.iter().position(|o| *o == e) {
            Some(pos) => {
                unmatched.swap_remove(pos);
                retained = true;
            }
            None => {
                return Err(Finding::new(
                    format!("{field}.env[{i}]"),
                    format!(
                        "introduces or changes operator-reserved {}; a released unsafe entry may only remain byte-for-byte unchanged or be removed",
                        e.name
                    ),
                ));
            }
        }
    }
    let mut unmatched_from: Vec<&EnvFromSource> = old_env_from
        .iter()
        .filter(|s| unsafe_prefix(s).is_some())
        .collect();
    let mut env_from = Vec::with_capacity(new_env_from.len());
    for (i, s) in new_env_from.iter().enumerate() {
        let Some(name) = unsafe_prefix(s) else {
            env_from.push(s.clone());
            continue;
        };
        match unmatched_from.iter().position(|o| *o == s) {
            Some(pos) => {
                unmatched_from.swap_remove(pos);
                retained = true;
            }
            None => {
                return Err(Finding::new(
                    format!("{field}.envFrom[{i}]"),
                    format!(
                        "introduces or changes a source capable of injecting operator-reserved Garage environment variables such as {name}; a released unsafe entry may only remain byte-for-byte unchanged or be removed"
                    ),
                ));
            }
        }
    }
    if retained {
        warnings.push(format!(
            "{field} retains unchanged released environment entries that could override operator-reserved Garage settings; the operator ignores them and they should be removed"
        ));
    }
    if old_env.len() > MAX_ENV && new_env.len() > MAX_ENV {
        let mut pool: Vec<&EnvVar> = old_env.iter().collect();
        for e in new_env {
            match pool.iter().position(|o| *o == e) {
                Some(pos) => {
                    pool.swap_remove(pos);
                }
                None => {
                    return Err(Finding::new(
                        format!("{field}.env"),
                        format!(
                            "exceeds the supported {MAX_ENV}-entry limit and may only shrink by removing byte-for-byte unchanged entries"
                        ),
                    ));
                }
            }
        }
        // Every entry is an unchanged released one, so the copy may drop the
        // excess: that is how the length check is suppressed for it.
        env.truncate(MAX_ENV);
        warnings.push(format!(
            "{field}.env exceeds the supported {MAX_ENV}-entry limit; this non-expanding update is temporarily tolerated so entries can be removed"
        ));
    }
    Ok(Grandfathered {
        env,
        env_from,
        warnings,
    })
}
