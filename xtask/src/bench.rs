//! `cargo xtask bench ...`: picks the benchmark by its first argument.

use anyhow::{Result, bail};

const USAGE: &str = "usage:
  cargo xtask bench webhook [--debug] [--musl] [--seconds N]
  cargo xtask bench reconciler [--debug] [--runs N] [--clusters LIST] [--real N] [--settle S]";

/// Runs the benchmark `args` names.
pub fn run(args: &[&str]) -> Result<()> {
    match args.split_first() {
        Some((&"webhook", rest)) => crate::bench_webhook::run(rest),
        Some((&"reconciler", rest)) => crate::bench_reconciler::run(rest),
        _ => bail!("{USAGE}"),
    }
}
