//! `cargo xtask deny`: the supply-chain checks of the dependency graph with cargo-deny,
//! configured by `deny.toml` at the workspace root. `cargo xtask test` runs it too.
//!
//! - `licenses`, `bans` and `sources` always run, on `Cargo.lock` as it is (`--locked`); cargo
//!   downloads from crates.io any crate of the graph its cache lacks, as a fresh machine needs.
//! - `advisories` need the RustSec advisory database, which cargo-deny clones from github.com;
//!   no package registry this project can reach ships it. It is checked, offline, when a
//!   database is present where `cargo deny fetch` puts it (`$CARGO_HOME/advisory-dbs`), for
//!   example copied from a machine that reaches github.com (cargo-deny refuses one older than
//!   90 days). Without one the step says so, in a line of its own, and why; it never pretends
//!   to have checked.
//!
//! cargo-deny is installed from crates.io when missing, pinned, into the tool cache
//! (`cargo-deny-<version>/bin` beside the other tools), so reruns are free and `cargo clean`
//! keeps it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use localcluster::tools::cache_dir;

use crate::workspace_root;

/// The cargo-deny release installed when none is cached; pinned so CI runs the same checks.
const CARGO_DENY_VERSION: &str = "0.20.2";

pub fn run(args: &[&str]) -> Result<()> {
    if !args.is_empty() {
        bail!("usage: cargo xtask deny");
    }
    check()
}

/// Runs every check this machine can run; see the module documentation.
pub fn check() -> Result<()> {
    let deny = ensure_cargo_deny()?;
    let began = Instant::now();
    cargo_deny(&deny, &["licenses", "bans", "sources"], false)?;
    match advisory_db() {
        Some(db) => {
            println!("==> advisories: against {}", db.display());
            // Offline: cargo-deny would otherwise try to update the database from github.com.
            cargo_deny(&deny, &["advisories"], true)?;
        }
        None => println!(
            "==> advisories NOT checked: no RustSec advisory database under {} (cargo-deny \
             clones it from github.com, which this project's machines and CI cannot reach, \
             and no registry they reach ships it). To check them, run `cargo deny fetch` \
             where github.com is reachable and copy its advisory-dbs folder there.",
            advisory_root().display()
        ),
    }
    println!(
        "cargo-deny checks passed in {:.0} s",
        began.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Where the pinned cargo-deny lives in the tool cache.
fn install_root() -> PathBuf {
    cache_dir().join(format!("cargo-deny-{CARGO_DENY_VERSION}"))
}

fn ensure_cargo_deny() -> Result<PathBuf> {
    let root = install_root();
    let binary = root.join("bin").join("cargo-deny");
    if binary.is_file() {
        return Ok(binary);
    }
    println!("==> installing cargo-deny {CARGO_DENY_VERSION} from crates.io");
    let began = Instant::now();
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["install", "cargo-deny", "--locked", "--version"])
        .arg(CARGO_DENY_VERSION)
        .arg("--root")
        .arg(&root)
        .status()
        .context("running cargo install cargo-deny")?;
    if !status.success() || !binary.is_file() {
        bail!(
            "cargo install cargo-deny --locked --version {CARGO_DENY_VERSION} --root {} \
             failed; the supply-chain checks need it (it builds from crates.io)",
            root.display()
        );
    }
    println!(
        "installed cargo-deny in {:.0} s",
        began.elapsed().as_secs_f64()
    );
    Ok(binary)
}

/// `cargo-deny check <checks>` on the workspace with `Cargo.lock` as it is, `offline` or not;
/// the graph of how a reported crate is reached is left out (cargo-deny prints it when run by
/// hand).
fn cargo_deny(binary: &Path, checks: &[&str], offline: bool) -> Result<()> {
    println!("==> cargo deny check {}", checks.join(" "));
    let root = workspace_root();
    let mut command = Command::new(binary);
    command.arg("--manifest-path").arg(root.join("Cargo.toml"));
    if offline {
        command.arg("--offline");
    }
    let status = command
        .args(["--locked", "check", "--hide-inclusion-graph"])
        .args(checks)
        .current_dir(&root)
        .status()
        .context("running cargo-deny")?;
    if !status.success() {
        bail!(
            "cargo deny check {} failed (deny.toml says what is allowed)",
            checks.join(" ")
        );
    }
    Ok(())
}

/// cargo-deny's default database folder, `$CARGO_HOME/advisory-dbs`.
fn advisory_root() -> PathBuf {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"));
    cargo_home.join("advisory-dbs")
}

/// The folder cargo-deny opens for its default database (the RustSec advisory-db): it names a
/// checkout after the URL's last segment and a hash of the URL, and this is the name
/// `cargo deny fetch` gives it (cargo-deny 0.20 logs it with `-L debug`).
const DEFAULT_DB_FOLDER: &str = "advisory-db-3157b0e258782691";

/// The RustSec database, when a git checkout of it is in place.
fn advisory_db() -> Option<PathBuf> {
    let db = advisory_root().join(DEFAULT_DB_FOLDER);
    (db.join("crates").is_dir() && db.join(".git").exists()).then_some(db)
}
