//! `cargo xtask bench ...`: picks the benchmark by its first argument.

use std::os::unix::process::CommandExt as _;
use std::process::Command;

use anyhow::{Context as _, Result, bail};

const USAGE: &str = "usage:
  cargo xtask bench webhook [--debug] [--musl] [--binary P] [--seconds N]
  cargo xtask bench reconciler [--debug] [--no-image-env] [--runs N] [--clusters LIST] [--real N] [--settle S]
  cargo xtask bench reconciler --pools [--debug] [--pool-nodes N]
  cargo xtask bench resources [--debug] [--no-image-env] [--count N] [--in-flight N] [--settle S] [--timeout S]
  cargo xtask bench drain [--debug] [--runs N] [--objects N] [--quiet S] [--only floor|operator]
  cargo xtask bench rollout [--debug] [--runs N] [--members LIST] [--only floor|operator]";

/// Runs the benchmark `args` names.
pub fn run(args: &[&str]) -> Result<()> {
    match args.split_first() {
        Some((&"webhook", _)) if cfg!(debug_assertions) => optimised(args),
        Some((&"webhook", rest)) => crate::bench_webhook::run(rest),
        Some((&"reconciler", rest)) => crate::bench_reconciler::run(rest),
        Some((&"resources", rest)) => crate::bench_resources::run(rest),
        Some((&"drain", rest)) => crate::bench_drain::run(rest),
        Some((&"rollout", rest)) => crate::bench_rollout::run(rest),
        _ => bail!("{USAGE}"),
    }
}

/// Runs a bench's async body on a multi-threaded runtime.
pub(crate) fn block_on(bench: impl std::future::Future<Output = Result<()>>) -> Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench)
}

/// The value after the flag `name` in `rest`, as a whole number; `usage` goes with the error.
pub(crate) fn number(
    rest: &mut std::slice::Iter<'_, &str>,
    name: &str,
    usage: &str,
) -> Result<u64> {
    rest.next()
        .with_context(|| format!("{name} needs a value\n\n{usage}"))?
        .parse()
        .with_context(|| format!("{name} needs a whole number\n\n{usage}"))
}

/// Runs `cargo xtask bench <args>` again as an optimised build of xtask (profile `loadgen`). A
/// debug-built load generator spends two to three times the server's CPU per request, so at
/// 2,000 requests/s it would take one of the machine's two cores from what is measured.
fn optimised(args: &[&str]) -> Result<()> {
    let root = crate::workspace_root();
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--profile", "loadgen", "-p", "xtask"])
        .current_dir(&root)
        .status()
        .context("running cargo build for the load generator")?;
    if !status.success() {
        bail!("cargo build --profile loadgen -p xtask failed");
    }
    let binary = crate::target_dir().join("loadgen").join("xtask");
    let error = Command::new(&binary).arg("bench").args(args).exec();
    Err(error).with_context(|| format!("running {}", binary.display()))
}
