//! SH-11: operator-reserved Garage environment variables, and SH-12: the
//! grandfathering of released entries on update.
//!
//! The operator renders garage.toml and pins the RPC, admin and metrics
//! secrets itself; an env entry or envFrom prefix that could override them
//! would let a manifest swap a node's identity or credentials unseen.

use k8s_openapi::api::core::v1::{EnvFromSource, EnvVar};

use super::Problem;

/// Environment names the operator owns.
pub const RESERVED_ENV: &[&str] = &[
    "GARAGE_CONFIG_FILE",
    "GARAGE_RPC_SECRET",
    "GARAGE_RPC_SECRET_FILE",
    "GARAGE_ADMIN_TOKEN",
    "GARAGE_ADMIN_TOKEN_FILE",
    "GARAGE_METRICS_TOKEN",
    "GARAGE_METRICS_TOKEN_FILE",
];

/// Most env entries a pod template may carry.
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

/// SH-11 on one pod template's env and envFrom; `field` is the template's
/// path (e.g. `spec.storage`).
pub fn check_env(
    field: &str,
    env: Option<&Vec<EnvVar>>,
    env_from: Option<&Vec<EnvFromSource>>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    let env = env.map(Vec::as_slice).unwrap_or_default();
    if env.len() > MAX_ENV {
        out.push(Problem::new(
            format!("{field}.env"),
            format!("may contain at most {MAX_ENV} entries; move the rest into a ConfigMap referenced by envFrom"),
        ));
    }
    for (i, e) in env.iter().enumerate() {
        if reserved(&e.name) {
            out.push(Problem::new(
                format!("{field}.env[{i}].name"),
                format!(
                    "{} is operator-reserved: the operator renders the Garage config and pins the RPC, admin and metrics secrets; remove this entry",
                    e.name
                ),
            ));
        }
    }
    for (i, src) in env_from
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if let Some(name) = unsafe_prefix(src) {
            let prefix = src.prefix.as_deref().unwrap_or_default();
            out.push(Problem::new(
                format!("{field}.envFrom[{i}].prefix"),
                format!(
                    "{prefix:?} could inject operator-reserved Garage environment variables such as {name}; set a prefix such as \"CUSTOM_\" that no reserved name starts with"
                ),
            ));
        }
    }
    out
}

/// The entries of `new` that SH-11 should still see, and whether an unsafe
/// one was let through: each unsafe entry must match a distinct unsafe `old`
/// entry byte for byte, else `refuse` names it. Matching consumes the old
/// entry, so a duplicated released entry cannot be multiplied.
fn keep_released<T: Clone + PartialEq>(
    old: &[T],
    new: &[T],
    is_unsafe: impl Fn(&T) -> bool,
    refuse: impl Fn(usize, &T) -> Problem,
) -> Result<(Vec<T>, bool), Problem> {
    let mut unmatched: Vec<&T> = old.iter().filter(|o| is_unsafe(o)).collect();
    let mut kept = Vec::with_capacity(new.len());
    let mut retained = false;
    for (i, entry) in new.iter().enumerate() {
        if !is_unsafe(entry) {
            kept.push(entry.clone());
            continue;
        }
        let pos = unmatched
            .iter()
            .position(|o| *o == entry)
            .ok_or_else(|| refuse(i, entry))?;
        unmatched.swap_remove(pos);
        retained = true;
    }
    Ok((kept, retained))
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

/// SH-12 on the template at `field`: lets unchanged released unsafe entries
/// stay (with a warning) and an overlong env shrink, refusing anything that
/// introduces or changes them. The returned lists are what SH-11 should then
/// see: a released entry only stays because it was already there.
pub fn grandfather_env(
    field: &str,
    old_env: &[EnvVar],
    old_env_from: &[EnvFromSource],
    new_env: &[EnvVar],
    new_env_from: &[EnvFromSource],
) -> Result<Grandfathered, Problem> {
    let mut warnings = Vec::new();
    let (mut env, env_retained) = keep_released(
        old_env,
        new_env,
        |e| reserved(&e.name),
        |i, e| {
            Problem::new(
                format!("{field}.env[{i}]"),
                format!(
                    "introduces or changes operator-reserved {}; a released unsafe entry may only remain byte-for-byte unchanged or be removed",
                    e.name
                ),
            )
        },
    )?;
    let (env_from, env_from_retained) = keep_released(
        old_env_from,
        new_env_from,
        |s| unsafe_prefix(s).is_some(),
        |i, s| {
            Problem::new(
                format!("{field}.envFrom[{i}]"),
                format!(
                    "introduces or changes a source capable of injecting operator-reserved Garage environment variables such as {}; a released unsafe entry may only remain byte-for-byte unchanged or be removed",
                    unsafe_prefix(s).unwrap_or_default()
                ),
            )
        },
    )?;
    let retained = env_retained || env_from_retained;
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
                    return Err(Problem::new(
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(names: &[&str]) -> Vec<EnvVar> {
        names
            .iter()
            .map(|n| EnvVar {
                name: (*n).to_string(),
                ..Default::default()
            })
            .collect()
    }

    fn from(prefix: &str) -> Vec<EnvFromSource> {
        vec![
            serde_json::from_value(json!({"prefix": prefix, "configMapRef": {"name": "x"}}))
                .unwrap(),
        ]
    }

    #[test]
    fn every_reserved_name_is_rejected() {
        for name in RESERVED_ENV {
            let p = check_env("spec.storage", Some(&env(&[name])), None);
            assert_eq!(p.len(), 1, "{name}");
            assert!(p[0].message.contains("operator-reserved"));
        }
        assert!(
            check_env(
                "s",
                Some(&env(&["GARAGE_ALLOW_WORLD_READABLE_SECRETS"])),
                None
            )
            .is_empty()
        );
    }

    #[test]
    fn unsafe_prefixes_and_long_lists_are_rejected() {
        for prefix in ["", "G", "GARAGE_", "GARAGE_RPC_", "GARAGE_ADMIN_TOKEN"] {
            assert_eq!(
                check_env("s", None, Some(&from(prefix))).len(),
                1,
                "{prefix:?}"
            );
        }
        assert!(check_env("s", None, Some(&from("CUSTOM_"))).is_empty());
        let many: Vec<String> = (0..257).map(|i| format!("V{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let p = check_env("s", Some(&env(&refs)), None);
        assert!(p[0].message.contains("at most 256"));
    }
}
