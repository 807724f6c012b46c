//! `cargo xtask bench drain`: how long the operator's prepared drain of one storage member
//! takes (a four-member GarageCluster scaled to three), beside the floor of the same drain done
//! by hand through the Admin API on four plain garage processes.
//!
//! The operator side is real: a local control plane, kubesim running the storage pods as real
//! garage processes, and the `garage-reconciler` binary as a child process (the parts of
//! `bench reconciler`), with `GARAGE_DRAIN_QUIET_SECONDS` set to the bench's quiet window. Both
//! sides hold the same objects and must read every one back byte-identical afterwards. Figures
//! are printed, never asserted: the machine is shared and every number depends on what else
//! runs.

mod barrier;
mod floor;
pub(crate) mod milestones;
mod objects;
mod operator;
mod stage;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};

use crate::bench_reconciler::{list, machine, median, process, secs};
use floor::{FloorRun, Waits};
use milestones::{ANNOTATED, COMPLETED, Milestones, NODE_GONE, STEPS};
use stage::Stage;

const USAGE: &str = "usage: cargo xtask bench drain [--debug] [--runs N] [--objects N] [--quiet S] [--only floor|operator]

  --debug        run the debug build of garage-reconciler (faster to build, slower to run)
  --runs N       drains by hand and by the operator (default 3 each); every operator run
                 creates a fresh cluster and deletes it afterwards
  --objects N    objects written before each drain (default 1000, 1 to 64 KiB each)
  --quiet S      GARAGE_DRAIN_QUIET_SECONDS of the reconciler and the floor's configured
                 window (default 10). The operator never waits less than its floors with a
                 live source (630 s of quiet, 640 s from the role removal), and neither does
                 the floor; the floor also reports when the conditions had held for S alone
  --only WHICH   run only `floor` or only `operator` (a run of either takes over 20 minutes)";

/// Storage members before the drain; the last one is drained.
const MEMBERS: usize = 4;

/// What the command line asks for.
struct Opts {
    release: bool,
    runs: usize,
    objects: usize,
    quiet: Duration,
    /// Run the floor.
    floor: bool,
    /// Run the operator.
    operator: bool,
}

/// Entry point of `cargo xtask bench drain`.
pub fn run(args: &[&str]) -> Result<()> {
    let mut opts = Opts {
        release: true,
        runs: 3,
        objects: 1000,
        quiet: Duration::from_secs(10),
        floor: true,
        operator: true,
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut number = |name: &str| crate::bench::number(&mut rest, name, USAGE);
        match *arg {
            "--debug" => opts.release = false,
            "--runs" => opts.runs = usize::try_from(number("--runs")?)?,
            "--objects" => opts.objects = usize::try_from(number("--objects")?)?,
            "--quiet" => opts.quiet = Duration::from_secs(number("--quiet")?),
            "--only" => match rest.next().copied() {
                Some("floor") => opts.operator = false,
                Some("operator") => opts.floor = false,
                _ => bail!("--only needs `floor` or `operator`\n\n{USAGE}"),
            },
            other => bail!("unknown argument `{other}`\n\n{USAGE}"),
        }
    }
    if opts.runs == 0 || opts.objects == 0 {
        bail!("--runs and --objects must be at least 1\n\n{USAGE}");
    }
    crate::bench::block_on(bench(opts))
}

async fn bench(opts: Opts) -> Result<()> {
    let binary = crate::bench_reconciler::build(opts.release)?;
    let mut env = crate::image::env(&crate::workspace_root())?;
    env.push((
        "GARAGE_DRAIN_QUIET_SECONDS".into(),
        opts.quiet.as_secs().to_string(),
    ));
    for (key, value) in &env {
        println!("garage-reconciler runs with {key}={value}");
    }
    println!(
        "machine: {}; load average {} at start",
        machine(),
        process::load_average()
    );
    let objects = objects::generate(opts.objects);
    let bytes: usize = objects.iter().map(|(_, b)| b.len()).sum();
    println!(
        "{} objects, {:.1} MiB in all; quiet window {} s",
        objects.len(),
        bytes as f64 / (1024.0 * 1024.0),
        opts.quiet.as_secs()
    );
    let waits = Waits::new(opts.quiet);
    let floor = if opts.floor {
        floor_side(&opts, &objects, waits).await?
    } else {
        Vec::new()
    };
    let operator = if opts.operator {
        operator_side(&opts, &binary, &env, &objects).await?
    } else {
        Vec::new()
    };
    summary(&floor, &operator, opts.quiet, waits)
}

/// Every floor run, printed as it ends.
async fn floor_side(
    opts: &Opts,
    objects: &[(String, Vec<u8>)],
    waits: Waits,
) -> Result<Vec<FloorRun>> {
    let runs = opts.runs;
    println!(
        "\nfloor: {MEMBERS} garage processes (tests/garage-fixture, replication factor 3) with a \
         layout and the objects; node 3's role removed, a Blocks repair launched on every node, \
         the Admin API polled every 20 ms until the proof conditions held, then every second \
         until they had held for {} s and {} s had passed since the removal, the operator's \
         waits ({runs} runs; load {})",
        waits.quiet.as_secs(),
        waits.gate.as_secs(),
        process::load_average()
    );
    let mut floor = Vec::new();
    for run in 1..=runs {
        let f = floor::run_once(objects, opts.quiet).await?;
        print_floor(run, runs, &f);
        floor.push(f);
    }
    Ok(floor)
}

/// Every operator run on one control plane, a fresh cluster each; the control plane is
/// stopped whatever happened.
async fn operator_side(
    opts: &Opts,
    binary: &Path,
    env: &[(String, String)],
    objects: &[(String, Vec<u8>)],
) -> Result<Vec<Milestones>> {
    let runs = opts.runs;
    let dir = crate::target_dir().join("tmp").join("drain-bench");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    println!("\nstarting a local control plane and kubesim ({MEMBERS} nodes in {MEMBERS} zones)…");
    let mut stage = Stage::start(binary, env, &dir.join("garage-reconciler.log")).await?;
    println!(
        "\noperator: a {MEMBERS}-member GarageCluster created, Ready, the objects written, then \
         spec.storage.replicas patched to 3; the cluster, the drained GarageNode and the pods \
         polled every 100 ms ({runs} runs, a fresh cluster each, deleted after it; load {})",
        process::load_average()
    );
    let mut operator = Vec::new();
    let mut result = Ok(());
    for run in 1..=runs {
        println!("  run {run}/{runs}:");
        match operator::run_once(&mut stage, &format!("drain-{run}"), objects).await {
            Ok(m) => operator.push(m),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    println!("stopping kubesim and the local control plane…");
    stage.stop().await;
    result.map(|()| operator)
}

fn print_floor(run: usize, runs: usize, f: &FloorRun) {
    let at = |d: Option<Duration>| d.map_or("not seen".into(), |d| format!("{:.2} s", secs(d)));
    println!(
        "  floor run {run}/{runs}: removal applied {:.2} s, repairs launched {:.2} s, history \
         settled {}, repairs done {}, conditions held from {:.2} s ({} restart(s)), held for \
         the configured window alone {}, done with the operator's waits {:.2} s",
        secs(f.applied),
        secs(f.launched),
        at(f.settled),
        at(f.repaired),
        secs(f.held),
        f.restarts,
        at(f.bare),
        secs(f.done)
    );
}

fn summary(
    floor: &[FloorRun],
    operator: &[Milestones],
    quiet: Duration,
    waits: Waits,
) -> Result<()> {
    let step = |i: usize| -> Result<Vec<Duration>> {
        operator
            .iter()
            .map(|m| m.at[i].with_context(|| format!("a run never showed: {}", STEPS[i])))
            .collect()
    };
    let drained: Vec<Duration> = operator
        .iter()
        .map(|m| m.annotated_to_completed().context("a run never completed"))
        .collect::<Result<_>>()?;
    let done: Vec<Duration> = floor.iter().map(|f| f.done).collect();
    let bare: Vec<Duration> = floor
        .iter()
        .map(|f| {
            f.bare
                .context("a floor run never held for the configured window")
        })
        .collect::<Result<_>>()?;
    let rows = [
        ("floor, the operator's waits", done.clone()),
        ("floor, configured window alone", bare.clone()),
        ("operator annotation -> completedAt", drained.clone()),
        ("operator patch -> annotation", step(ANNOTATED)?),
        ("operator patch -> completedAt", step(COMPLETED)?),
        ("operator patch -> GarageNode gone", step(NODE_GONE)?),
    ];
    println!(
        "\nsummary (configured quiet window {} s; the operator's waits with a live source: {} s \
         of quiet, {} s from the role removal)",
        quiet.as_secs(),
        waits.quiet.as_secs(),
        waits.gate.as_secs()
    );
    for (label, samples) in rows.iter().filter(|(_, s)| !s.is_empty()) {
        println!(
            "  {label:<36} {} s; median {:.2} s",
            list(samples),
            secs(median(samples))
        );
    }
    if done.is_empty() || drained.is_empty() {
        return Ok(());
    }
    let o = median(&drained);
    let ratio = |floor: Duration| secs(o) / secs(floor).max(f64::EPSILON);
    println!(
        "  ratio operator/floor, medians of annotation -> completedAt over the floor with the \
         operator's waits: {:.2}x (target <= 1.5x); the operator takes {:+.2} s more",
        ratio(median(&done)),
        secs(o) - secs(median(&done))
    );
    println!(
        "  against the floor of the configured window alone: {:.2}x",
        ratio(median(&bare))
    );
    Ok(())
}
