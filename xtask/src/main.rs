//! Project automation: `cargo xtask <command>`.
//!
//! Every command a contributor or CI needs lives here so that the README's
//! two commands (`cargo xtask demo`, `cargo xtask test`) do everything on a
//! fresh machine.

mod bench;
mod bench_drain;
mod bench_reconciler;
mod bench_resources;
mod bench_rollout;
mod bench_webhook;
mod bundle;
mod crds;
mod demo;
mod deny;
mod fuzz;
mod image;
mod local_env;
mod record_go;
mod test;
mod tools;
mod up;

use anyhow::{Result, bail};

const USAGE: &str = "usage: cargo xtask <command>

commands:
  tools [--check]  build the pinned Kubernetes, etcd, garage and helm binaries once per version
  crds [--check]   write crds/*.yaml from the Rust types (--check: fail on drift)
  bundle [--check] render dist/install.yaml from the Helm chart (--check: fail on drift)
  fuzz [--seconds N] [--asan] [--stable]  run the fuzz targets (webhook, reconciler, Admin API client) for a bounded time
  deny             supply-chain checks of the dependency graph (cargo-deny: licenses, bans, sources, and advisories against a RustSec database copy)
  test             run every test: formatting, CRD and bundle drift, cargo-deny, lints, workspace tests, fuzzing
  demo             start a local cluster with 3 nodes and the CRDs, until Ctrl-C
  up [--nodes N] [--name NAME] [--no-build]  local cluster, N nodes (default 3) and the operator, until Ctrl-C; prints KUBECONFIG=, NODE and READY lines
  record-go --manager PATH --source DIR [--out DIR]  run the Go operator's manager on a local cluster and record the objects it makes (test data for taking over its clusters)
  bench webhook [--debug] [--musl] [--binary P] [--seconds N]  measure the garage-webhook binary over TLS (latency, throughput, RSS)
  bench reconciler [--debug] [--runs N] [--clusters LIST] [--real N] [--settle S]  apply -> Ready of garage-reconciler beside a by-hand floor, and its RSS with 1, 10 and 50 clusters
  bench resources [--debug] [--count N] [--in-flight N] [--settle S]  N GarageBuckets and N GarageKeys (default 1000) on one Garage cluster: time to all Ready, RSS, writes at steady state
  bench rollout [--debug] [--runs N] [--members LIST] [--only floor|operator]  the operator's storage rollout of 3 and 10 members beside a by-hand floor";

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    match args.first().map(String::as_str) {
        Some("crds") => crds::run(&rest),
        Some("bundle") => bundle::run(&rest),
        Some("test") => test::run(&rest),
        Some("deny") => deny::run(&rest),
        Some("tools") => tools::run(&rest),
        Some("fuzz") => fuzz::run(&rest),
        Some("demo") => demo::run(&rest),
        Some("up") => up::run(&rest),
        Some("bench") => bench::run(&rest),
        Some("record-go") => record_go::run(&rest),
        Some("help") | Some("--help") | Some("-h") | None => {
            println!("{USAGE}");
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n\n{USAGE}"),
    }
}

/// The workspace root, found from this crate's manifest directory.
pub fn workspace_root() -> std::path::PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The cargo target directory the workspace builds into (`CARGO_TARGET_DIR` when set).
pub fn target_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}
