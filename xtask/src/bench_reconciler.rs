//! `cargo xtask bench reconciler`: how long the real `garage-reconciler` binary takes from
//! applying a 3-node GarageCluster to Ready, beside the floor of doing the same by hand, and
//! its memory with 1, 10 and 50 such clusters.
//!
//! The parts are real: a local control plane (tests/localcluster), kubesim running storage
//! pods as real garage 2.5.0 processes, and the reconciler as a child process built from this
//! workspace, so its memory can be read from `/proc/<pid>/status`. Real garage for 50
//! clusters does not fit the development machine, so the memory step's clusters beyond
//! `--real` run placeholder pods (docs/performance.md says what that measures). The floor
//! uses tests/garage-fixture and the reconciler's own Admin API client. With `--pools` the
//! bench runs only its node-local pool case instead ([`pools`]): one pool on a kubesim of 50
//! Nodes, the time from a selector change to the reconciler's convergence, and its memory.
//! Figures are printed, never asserted: the machine is shared and every number depends on
//! what else runs.

pub(crate) mod floor;
mod memory;
pub(crate) mod pools;
pub(crate) mod process;
pub(crate) mod timeline;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kubesim::{KubeSim, NodeSpec};
use localcluster::tools::Tool;
use localcluster::{LocalCluster, Options};
use serde_json::json;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::label;

use process::Reconciler;
use timeline::STEPS;

const USAGE: &str =
    "usage: cargo xtask bench reconciler [--debug] [--no-image-env] [--runs N] [--clusters LIST] [--real N] [--settle S]
       cargo xtask bench reconciler --pools [--pool-nodes N] [--debug] [--no-image-env] [--settle S]

  --debug           run the debug build of garage-reconciler (faster to build, slower to run)
  --no-image-env    run it without the image's Dockerfile ENV (by default it runs as it ships)
  --runs N          apply -> Ready repetitions, and floor repetitions (default 3)
  --clusters LIST   cluster counts to measure memory at, ascending (default 1,10,50)
  --real N          how many of those clusters run real garage pods (default 10); the others
                    run placeholder pods, so they are watched and reconciled but never Ready
  --settle S        seconds of memory sampling once the clusters are Ready (default 70,
                    more than one 60 s resync)
  --pools           run only the node-local pool case, on its own control plane, instead of
                    the steps above: one pool cluster (placeholder pods) whose selector goes
                    from matching no Node to matching every kubesim Node at once; prints the
                    time until every selected Node has its activation label, its pool pod's
                    gate lifted and its member GarageNode, and the memory before and after
  --pool-nodes N    kubesim Nodes of the pool case (default 50, at most 120)";

/// Where the clusters live.
pub(crate) const NS: &str = "bench";
/// Where the reconciler keeps its Lease, as `POD_NAMESPACE` says.
pub(crate) const OPERATOR_NS: &str = "garage-operator-system";
/// The reconciler's Lease (fixed in the binary).
pub(crate) const LEASE: &str = "garage-reconciler-leader";
/// Members of every bench cluster.
const MEMBERS: usize = 3;
/// The zone the reconciler gives members when the cluster names none; the floor uses it too.
pub(crate) const DEFAULT_ZONE: &str = "default";
/// The data volume of the manifest: the layout capacity of each member.
const DATA_SIZE: &str = "1Gi";
pub(crate) const DATA_BYTES: u64 = 1 << 30;
const READY_TIMEOUT: Duration = Duration::from_secs(300);

struct Opts {
    release: bool,
    runs: usize,
    levels: Vec<usize>,
    real: usize,
    settle: Duration,
    /// Run the binary with the image's `ENV` settings, as it ships.
    image_env: bool,
    /// Run only the node-local pool case.
    pools: bool,
    /// kubesim Nodes of the pool case.
    pool_nodes: usize,
}

/// Entry point of `cargo xtask bench reconciler`.
pub fn run(args: &[&str]) -> Result<()> {
    let mut opts = Opts {
        release: true,
        runs: 3,
        levels: vec![1, 10, 50],
        real: 10,
        settle: Duration::from_secs(70),
        image_env: true,
        pools: false,
        pool_nodes: 50,
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
            "--no-image-env" => opts.image_env = false,
            "--pools" => opts.pools = true,
            "--pool-nodes" => {
                opts.pool_nodes = value("--pool-nodes")?
                    .parse()
                    .context("--pool-nodes needs a number")?;
            }
            "--runs" => opts.runs = value("--runs")?.parse().context("--runs needs a number")?,
            "--real" => opts.real = value("--real")?.parse().context("--real needs a number")?,
            "--settle" => {
                opts.settle = Duration::from_secs(
                    value("--settle")?
                        .parse()
                        .context("--settle needs a number of seconds")?,
                );
            }
            "--clusters" => {
                opts.levels = value("--clusters")?
                    .split(',')
                    .map(|n| n.trim().parse::<usize>())
                    .collect::<Result<_, _>>()
                    .context("--clusters needs a comma-separated list of counts")?;
            }
            other => bail!("unknown argument `{other}`\n\n{USAGE}"),
        }
    }
    if opts.runs == 0 || opts.levels.windows(2).any(|w| w[0] >= w[1]) {
        bail!("--runs must be at least 1 and --clusters ascending\n\n{USAGE}");
    }
    if !(1..=pools::MAX_NODES).contains(&opts.pool_nodes) {
        bail!(
            "--pool-nodes must be 1 to {} (kubesim's one /24 holds every Node and pod)\n\n{USAGE}",
            pools::MAX_NODES
        );
    }
    crate::bench::block_on(bench(opts))
}

pub(crate) fn build(release: bool) -> Result<PathBuf> {
    let began = Instant::now();
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo.args(["build", "-p", "reconciler", "--bin", "garage-reconciler"]);
    if release {
        cargo.arg("--release");
    }
    let status = cargo
        .current_dir(crate::workspace_root())
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build of garage-reconciler failed");
    }
    println!(
        "built garage-reconciler ({}) in {:.1} s",
        if release { "release" } else { "debug" },
        began.elapsed().as_secs_f64()
    );
    Ok(crate::target_dir()
        .join(if release { "release" } else { "debug" })
        .join("garage-reconciler"))
}

pub(crate) fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

pub(crate) fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

pub(crate) fn list(samples: &[Duration]) -> String {
    samples
        .iter()
        .map(|d| format!("{:.2}", secs(*d)))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0 / 1024.0);
    format!("{cores} cores, {total:.1} GiB RAM")
}

/// Image of the clusters beyond `--real`: without "garage" in it, kubesim runs a placeholder
/// process (`sleep infinity`) instead of garage.
const PLACEHOLDER_IMAGE: &str = "bench.invalid/placeholder:1";

/// The bench's manifest: 3 members, replication factor 3, the default storage group with
/// layoutPolicy Auto, metadata and data on kubesim's `local-sim` claims. A `placeholder`
/// cluster names an image kubesim does not run as garage.
pub(crate) fn manifest(name: &str, placeholder: bool) -> Result<GarageCluster> {
    let mut cluster = json!({
        "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replication": {"factor": 3},
            "layoutPolicy": "Auto",
            "storage": {
                "replicas": MEMBERS,
                "metadata": {"size": "100Mi", "storageClassName": kubesim::STORAGE_CLASS},
                "data": {"size": DATA_SIZE, "storageClassName": kubesim::STORAGE_CLASS},
            },
        },
    });
    if placeholder {
        cluster["spec"]["image"] = json!(PLACEHOLDER_IMAGE);
    }
    Ok(serde_json::from_value(cluster)?)
}

async fn bench(opts: Opts) -> Result<()> {
    let prepared = prepare(opts.release, opts.image_env, "reconciler-bench")?;

    let (name, nodes) = if opts.pools {
        ("reconciler-bench-pools", pools::node_specs(opts.pool_nodes))
    } else {
        ("reconciler-bench", zone_nodes())
    };
    let Stage {
        cluster,
        client,
        sim,
        sim_dir,
    } = stage(name, nodes, &prepared.garage).await?;
    let bench = Bench {
        client,
        kubeconfig: cluster.kubeconfig().to_path_buf(),
        binary: prepared.binary,
        env: prepared.env,
        garage: prepared.garage,
        sim_dir,
        dir: prepared.dir,
        opts,
    };
    let result = if bench.opts.pools {
        bench.pool_case(&sim).await
    } else {
        bench.phases().await
    };
    println!("stopping kubesim and the local control plane…");
    sim.shutdown().await;
    drop(cluster);
    result
}

/// The reconciler binary and what it runs with.
pub(crate) struct Prepared {
    pub binary: PathBuf,
    /// The bench's directory for logs, under `target/tmp`.
    pub dir: PathBuf,
    /// The image's `ENV` settings, unless left out.
    pub env: Vec<(String, String)>,
    /// The pinned garage kubesim runs for Garage pods.
    pub garage: PathBuf,
}

/// Builds the binary and finds what it runs with: the image's `ENV` settings (unless
/// `image_env` is false) and the pinned garage kubesim runs; prints them and the machine, and
/// makes the directory `target/tmp/<dir>` for the logs.
pub(crate) fn prepare(release: bool, image_env: bool, dir: &str) -> Result<Prepared> {
    let dir = crate::target_dir().join("tmp").join(dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let binary = build(release)?;
    let env = if image_env {
        crate::image::env(&crate::workspace_root())?
    } else {
        Vec::new()
    };
    for (key, value) in &env {
        println!("garage-reconciler runs with {key}={value} (the image's Dockerfile ENV)");
    }
    let garage = Tool::Garage
        .require()
        .context("kubesim runs the pinned garage (cargo xtask tools builds it)")?;
    println!(
        "machine: {}; load average {} at start",
        machine(),
        process::load_average()
    );
    Ok(Prepared {
        binary,
        dir,
        env,
        garage,
    })
}

/// A local control plane with the CRDs and the bench's and the operator's namespaces, and
/// kubesim running its Nodes.
pub(crate) struct Stage {
    pub cluster: LocalCluster,
    pub client: Client,
    pub sim: KubeSim,
    /// kubesim's state directory: the garage processes it runs have their config here.
    pub sim_dir: PathBuf,
}

/// Starts the control plane `name` and kubesim with `nodes`, running `garage` for Garage pods.
pub(crate) async fn stage(name: &str, nodes: Vec<NodeSpec>, garage: &Path) -> Result<Stage> {
    println!(
        "starting a local control plane and kubesim ({} nodes)…",
        nodes.len()
    );
    let cluster = LocalCluster::start(Options {
        name: name.into(),
        ..Options::default()
    })
    .await
    .context("starting the local cluster (cargo xtask tools builds its binaries)")?;
    let client = cluster.client().await?;
    crate::crds::install(&client).await?;
    for ns in [NS, OPERATOR_NS] {
        Api::<Namespace>::all(client.clone())
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
            )
            .await
            .with_context(|| format!("creating namespace {ns}"))?;
    }
    let sim_dir = cluster.dir().join("kubesim");
    let mut sim_options =
        kubesim::Options::new(&sim_dir, garage, cluster.server(), cluster.ca_pem());
    for node in nodes {
        sim_options = sim_options.node(node);
    }
    let sim = KubeSim::start(client.clone(), sim_options)
        .await
        .context("starting kubesim (needs CAP_NET_ADMIN)")?;
    Ok(Stage {
        cluster,
        client,
        sim,
        sim_dir,
    })
}

/// Starts `binary` against the cluster of `kubeconfig`, its JSON log in `log`, and waits
/// until it leads; prints its pid and memory.
pub(crate) async fn start_reconciler(
    binary: &Path,
    env: &[(String, String)],
    kubeconfig: &Path,
    log: &Path,
) -> Result<Reconciler> {
    let mut reconciler = Reconciler::start(binary, env, kubeconfig, OPERATOR_NS, log)?;
    let took = reconciler.wait_leading(Duration::from_secs(60)).await?;
    let (hwm, rss) = process::memory(reconciler.pid())?;
    println!(
        "garage-reconciler pid {} leading after {:.2} s; RSS {rss:.1} MiB (peak {hwm:.1} MiB); log {}",
        reconciler.pid(),
        secs(took),
        reconciler.log().display()
    );
    Ok(reconciler)
}

/// kubesim's Nodes for the default steps: three, one per zone.
fn zone_nodes() -> Vec<NodeSpec> {
    [("n1", "zone-a"), ("n2", "zone-b"), ("n3", "zone-c")]
        .into_iter()
        .map(|(node, zone)| NodeSpec::new(node).zone(zone))
        .collect()
}

struct Bench {
    client: Client,
    kubeconfig: PathBuf,
    binary: PathBuf,
    /// Environment the binary runs with besides its own settings (the image's `ENV`).
    env: Vec<(String, String)>,
    garage: PathBuf,
    /// kubesim's state directory: the garage processes of this bench have their config here.
    sim_dir: PathBuf,
    dir: PathBuf,
    opts: Opts,
}

/// Figures of one memory level.
struct Level {
    label: String,
    state: String,
    hwm: f64,
    steady: f64,
}

/// The summary lines of the memory levels.
fn print_levels(levels: &[Level]) {
    for l in levels {
        println!(
            "  {:<24} peak (VmHWM) {:>6.1} MiB, steady (VmRSS median) {:>6.1} MiB; {}",
            l.label, l.hwm, l.steady, l.state
        );
    }
}

impl Bench {
    async fn start_reconciler(&self, log: &str) -> Result<Reconciler> {
        start_reconciler(
            &self.binary,
            &self.env,
            &self.kubeconfig,
            &self.dir.join(log),
        )
        .await
    }

    /// Stops a reconciler and removes its Lease, so that the next one leads at once.
    async fn stop_reconciler(&self, reconciler: Reconciler) -> Result<()> {
        reconciler.stop()?;
        match Api::<Lease>::namespaced(self.client.clone(), OPERATOR_NS)
            .delete(LEASE, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(e).context("deleting the reconciler's Lease"),
        }
    }

    async fn phases(&self) -> Result<()> {
        let runs = self.opts.runs;
        println!(
            "\nfloor: 3 garage processes (tests/garage-fixture) connected, staged and applied by hand \
             through the Admin API v2 client, until GetClusterHealth says healthy ({runs} runs; load {})",
            process::load_average()
        );
        let mut floor = Vec::new();
        for run in 1..=runs {
            let f = floor::run_once(DEFAULT_ZONE, DATA_BYTES).await?;
            println!(
                "  floor run {run}/{runs}: processes answering {:.2} s, peers connected {:.2} s, \
                 layout applied {:.2} s, healthy {:.2} s",
                secs(f.answering),
                secs(f.connected),
                secs(f.applied),
                secs(f.healthy)
            );
            floor.push(f.healthy);
        }

        let mut reconciler = self.start_reconciler("garage-reconciler-ready.log").await?;
        println!(
            "\napply -> Ready: one {MEMBERS}-member GarageCluster at a time, deleted (and its pods \
             gone) before the next ({runs} runs; load {})",
            process::load_average()
        );
        let mut ready = Vec::new();
        for run in 1..=runs {
            ready.push(self.ready_run(&mut reconciler, run).await?);
        }
        println!(
            "  floor (by hand) healthy:   {} s; median {:.2} s",
            list(&floor),
            secs(median(&floor))
        );
        println!(
            "  operator apply -> Ready:   {} s; median {:.2} s",
            list(&ready),
            secs(median(&ready))
        );
        self.stop_reconciler(reconciler).await?;

        let levels = self.memory_levels().await?;
        println!("\nsummary");
        println!(
            "  floor (by hand) healthy:   {} s; median {:.2} s",
            list(&floor),
            secs(median(&floor))
        );
        println!(
            "  operator apply -> Ready:   {} s; median {:.2} s",
            list(&ready),
            secs(median(&ready))
        );
        print_levels(&levels);
        Ok(())
    }

    async fn ready_run(&self, reconciler: &mut Reconciler, run: usize) -> Result<Duration> {
        let runs = self.opts.runs;
        let name = format!("ready-{run}");
        let before = reconciler.counters().await?;
        let timeline = timeline::follow(
            &self.client,
            NS,
            &manifest(&name, false)?,
            MEMBERS,
            READY_TIMEOUT,
        )
        .await?;
        reconciler.check_alive()?;
        let after = reconciler.counters().await?;
        let ready = timeline
            .ready()
            .context("the timeline ended without Ready")?;
        println!(
            "  run {run}/{runs} ({NS}/{name}): apply -> Ready {:.2} s",
            secs(ready)
        );
        // Sorted by time: watch stamps and log lines interleave, and the gaps between them
        // are what a reader looks for.
        let mut lines: Vec<(Duration, String)> = STEPS
            .iter()
            .zip(timeline.steps)
            .filter_map(|(step, at)| Some((at?, (*step).to_owned())))
            .collect();
        for step in STEPS
            .iter()
            .zip(timeline.steps)
            .filter_map(|(step, at)| at.is_none().then_some(step))
        {
            println!("    {step}: not seen");
        }
        let log = process::log_events(reconciler.log(), &name, NS, timeline.began_at)?;
        for (at, what) in log.lines {
            let offset = at
                .duration_since(timeline.began_at)
                .unwrap_or(Duration::ZERO);
            lines.push((offset, format!("reconciler log: {what}")));
        }
        lines.sort_by_key(|(at, _)| *at);
        let mut previous = Duration::ZERO;
        for (at, what) in lines {
            println!(
                "    {:>6.2} s  (+{:.2} s)  {what}",
                secs(at),
                secs(at.saturating_sub(previous))
            );
            previous = at;
        }
        println!("    reconciler during the run: {}", before.since(&after));
        self.delete_cluster(&name).await?;
        Ok(ready)
    }

    /// Deletes a cluster and waits until its pods (the garage processes) are gone.
    async fn delete_cluster(&self, name: &str) -> Result<()> {
        Api::<GarageCluster>::namespaced(self.client.clone(), NS)
            .delete(name, &DeleteParams::default())
            .await
            .with_context(|| format!("deleting GarageCluster {NS}/{name}"))?;
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), NS);
        let selector = ListParams::default().labels(&format!("{}={name}", label::LABEL_CLUSTER));
        let deadline = Instant::now() + Duration::from_secs(180);
        while !pods.list(&selector).await?.items.is_empty() {
            if Instant::now() > deadline {
                bail!("the pods of {NS}/{name} were not gone 180 s after deleting it");
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        let s = |v: &[u64]| {
            v.iter()
                .map(|&x| Duration::from_secs(x))
                .collect::<Vec<_>>()
        };
        assert_eq!(median(&s(&[3, 1, 2])), Duration::from_secs(2));
        assert_eq!(median(&s(&[4, 1, 2, 3])), Duration::from_millis(2500));
    }

    #[test]
    fn the_manifest_parses() {
        let c = manifest("x", true).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(c.spec.storage.and_then(|s| s.replicas), Some(3));
        assert!(!c.spec.image.unwrap_or_default().contains("garage"));
    }
}
