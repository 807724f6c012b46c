//! `cargo xtask bench resources`: how the real `garage-reconciler` binary copes with many
//! GarageBuckets and GarageKeys on one Garage cluster.
//!
//! The parts are those of `cargo xtask bench reconciler`: a local control plane, kubesim
//! running the storage pod as a real garage 2.5.0 process, and the reconciler as a child
//! process (no webhook, so nothing is defaulted or validated on admission). One GarageCluster
//! of one member at replication factor 1 is made Ready; then `--count` GarageBuckets `b-i`
//! and as many GarageKeys `k-i` are created, `--in-flight` at a time, each key granted read
//! and write on its bucket through `spec.bucketPermissions[].bucketRef`. The bench lists both
//! kinds every second until every object is Ready and every key's status shows its grant,
//! samples the reconciler's memory all along, then watches a settle window for writes, and
//! checks a few grants through the Admin API. Figures are printed, never asserted.

mod check;
mod figures;
mod fill_and_settle;
mod objects;

use std::time::Duration;

use anyhow::{Result, bail};
use kubesim::NodeSpec;

use crate::bench_reconciler::process;
use crate::bench_reconciler::{prepare, stage, start_reconciler};
use fill_and_settle::fill_and_settle;

const USAGE: &str = "usage: cargo xtask bench resources [--debug] [--no-image-env] [--count N] [--in-flight N] [--settle S] [--timeout S]

  --debug           run the debug build of garage-reconciler (faster to build, slower to run)
  --no-image-env    run it without the image's Dockerfile ENV (by default it runs as it ships)
  --count N         GarageBuckets, and as many GarageKeys (default 1000)
  --in-flight N     creates in flight at once (default 32)
  --settle S        seconds watched for writes once everything is Ready (default 340, more
                    than one drift check: 300 s, spread over up to 330 s)
  --timeout S       seconds from the first create before the bench gives up waiting and
                    reports what it sees (default 1800)";

/// The GarageCluster every bucket and key names.
const CLUSTER: &str = "garage";
/// Its one storage pod (`<cluster>-storage-<group>-<ordinal>`).
const POD: &str = "garage-storage-0-0";

/// The Admin API port of the default settings.
const ADMIN_PORT: u16 = 3903;

struct Opts {
    release: bool,
    image_env: bool,
    count: usize,
    in_flight: usize,
    settle: Duration,
    timeout: Duration,
}

/// Entry point of `cargo xtask bench resources`.
pub fn run(args: &[&str]) -> Result<()> {
    let mut opts = Opts {
        release: true,
        image_env: true,
        count: 1000,
        in_flight: 32,
        settle: Duration::from_secs(340),
        timeout: Duration::from_secs(1800),
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let mut number = |name: &str| crate::bench::number(&mut rest, name, USAGE);
        match *arg {
            "--debug" => opts.release = false,
            "--no-image-env" => opts.image_env = false,
            "--count" => opts.count = number("--count")? as usize,
            "--in-flight" => opts.in_flight = number("--in-flight")? as usize,
            "--settle" => opts.settle = Duration::from_secs(number("--settle")?),
            "--timeout" => opts.timeout = Duration::from_secs(number("--timeout")?),
            other => bail!("unknown argument `{other}`\n\n{USAGE}"),
        }
    }
    if opts.count == 0 || opts.in_flight == 0 {
        bail!("--count and --in-flight must be at least 1\n\n{USAGE}");
    }
    crate::bench::block_on(bench(opts))
}

async fn bench(opts: Opts) -> Result<()> {
    let prepared = prepare(opts.release, opts.image_env, "resources-bench")?;
    let nodes = vec![NodeSpec::new("r1").zone("zone-a")];
    let staged = stage("resources-bench", nodes, &prepared.garage).await?;
    let result = async {
        let mut reconciler = start_reconciler(
            &prepared.binary,
            &prepared.env,
            staged.cluster.kubeconfig(),
            &prepared.dir.join("garage-reconciler-resources.log"),
        )
        .await?;
        let result = fill_and_settle(&staged, &mut reconciler, &opts).await;
        let (garages, mib) = process::processes_of(&prepared.garage, &staged.sim_dir);
        println!("garage beside it: {garages} process(es), {mib:.0} MiB RSS in all");
        result
    }
    .await;
    println!("stopping kubesim and the local control plane…");
    staged.sim.shutdown().await;
    drop(staged.cluster);
    result
}
