//! `cargo xtask bench rollout`: how long the operator's storage rollout takes to replace every
//! storage pod of an N-member GarageCluster after a pod-template change (`spec.storage.env`
//! gains a variable), beside the floor of the same replacements done by hand with the
//! reconciler stopped.
//!
//! Both sides run on one local control plane with kubesim running the storage pods as real
//! garage processes, and start from a cluster the `garage-reconciler` binary (a child process,
//! the parts of `bench reconciler`) created and brought to Ready. The operator side times the
//! patch -> `StorageRolloutReady=True` at the new generation; the floor stops the reconciler,
//! patches every member's StatefulSet itself and replaces one pod at a time, each once the
//! previous replacement is Ready and the sequencer's gates hold through each pod's own Admin
//! API ([`gates`]). Figures are printed, never asserted: the machine is shared and every
//! number depends on what else runs.

mod cluster;
mod floor;
mod gates;
mod operator;
mod pods;
mod stage;

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};

use crate::bench_reconciler::{list, machine, median, process, secs};
use cluster::pod_ready;
use floor::FloorRun;
use gates::Admin;
use operator::OperatorRun;
use stage::Stage;

const USAGE: &str =
    "usage: cargo xtask bench rollout [--debug] [--runs N] [--members LIST] [--only floor|operator]

  --debug          run the debug build of garage-reconciler (faster to build, slower to run)
  --runs N         rollouts by hand and by the operator per cluster size (default 1 each);
                   every run creates a fresh cluster and deletes it afterwards
  --members LIST   cluster sizes, comma-separated (default 3,10); each member is a real
                   garage process, and kubesim gets one Node per member of the largest
  --only WHICH     run only `floor` or only `operator`";

/// The variable both sides add to the garage container's environment.
pub(crate) const ENV: &str = "BENCH_ROLLOUT";
/// How often both sides read the pods (and the floor the gates, the operator its cluster):
/// every storage pod answers a `GetClusterHealth` per reading, so ten members at this pace
/// are 100 Admin API calls a second on the two cores the garage processes share.
pub(crate) const POLL: Duration = Duration::from_millis(100);
/// How long a fresh cluster may take until the gates hold before anything is changed.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(300);

/// What the command line asks for.
struct Opts {
    release: bool,
    runs: usize,
    members: Vec<usize>,
    /// Run the floor.
    floor: bool,
    /// Run the operator.
    operator: bool,
}

/// Entry point of `cargo xtask bench rollout`.
pub fn run(args: &[&str]) -> Result<()> {
    let mut opts = Opts {
        release: true,
        runs: 1,
        members: vec![3, 10],
        floor: true,
        operator: true,
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut value = |name: &str| -> Result<&str> {
            rest.next()
                .copied()
                .with_context(|| format!("{name} needs a value\n\n{USAGE}"))
        };
        match *arg {
            "--debug" => opts.release = false,
            "--runs" => {
                opts.runs = value("--runs")?
                    .parse()
                    .with_context(|| format!("--runs needs a whole number\n\n{USAGE}"))?;
            }
            "--members" => {
                opts.members = value("--members")?
                    .split(',')
                    .map(|n| n.trim().parse::<usize>())
                    .collect::<Result<_, _>>()
                    .with_context(|| format!("--members needs a list like 3,10\n\n{USAGE}"))?;
            }
            "--only" => match value("--only")? {
                "floor" => opts.operator = false,
                "operator" => opts.floor = false,
                _ => bail!("--only needs `floor` or `operator`\n\n{USAGE}"),
            },
            other => bail!("unknown argument `{other}`\n\n{USAGE}"),
        }
    }
    if opts.runs == 0 || opts.members.iter().any(|&n| n < 3) {
        bail!(
            "--runs must be at least 1 and every size at least 3 (replication factor 3)\n\n{USAGE}"
        );
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench(opts))
}

/// Figures of one cluster size.
struct Size {
    members: usize,
    floor: Vec<FloorRun>,
    operator: Vec<OperatorRun>,
}

async fn bench(opts: Opts) -> Result<()> {
    let binary = crate::bench_reconciler::build(opts.release)?;
    let env = crate::image::env(&crate::workspace_root())?;
    for (key, value) in &env {
        println!("garage-reconciler runs with {key}={value} (the image's Dockerfile ENV)");
    }
    println!(
        "machine: {}; load average {} at start",
        machine(),
        process::load_average()
    );
    let dir = crate::target_dir().join("tmp").join("rollout-bench");
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let nodes = opts.members.iter().copied().max().unwrap_or(3);
    println!("starting a local control plane and kubesim ({nodes} nodes)…");
    let mut stage = Stage::start(nodes, &binary, &env, &dir).await?;
    let mut sizes = Vec::new();
    let mut result = Ok(());
    for &members in &opts.members {
        match size(&opts, &mut stage, members).await {
            Ok(s) => sizes.push(s),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    println!("stopping kubesim and the local control plane…");
    stage.stop().await;
    summary(&sizes);
    result
}

/// Every floor run, then every operator run, of one cluster size.
async fn size(opts: &Opts, stage: &mut Stage, members: usize) -> Result<Size> {
    let runs = opts.runs;
    let mut figures = Size {
        members,
        floor: Vec::new(),
        operator: Vec::new(),
    };
    if opts.floor {
        println!(
            "\nfloor, {members} members: a cluster brought to Ready by the operator, the \
             reconciler stopped, {ENV} added to every StatefulSet's template by hand, then one \
             pod deleted at a time, the next once its replacement is Ready and every pod's \
             Admin API shows the gates held, read every {} ms ({runs} run(s); load {})",
            POLL.as_millis(),
            process::load_average()
        );
        for run in 1..=runs {
            println!("  run {run}/{runs}:");
            let f = floor::run_once(stage, &format!("floor-{members}-{run}"), members).await?;
            println!(
                "    sum of the waits, delete -> gates held: {:.2} s",
                secs(f.total())
            );
            figures.floor.push(f);
        }
    }
    if opts.operator {
        println!(
            "\noperator, {members} members: a cluster brought to Ready, then spec.storage.env \
             patched to add {ENV}; the cluster and its pods read every {} ms until \
             StorageRolloutReady=True at the new generation with every pod replaced ({runs} \
             run(s); load {})",
            POLL.as_millis(),
            process::load_average()
        );
        for run in 1..=runs {
            println!("  run {run}/{runs}:");
            let o =
                operator::run_once(stage, &format!("operator-{members}-{run}"), members).await?;
            figures.operator.push(o);
        }
    }
    Ok(figures)
}

/// Waits until every storage pod of cluster `name` is Ready and the gates hold, before
/// either side changes anything; not counted, only printed.
pub(crate) async fn settle(stage: &mut Stage, name: &str, admin: &mut Admin) -> Result<()> {
    let began = Instant::now();
    loop {
        stage.check_alive()?;
        let pods = cluster::storage_pods(stage, name).await?;
        if pods.iter().all(pod_ready) && admin.read(&pods).await.hold() {
            println!(
                "    gates held {:.2} s after Ready (every identity, every member up, every \
                 view healthy, layout settled)",
                secs(began.elapsed())
            );
            return Ok(());
        }
        if began.elapsed() > SETTLE_TIMEOUT {
            bail!(
                "the gates of {name} did not hold within {} s of Ready",
                SETTLE_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

fn summary(sizes: &[Size]) {
    println!(
        "\nsummary (operator: patch -> StorageRolloutReady=True; floor: the sum of each pod's \
         delete -> gates held)"
    );
    for s in sizes {
        let floor: Vec<Duration> = s.floor.iter().map(FloorRun::total).collect();
        let operator: Vec<Duration> = s.operator.iter().map(|o| o.total).collect();
        for (label, samples) in [("floor", &floor), ("operator", &operator)] {
            if !samples.is_empty() {
                println!(
                    "  {:>2} members, {label:<9} {} s; median {:.2} s; {:.2} s per pod",
                    s.members,
                    list(samples),
                    secs(median(samples)),
                    secs(median(samples)) / s.members as f64
                );
            }
        }
        if floor.is_empty() || operator.is_empty() {
            continue;
        }
        let (f, o) = (median(&floor), median(&operator));
        println!(
            "  {:>2} members, ratio operator/floor of the medians: {:.2}x (target <= 1.3x); the \
             operator takes {:+.2} s more",
            s.members,
            secs(o) / secs(f).max(f64::EPSILON),
            secs(o) - secs(f)
        );
    }
}
