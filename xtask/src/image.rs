//! What the shipped image sets around its binaries, so that benchmarks run them as they ship.

use std::path::Path;

use anyhow::{Context, Result};

/// The `ENV` settings of the image (`Dockerfile`, `ENV KEY=VALUE` lines), in order.
pub fn env(root: &Path) -> Result<Vec<(String, String)>> {
    let dockerfile = root.join("Dockerfile");
    let text = std::fs::read_to_string(&dockerfile)
        .with_context(|| format!("reading {}", dockerfile.display()))?;
    Ok(parse_env(&text))
}

fn parse_env(dockerfile: &str) -> Vec<(String, String)> {
    dockerfile
        .lines()
        .filter_map(|l| l.strip_prefix("ENV "))
        .filter_map(|kv| kv.trim().split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_lines_are_read_in_order_and_others_ignored() {
        let text = "FROM x\nENV A=1\nRUN ENV B=2\nENV  C=x=y \nUSER 65532\n";
        assert_eq!(
            parse_env(text),
            vec![("A".into(), "1".into()), ("C".into(), "x=y".into())]
        );
    }

    #[test]
    fn the_workspace_dockerfile_sets_one_malloc_arena() {
        let env = env(&crate::workspace_root()).unwrap();
        assert!(
            env.iter()
                .any(|(k, v)| k == "GLIBC_TUNABLES" && v.contains("arena_max=1")),
            "{env:?}"
        );
    }
}
