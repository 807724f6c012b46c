//! Where the pinned `garage` binary lives.

use std::path::PathBuf;
use std::process::Command;

use crate::FixtureError;

/// The Garage version the fixture and the contract tests are pinned to.
pub const PINNED_GARAGE_VERSION: &str = "2.5.0";

/// Environment variable that overrides the binary location.
pub const GARAGE_BIN_ENV: &str = "GARAGE_BIN";

/// The folder `cargo xtask tools` installs that version into, under its tools cache: the
/// build with Garage's discovery features, as the released images are.
pub const PINNED_GARAGE_DIR: &str = "garage-v2.5.0-discovery";

/// Path of the `garage` binary: `$GARAGE_BIN`, else the cache `cargo xtask tools` fills
/// (`$GARAGE_OPERATOR_TOOLS`, else `$XDG_CACHE_HOME` or `~/.cache` then
/// `garage-operator/tools`, then `garage-v2.5.0-discovery/bin/garage`).
///
/// A missing binary is an error, never a reason to skip: a contract test that silently does
/// not run would let the client drift from the Garage it claims to speak to.
pub fn garage_binary() -> Result<PathBuf, FixtureError> {
    let (path, source_of_path) = match std::env::var_os(GARAGE_BIN_ENV) {
        Some(p) if !p.is_empty() => (PathBuf::from(p), "GARAGE_BIN"),
        _ => (default_path(), "the default tools cache"),
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(FixtureError::BinaryMissing {
            path,
            source_of_path,
        })
    }
}

fn default_path() -> PathBuf {
    if let Some(tools) = std::env::var_os("GARAGE_OPERATOR_TOOLS").filter(|v| !v.is_empty()) {
        return PathBuf::from(tools)
            .join(PINNED_GARAGE_DIR)
            .join("bin/garage");
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default()
                .join(".cache")
        });
    cache
        .join("garage-operator/tools")
        .join(PINNED_GARAGE_DIR)
        .join("bin/garage")
}

/// The OpenAPI document of the binary's Admin API, from its hidden `admin-api-schema`
/// subcommand.
pub fn admin_api_schema() -> Result<String, FixtureError> {
    let bin = garage_binary()?;
    let out = Command::new(&bin)
        .arg("admin-api-schema")
        .output()
        .map_err(|e| FixtureError::io(format!("running {} admin-api-schema", bin.display()), e))?;
    if !out.status.success() {
        return Err(FixtureError::Invalid(format!(
            "{} admin-api-schema exited with {}: {}",
            bin.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    String::from_utf8(out.stdout)
        .map_err(|e| FixtureError::Invalid(format!("admin-api-schema printed non-UTF-8: {e}")))
}
