//! SH-11: operator-reserved Garage environment variables.
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
        if RESERVED_ENV.contains(&e.name.as_str()) {
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
        let prefix = src.prefix.as_deref().unwrap_or_default();
        if let Some(name) = RESERVED_ENV.iter().find(|n| n.starts_with(prefix)) {
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
