//! `cargo xtask test`: every check CI runs, in the order that fails fastest.

use std::process::Command;

use anyhow::{Result, bail};

use crate::workspace_root;

pub fn run(args: &[&str]) -> Result<()> {
    if !args.is_empty() {
        bail!("usage: cargo xtask test");
    }
    step("format", &["fmt", "--all", "--", "--check"])?;
    crate::crds::run(&["--check"])?;
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
