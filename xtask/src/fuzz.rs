//! `cargo xtask fuzz [--seconds N]`: runs every cargo-fuzz target of the
//! webhook for a bounded time, seeded with the sample manifests.
//!
//! Fuzzing needs a nightly toolchain (sanitizer flags) and cargo-fuzz; both
//! are checked first and a missing one is an error that says how to get it.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::workspace_root;

/// Targets in `webhook/fuzz/fuzz_targets`.
const TARGETS: &[&str] = &["convert_review"];

pub fn run(args: &[&str]) -> Result<()> {
    let seconds = match args {
        [] => 60,
        ["--seconds", n] => n.parse().context("--seconds takes a whole number")?,
        _ => bail!("usage: cargo xtask fuzz [--seconds N]"),
    };
    let nightly = Command::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !nightly {
        bail!("fuzzing needs a nightly toolchain: rustup toolchain install nightly");
    }
    let has_cargo_fuzz = Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_cargo_fuzz {
        println!("==> installing cargo-fuzz");
        let status = Command::new("cargo")
            .args(["install", "cargo-fuzz", "--locked"])
            .status()?;
        if !status.success() {
            bail!("cargo install cargo-fuzz failed; install it by hand and rerun");
        }
    }
    let fuzz_dir = workspace_root().join("webhook/fuzz");
    for target in TARGETS {
        let corpus = fuzz_dir.join("corpus").join(target);
        seed(&corpus)?;
        println!("==> fuzzing {target} for {seconds}s");
        let status = Command::new("cargo")
            .args(["+nightly", "fuzz", "run", target])
            .arg(&corpus)
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .current_dir(&fuzz_dir)
            .status()?;
        if !status.success() {
            bail!(
                "fuzz target {target} found a failure; the input is under {}",
                fuzz_dir.join("artifacts").join(target).display()
            );
        }
    }
    Ok(())
}

/// Writes the sample GarageClusters, alone and inside a ConversionReview, as
/// starting inputs.
fn seed(corpus: &Path) -> Result<()> {
    std::fs::create_dir_all(corpus)?;
    let samples = workspace_root().join("tests/fixtures/upstream-samples");
    let mut objects = Vec::new();
    for entry in std::fs::read_dir(&samples)? {
        let path = entry?.path();
        let text = std::fs::read_to_string(&path)?;
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
            .with_context(|| format!("parsing {}", path.display()))?;
        objects.extend(docs.into_iter().filter(|d| d["kind"] == "GarageCluster"));
    }
    for (index, object) in objects.iter().enumerate() {
        std::fs::write(
            corpus.join(format!("object-{index}.json")),
            object.to_string(),
        )?;
        let review = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {
                "uid": format!("seed-{index}"),
                "desiredAPIVersion": if object["apiVersion"] == "garage.rajsingh.info/v1beta1" {
                    "garage.rajsingh.info/v1beta2"
                } else {
                    "garage.rajsingh.info/v1beta1"
                },
                "objects": [object],
            }
        });
        std::fs::write(
            corpus.join(format!("review-{index}.json")),
            review.to_string(),
        )?;
    }
    Ok(())
}
