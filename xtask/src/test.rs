//! `cargo xtask test`: every check CI runs, in the order that fails fastest (the supply-chain
//! checks of `cargo xtask deny` among them), ending with a bounded fuzz run of the webhook, the
//! reconciler and the Admin API client (`cargo xtask fuzz`: 60 s for each of the webhook's
//! targets, 30 s for each of the others).
//!
//! The fuzz build shares nothing with the workspace's, so it runs beside the lints and the
//! tests at the lowest CPU priority: the end-to-end test waits on Garage and the control plane
//! for most of its half hour and leaves CPU idle, which the build takes instead of adding its
//! minutes after the tests. The fuzzing itself still runs alone, after every test has passed.

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
    let fuzz = crate::fuzz::Setup::new(&crate::fuzz::Options::default())?;
    let fuzz_build = fuzz.build_in_background()?;
    if let Err(err) = lint_and_test() {
        fuzz_build.stop();
        return Err(err);
    }
    fuzz_build.wait(&fuzz)?;
    fuzz.run_targets()?;
    println!("all checks passed");
    Ok(())
}

fn lint_and_test() -> Result<()> {
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
    step("tests", &["test", "--workspace"])
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
