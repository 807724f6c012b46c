//! `cargo xtask test`: every check CI runs, in the order that fails fastest (the supply-chain
//! checks of `cargo xtask deny` among them), ending with a bounded fuzz run of the webhook, the
//! reconciler and the Admin API client (`cargo xtask fuzz`: 60 s for each of the webhook's
//! targets, 30 s for each of the others).

use std::process::Command;

use anyhow::{Result, bail};

use crate::workspace_root;

pub fn run(args: &[&str]) -> Result<()> {
    if !args.is_empty() {
        bail!("usage: cargo xtask test");
    }
    // The cluster tests need the pinned tools; building them is a no-op once cached.
    crate::tools::run(&[])?;
    step("format", &["fmt", "--all", "--", "--check"])?;
    crate::crds::run(&["--check"])?;
    crate::bundle::run(&["--check"])?;
    crate::deny::check()?;
    step(
        "lint",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    step("tests", &["test", "--workspace"])?;
    // Last: it only finds what the tests missed, and its build, which shares nothing with the
    // workspace's, is paid after every faster check has passed.
    crate::fuzz::fuzz(&crate::fuzz::Options::default())?;
    println!("all checks passed");
    Ok(())
}

fn step(name: &str, cargo_args: &[&str]) -> Result<()> {
    println!("==> {name}: cargo {}", cargo_args.join(" "));
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(cargo_args)
        .current_dir(workspace_root())
        .status()?;
    if !status.success() {
        bail!("{name} failed (cargo {})", cargo_args.join(" "));
    }
    Ok(())
}
