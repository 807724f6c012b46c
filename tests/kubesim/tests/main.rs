//! kubesim's end-to-end tests: one real control plane (localcluster) and
//! one KubeSim with three nodes, every case run in turn against them.
//!
//! `cargo test -p kubesim --test kubesim [-- <name filter>...]`
//!
//! This binary has its own runner (`harness = false`) because the cluster
//! is expensive to start and the cases share it; each case uses its own
//! namespace. A missing tool is a failure, never a skip.

// Test code: a panic is a failed case with a message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cases;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use kubesim::{KubeSim, NodeSpec, Options};
use localcluster::LocalCluster;
use localcluster::tools::Tool;

/// No case may take longer than this.
const CASE_TIMEOUT: Duration = Duration::from_secs(240);

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("kubesim tests could not start: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> anyhow::Result<bool> {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let selected: Vec<_> = cases::ALL
        .iter()
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        .collect();
    if selected.is_empty() {
        eprintln!(
            "no case matches {filters:?}; cases: {:?}",
            cases::ALL.iter().map(|c| c.0).collect::<Vec<_>>()
        );
        return Ok(false);
    }
    let begin = Instant::now();
    let cluster = LocalCluster::start(localcluster::Options {
        name: "kubesim-tests".into(),
        ..localcluster::Options::default()
    })
    .await?;
    println!(
        "control plane up in {:.1}s ({})",
        cluster.started_in().as_secs_f64(),
        cluster.dir().display()
    );
    let client = cluster.client().await?;
    // The garage case requires the binary itself and fails with the
    // `cargo xtask tools` hint when it is missing.
    let options = Options::new(
        cluster.dir().join("kubesim"),
        Tool::Garage.path(),
        cluster.server(),
        cluster.ca_pem(),
    )
    .node(
        NodeSpec::new("node-a")
            .zone("zone-a")
            .label("kubesim.test/role", "storage"),
    )
    .node(
        NodeSpec::new("node-b")
            .zone("zone-b")
            .label("kubesim.test/role", "storage"),
    )
    .node(NodeSpec::new("node-c").zone("zone-c"))
    .workspace_image(
        "kubesim-probe-target",
        env!("CARGO_BIN_EXE_kubesim-probe-target"),
    );
    let sim = KubeSim::start(client.clone(), options).await?;
    println!("kubesim up after {:.1}s", begin.elapsed().as_secs_f64());
    let ctx = cases::Ctx { client, sim };
    let mut failed = Vec::new();
    for (name, case) in selected {
        let start = Instant::now();
        let result = tokio::time::timeout(CASE_TIMEOUT, case(&ctx)).await;
        let seconds = start.elapsed().as_secs_f64();
        match result {
            Ok(Ok(())) => println!("PASS {name} ({seconds:.1}s)"),
            Ok(Err(e)) => {
                println!("FAIL {name} ({seconds:.1}s): {e:#}");
                failed.push(*name);
            }
            Err(_) => {
                println!(
                    "FAIL {name} ({seconds:.1}s): timed out after {}s",
                    CASE_TIMEOUT.as_secs()
                );
                failed.push(*name);
            }
        }
    }
    let cases::Ctx { sim, .. } = ctx;
    sim.shutdown().await;
    drop(cluster);
    if failed.is_empty() {
        println!("all cases passed in {:.1}s", begin.elapsed().as_secs_f64());
        Ok(true)
    } else {
        println!("{} case(s) failed: {failed:?}", failed.len());
        Ok(false)
    }
}
