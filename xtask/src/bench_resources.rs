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

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use futures::StreamExt as _;
use garage_admin::{AdminClient, AdminToken, BucketLookup, Lookup};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kubesim::NodeSpec;
use localcluster::tools::Tool;
use serde_json::json;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_key::GarageKey;
use shared_types::keys::label;

use crate::bench_reconciler::process::{self, Counters, Passes, Reconciler};
use crate::bench_reconciler::{NS, Stage, prepare, secs, stage, start_reconciler, timeline};

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
/// The controllers' names on `/metrics`.
const CONTROLLERS: [&str; 2] = ["garagebucket", "garagekey"];
/// The resources whose mutating requests the settle window counts on the API server: what the
/// reconciler writes (leases left out: kubesim renews its Node's too).
const WRITTEN: [&str; 12] = [
    "garagebuckets",
    "garagekeys",
    "secrets",
    "garageclusters",
    "garagenodes",
    "events",
    "configmaps",
    "services",
    "statefulsets",
    "poddisruptionbudgets",
    "persistentvolumeclaims",
    "pods",
];
/// How often the objects are listed.
const POLL: Duration = Duration::from_secs(1);
/// How often a progress line is printed.
const PROGRESS: Duration = Duration::from_secs(15);
/// How many random pairs are checked through the Admin API.
const SAMPLES: usize = 3;

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

/// The GarageCluster: one member, replication factor 1, the default storage group on
/// kubesim's `local-sim` claims.
fn cluster_manifest() -> Result<GarageCluster> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
        "metadata": {"name": CLUSTER, "namespace": NS},
        "spec": {
            "replication": {"factor": 1},
            "storage": {
                "replicas": 1,
                "metadata": {"size": "100Mi", "storageClassName": kubesim::STORAGE_CLASS},
                "data": {"size": "1Gi", "storageClassName": kubesim::STORAGE_CLASS},
            },
        },
    }))?)
}

fn bucket_manifest(i: usize) -> Result<GarageBucket> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageBucket",
        "metadata": {"name": format!("b-{i}"), "namespace": NS},
        "spec": {"clusterRef": {"name": CLUSTER}},
    }))?)
}

fn key_manifest(i: usize) -> Result<GarageKey> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageKey",
        "metadata": {"name": format!("k-{i}"), "namespace": NS},
        "spec": {
            "clusterRef": {"name": CLUSTER},
            "bucketPermissions": [{"bucketRef": {"name": format!("b-{i}")}, "read": true, "write": true}],
        },
    }))?)
}

fn ready(conditions: Option<&[Condition]>) -> bool {
    conditions
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// `Ready=<status> <reason>` of an object, for grouping the ones that are not Ready.
fn ready_state(conditions: Option<&[Condition]>) -> (String, String) {
    conditions
        .unwrap_or_default()
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| {
            (
                format!("Ready={} {}", c.status, c.reason),
                c.message.clone(),
            )
        })
        .unwrap_or_else(|| ("no Ready condition".into(), String::new()))
}

/// True when key `k-i`'s status shows read and write on the bucket its spec names.
fn granted(key: &GarageKey, bucket_ids: &BTreeMap<String, String>) -> bool {
    let Some(wanted) = key
        .spec
        .bucket_permissions
        .iter()
        .flatten()
        .find_map(|p| bucket_ids.get(&p.bucket_ref.as_ref()?.name))
    else {
        return false;
    };
    key.status
        .as_ref()
        .and_then(|s| s.buckets.as_ref())
        .is_some_and(|bs| {
            bs.iter().any(|b| {
                b.bucket_id.as_ref() == Some(wanted)
                    && b.read == Some(true)
                    && b.write == Some(true)
            })
        })
}

/// One listing of both kinds.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Tally {
    buckets_ready: usize,
    keys_ready: usize,
    keys_granted: usize,
}

impl Tally {
    async fn read(client: &Client) -> Result<Tally> {
        let buckets = Api::<GarageBucket>::namespaced(client.clone(), NS)
            .list(&ListParams::default())
            .await?
            .items;
        let keys = Api::<GarageKey>::namespaced(client.clone(), NS)
            .list(&ListParams::default())
            .await?
            .items;
        let ids: BTreeMap<String, String> = buckets
            .iter()
            .filter_map(|b| Some((b.name_any(), b.status.as_ref()?.bucket_id.clone()?)))
            .collect();
        Ok(Tally {
            buckets_ready: buckets
                .iter()
                .filter(|b| ready(b.status.as_ref().and_then(|s| s.conditions.as_deref())))
                .count(),
            keys_ready: keys
                .iter()
                .filter(|k| ready(k.status.as_ref().and_then(|s| s.conditions.as_deref())))
                .count(),
            keys_granted: keys.iter().filter(|k| granted(k, &ids)).count(),
        })
    }

    /// Every bucket and key Ready and every grant in place.
    fn all(&self, n: usize) -> bool {
        self.buckets_ready == n && self.keys_ready == n && self.keys_granted == n
    }
}

/// When each milestone was first seen, from the first create.
#[derive(Debug, Default)]
struct Stamps {
    created: Option<Duration>,
    buckets_ready: Option<Duration>,
    keys_ready: Option<Duration>,
    keys_granted: Option<Duration>,
    /// The first listing in which all three held at once.
    all: Option<Duration>,
}

async fn fill_and_settle(staged: &Stage, reconciler: &mut Reconciler, opts: &Opts) -> Result<()> {
    let (client, sim, cluster) = (&staged.client, &staged.sim, &staged.cluster);
    let n = opts.count;
    let pid = reconciler.pid();
    let (cluster_dir, kubeconfig) = (cluster.dir(), cluster.kubeconfig());
    let began = Instant::now();
    Api::<GarageCluster>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &cluster_manifest()?)
        .await
        .context("creating the GarageCluster")?;
    wait_cluster_ready(client, reconciler).await?;
    println!(
        "GarageCluster {NS}/{CLUSTER} (1 member, replication factor 1) Ready after {:.2} s",
        secs(began.elapsed())
    );

    let (hwm_before, rss_before) = memory(reconciler)?;
    let counters_before = counters(reconciler).await?;
    let passes_before = passes(reconciler).await?;
    println!(
        "\nbefore the objects: reconciler RSS {rss_before:.1} MiB (peak so far {hwm_before:.1} MiB); load {}",
        process::load_average()
    );
    println!(
        "creating {n} GarageBuckets b-i and {n} GarageKeys k-i (k-i granted read+write on b-i \
         through bucketRef), {} in flight; listing both kinds every {} s",
        opts.in_flight,
        POLL.as_secs()
    );
    let garage_ip = sim
        .pod_ip(NS, POD)
        .context("the storage pod has no address")?;
    let garage_before = garage_admin(garage_ip).await.ok();
    let stop = stop_on_signal()?;
    let cpu_before = cpu(cluster_dir, pid);
    let first = Instant::now();
    let created = Arc::new(AtomicUsize::new(0));
    let creator = tokio::spawn(create_all(
        client.clone(),
        n,
        opts.in_flight,
        created.clone(),
    ));
    let mut creator = Some(creator);
    let mut stamps = Stamps::default();
    let mut rss_max = rss_before;
    let mut last_print = Instant::now();
    loop {
        alive(reconciler)?;
        if let Some(task) = creator.as_ref()
            && task.is_finished()
        {
            creator
                .take()
                .context("the creating task")?
                .await
                .context("the creating task panicked")??;
            stamps.created = Some(first.elapsed());
            println!(
                "  {:>7.1} s  every create returned ({} objects, {:.0} per second)",
                secs(first.elapsed()),
                2 * n,
                (2 * n) as f64 / secs(first.elapsed())
            );
        }
        rss_max = rss_max.max(memory(reconciler)?.1);
        let tally = Tally::read(client).await?;
        let at = first.elapsed();
        let all_created = created.load(Ordering::Relaxed) == 2 * n;
        let stamp = |slot: &mut Option<Duration>, reached: bool, what: &str| {
            if slot.is_none() && reached && all_created {
                *slot = Some(at);
                println!("  {:>7.1} s  {what}", secs(at));
            }
        };
        stamp(
            &mut stamps.buckets_ready,
            tally.buckets_ready == n,
            "every bucket Ready",
        );
        stamp(
            &mut stamps.keys_ready,
            tally.keys_ready == n,
            "every key Ready",
        );
        stamp(
            &mut stamps.keys_granted,
            tally.keys_granted == n,
            "every key's status shows read+write on its bucket",
        );
        if stamps.created.is_some() && tally.all(n) {
            stamps.all = Some(at);
            println!("  {:>7.1} s  all of them at once", secs(at));
            break;
        }
        if last_print.elapsed() >= PROGRESS {
            last_print = Instant::now();
            // A reconciler too busy to answer its /metrics in time is a figure, not an error.
            let so_far = match counters(reconciler).await {
                Ok(c) => {
                    let c = counters_before.since(&c);
                    format!("{} passes, {} failed", c.reconciles, c.errors)
                }
                Err(e) => format!("no counters ({e:#})"),
            };
            println!(
                "  {:>7.1} s  created {}/{}; buckets Ready {}/{n}, keys Ready {}/{n}, keys granted {}/{n}; \
                 {so_far}; RSS {:.1} MiB; load {}",
                secs(at),
                created.load(Ordering::Relaxed),
                2 * n,
                tally.buckets_ready,
                tally.keys_ready,
                tally.keys_granted,
                memory(reconciler)?.1,
                process::load_average()
            );
        }
        let interrupted = stop.load(Ordering::Relaxed);
        if at > opts.timeout || interrupted {
            println!(
                "  NOT all Ready after {:.0} s ({}): buckets {}/{n} Ready, keys {}/{n} Ready, {}/{n} granted",
                secs(at),
                if interrupted {
                    "interrupted"
                } else {
                    "--timeout"
                },
                tally.buckets_ready,
                tally.keys_ready,
                tally.keys_granted
            );
            match counters(reconciler).await {
                Ok(c) => println!(
                    "    reconciler since the first create: {}",
                    counters_before.since(&c)
                ),
                Err(e) => println!("    reconciler counters not readable: {e:#}"),
            }
            println!(
                "    CPU since the first create: {}",
                cpu_since(&cpu_before, &cpu(cluster_dir, pid))
            );
            println!(
                "    Garage Admin API requests since the first create: {}",
                garage_since(&garage_before, &garage_admin(garage_ip).await.ok())
            );
            stuck(client, reconciler).await?;
            bail!("the objects were not all Ready; the bench stopped waiting");
        }
        tokio::time::sleep(POLL).await;
    }
    let (hwm_ready, rss_ready) = memory(reconciler)?;
    let cpu_ready = cpu(cluster_dir, pid);
    let counters_ready = counters(reconciler).await?;
    let passes_ready = passes(reconciler).await?;
    println!(
        "  reconciler from the first create to all Ready: {}",
        counters_before.since(&counters_ready)
    );
    print_passes(&passes_before, &passes_ready);
    println!("  CPU over it: {}", cpu_since(&cpu_before, &cpu_ready));
    let garage_ready = garage_admin(garage_ip).await.ok();
    println!(
        "  Garage Admin API requests over it: {}",
        garage_since(&garage_before, &garage_ready)
    );
    println!(
        "  RSS at all Ready {rss_ready:.1} MiB; max VmRSS sampled during {:.1} MiB; VmHWM {hwm_ready:.1} MiB",
        rss_max.max(rss_ready)
    );

    println!(
        "\nsettle: {} s with every object Ready; VmRSS sampled every second",
        opts.settle.as_secs()
    );
    let versions_before = versions(client).await?;
    let requests_before = apiserver_writes(kubeconfig).await?;
    let end = Instant::now() + opts.settle;
    let mut rss = Vec::new();
    while Instant::now() < end {
        alive(reconciler)?;
        if stop.load(Ordering::Relaxed) {
            bail!("interrupted in the settle window");
        }
        rss.push(memory(reconciler)?.1);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let counters_settled = counters(reconciler).await?;
    let cpu_settled = cpu(cluster_dir, pid);
    let passes_settled = passes(reconciler).await?;
    let (hwm_settled, rss_settled) = memory(reconciler)?;
    let settle = counters_ready.since(&counters_settled);
    let rewritten = rewritten(&versions_before, &versions(client).await?);
    let requests = since(&requests_before, &apiserver_writes(kubeconfig).await?);
    let after = Tally::read(client).await?;
    rss.sort_by(f64::total_cmp);
    println!("  reconciler during the settle window: {settle}");
    println!("  objects whose resourceVersion changed in the window: {rewritten}");
    println!(
        "  writes the API server served in the window (apiserver_request_total): {}",
        if requests.is_empty() {
            "none".into()
        } else {
            requests.join(", ")
        }
    );
    print_passes(&passes_ready, &passes_settled);
    println!("  CPU over it: {}", cpu_since(&cpu_ready, &cpu_settled));
    let garage_settle = garage_since(&garage_ready, &garage_admin(garage_ip).await.ok());
    println!("  Garage Admin API requests in the window: {garage_settle}");
    println!(
        "  VmRSS median {:.1} MiB (min {:.1}, max {:.1}, last {rss_settled:.1}); VmHWM {hwm_settled:.1} MiB",
        rss.get(rss.len() / 2).copied().unwrap_or(rss_settled),
        rss.first().copied().unwrap_or(rss_settled),
        rss.last().copied().unwrap_or(rss_settled)
    );
    println!(
        "  after it: buckets Ready {}/{n}, keys Ready {}/{n}, keys granted {}/{n}; load {}",
        after.buckets_ready,
        after.keys_ready,
        after.keys_granted,
        process::load_average()
    );

    let secrets = Api::<Secret>::namespaced(client.clone(), NS)
        .list(&ListParams::default().labels(label::LABEL_KEY))
        .await?
        .items
        .len();
    let admin = admin_client(client, garage_ip).await?;
    let garage_buckets = admin.list_buckets().await?.len();
    let garage_keys = admin.list_keys().await?.len();
    println!(
        "\ncheck: {secrets} credentials Secrets (label {}); Garage lists {garage_buckets} buckets and {garage_keys} keys",
        label::LABEL_KEY
    );
    let samples = sample(client, &admin, n).await?;

    println!("\nsummary ({n} buckets, {n} keys)");
    let at = |d: Option<Duration>| d.map_or("not seen".into(), |d| format!("{:.1} s", secs(d)));
    println!("  every create returned:        {}", at(stamps.created));
    println!(
        "  every bucket Ready:           {}",
        at(stamps.buckets_ready)
    );
    println!("  every key Ready:              {}", at(stamps.keys_ready));
    println!(
        "  every key's grant in status:  {}",
        at(stamps.keys_granted)
    );
    println!("  all three in one listing:     {}", at(stamps.all));
    println!(
        "  reconciler RSS: before {rss_before:.1} MiB, at all Ready {rss_ready:.1} MiB, max sampled \
         {:.1} MiB (VmHWM {hwm_ready:.1} MiB), settled median {:.1} MiB",
        rss_max.max(rss_ready),
        rss.get(rss.len() / 2).copied().unwrap_or(rss_settled)
    );
    println!("  fill: {}", counters_before.since(&counters_ready));
    println!(
        "  settle ({} s): {} API writes, {} reconciles, {} failed; resourceVersion changed: {rewritten}; \
         API server served: {}",
        opts.settle.as_secs(),
        settle.writes,
        settle.reconciles,
        settle.errors,
        if requests.is_empty() {
            "no writes".into()
        } else {
            requests.join(", ")
        }
    );
    println!("  settle, Garage Admin API: {garage_settle}");
    println!("  Admin API sample: {samples}");
    Ok(())
}

/// The resourceVersion of every bucket, key and key credentials Secret, by `kind/name`.
async fn versions(client: &Client) -> Result<BTreeMap<String, String>> {
    let lp = ListParams::default();
    let mut out = BTreeMap::new();
    let mut add = |kind: &str, name: String, version: Option<String>| {
        out.insert(format!("{kind}/{name}"), version.unwrap_or_default());
    };
    for b in Api::<GarageBucket>::namespaced(client.clone(), NS)
        .list(&lp)
        .await?
        .items
    {
        add("bucket", b.name_any(), b.resource_version());
    }
    for k in Api::<GarageKey>::namespaced(client.clone(), NS)
        .list(&lp)
        .await?
        .items
    {
        add("key", k.name_any(), k.resource_version());
    }
    for s in Api::<Secret>::namespaced(client.clone(), NS)
        .list(&lp.clone().labels(label::LABEL_KEY))
        .await?
        .items
    {
        add("Secret", s.name_any(), s.resource_version());
    }
    Ok(out)
}

/// How many objects of each kind have another resourceVersion in `after` (or are gone).
fn rewritten(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> String {
    let mut changed: BTreeMap<&str, usize> = BTreeMap::new();
    let mut total: BTreeMap<&str, usize> = BTreeMap::new();
    for (name, version) in before {
        let kind = name.split('/').next().unwrap_or_default();
        *total.entry(kind).or_default() += 1;
        if after.get(name) != Some(version) {
            *changed.entry(kind).or_default() += 1;
        }
    }
    total
        .iter()
        .map(|(kind, n)| format!("{} of {n} {kind}s", changed.get(kind).copied().unwrap_or(0)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Who spent the machine's CPU.
const CPU_PARTS: [&str; 6] = [
    "garage-reconciler",
    "garage",
    "kube-apiserver",
    "etcd",
    "rest of the control plane",
    "this process (kubesim and the bench's listing)",
];

/// CPU ticks so far of the reconciler, and of the processes whose command line names
/// `cluster_dir` (kubesim's garage, the control plane), and of this process, as [`CPU_PARTS`].
fn cpu(cluster_dir: &Path, reconciler: u32) -> [u64; 6] {
    let marker = cluster_dir.to_string_lossy().into_owned();
    let mut ticks = [0u64; 6];
    ticks[0] = process::cpu_ticks(reconciler);
    ticks[5] = process::cpu_ticks(std::process::id());
    for (pid, program) in process::processes_naming(&marker) {
        let part = match program.as_str() {
            "garage" => 1,
            "kube-apiserver" => 2,
            "etcd" => 3,
            _ => 4,
        };
        ticks[part] += process::cpu_ticks(pid);
    }
    ticks
}

/// CPU seconds each part spent between two [`cpu`] readings.
fn cpu_since(before: &[u64; 6], after: &[u64; 6]) -> String {
    CPU_PARTS
        .iter()
        .zip(before.iter().zip(after))
        .map(|(name, (b, a))| {
            format!(
                "{name} {:.0} s",
                a.saturating_sub(*b) as f64 / process::TICKS_PER_SECOND
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Garage's own count of Admin API requests and their summed duration in seconds, by
/// endpoint, from its `/metrics` (public: the operator sets no metrics token by default).
async fn garage_admin(ip: IpAddr) -> Result<BTreeMap<String, (u64, f64)>> {
    let text = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()?
        .get(format!("http://{ip}:{ADMIN_PORT}/metrics"))
        .send()
        .await
        .context("reading garage's /metrics")?
        .error_for_status()?
        .text()
        .await?;
    let mut out: BTreeMap<String, (u64, f64)> = BTreeMap::new();
    for line in text.lines() {
        let (is_count, rest) =
            if let Some(r) = line.strip_prefix("api_admin_request_duration_count{") {
                (true, r)
            } else if let Some(r) = line.strip_prefix("api_admin_request_duration_sum{") {
                (false, r)
            } else {
                continue;
            };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let Some(endpoint) = labels
            .split(',')
            .find_map(|kv| kv.strip_prefix("api_endpoint=\""))
            .map(|v| v.trim_end_matches('"').to_owned())
        else {
            continue;
        };
        let value: f64 = value.trim().parse().unwrap_or(0.0);
        let entry = out.entry(endpoint).or_default();
        if is_count {
            entry.0 += value as u64;
        } else {
            entry.1 += value;
        }
    }
    Ok(out)
}

/// The Admin API requests Garage served between two [`garage_admin`] readings, most frequent
/// first, with their mean duration as Garage measured it.
fn garage_since(
    before: &Option<BTreeMap<String, (u64, f64)>>,
    after: &Option<BTreeMap<String, (u64, f64)>>,
) -> String {
    let (Some(before), Some(after)) = (before, after) else {
        return "not readable".into();
    };
    let mut rows: Vec<(u64, f64, &str)> = after
        .iter()
        .filter(|(endpoint, _)| !endpoint.to_ascii_lowercase().contains("metrics"))
        .filter_map(|(endpoint, (n, sum))| {
            let (n0, sum0) = before.get(endpoint).copied().unwrap_or_default();
            let d = n.saturating_sub(n0);
            let name = endpoint.trim_start_matches("/v2/");
            (d > 0).then(|| (d, (sum - sum0).max(0.0) / d as f64, name))
        })
        .collect();
    if rows.is_empty() {
        return "none".into();
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.0));
    let total: u64 = rows.iter().map(|r| r.0).sum();
    let listed: Vec<String> = rows
        .iter()
        .map(|(n, mean, endpoint)| format!("{endpoint} {n} (mean {mean:.3} s)"))
        .collect();
    format!("{total} in all: {}", listed.join(", "))
}

/// A flag raised by SIGINT or SIGTERM: from here on a signal ends the wait with the report of
/// what is not Ready, and the control plane is stopped as on any other exit.
fn stop_on_signal() -> Result<Arc<AtomicBool>> {
    use tokio::signal::unix::{SignalKind, signal};
    let stop = Arc::new(AtomicBool::new(false));
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let raised = stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        raised.store(true, Ordering::Relaxed);
    });
    Ok(stop)
}

/// The API server's count of mutating requests on the kinds the reconciler writes, by
/// `VERB resource[/subresource]`, from its `/metrics` (read with kubectl).
async fn apiserver_writes(kubeconfig: &Path) -> Result<BTreeMap<String, u64>> {
    let kubectl = Tool::Kubectl.require()?;
    let out = tokio::process::Command::new(&kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["get", "--raw", "/metrics"])
        .output()
        .await
        .context("running kubectl get --raw /metrics")?;
    if !out.status.success() {
        bail!(
            "kubectl get --raw /metrics failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut counts = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{name}=\"")))
                .map(|v| v.trim_end_matches('"').to_owned())
                .unwrap_or_default()
        };
        let (verb, resource, sub) = (label("verb"), label("resource"), label("subresource"));
        if !matches!(verb.as_str(), "POST" | "PUT" | "PATCH" | "DELETE" | "APPLY")
            || !WRITTEN.contains(&resource.as_str())
        {
            continue;
        }
        let what = if sub.is_empty() {
            format!("{verb} {resource}")
        } else {
            format!("{verb} {resource}/{sub}")
        };
        *counts.entry(what).or_default() += value.trim().parse::<f64>().unwrap_or(0.0) as u64;
    }
    Ok(counts)
}

/// What `after` counts beyond `before`, the entries that grew, as `N VERB resource`.
fn since(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> Vec<String> {
    after
        .iter()
        .filter_map(|(what, n)| {
            let d = n.saturating_sub(before.get(what).copied().unwrap_or(0));
            (d > 0).then(|| format!("{d} {what}"))
        })
        .collect()
}

/// Creates `b-1`, `k-1`, `b-2`, `k-2`, ... with `in_flight` requests at once; `created`
/// counts the ones that returned.
async fn create_all(
    client: Client,
    n: usize,
    in_flight: usize,
    created: Arc<AtomicUsize>,
) -> Result<()> {
    let buckets: Api<GarageBucket> = Api::namespaced(client.clone(), NS);
    let keys: Api<GarageKey> = Api::namespaced(client, NS);
    let mut creates = futures::stream::iter(0..2 * n)
        .map(|j| {
            let (buckets, keys, created) = (buckets.clone(), keys.clone(), created.clone());
            async move {
                let i = j / 2 + 1;
                if j % 2 == 0 {
                    buckets
                        .create(&PostParams::default(), &bucket_manifest(i)?)
                        .await
                        .with_context(|| format!("creating GarageBucket b-{i}"))?;
                } else {
                    keys.create(&PostParams::default(), &key_manifest(i)?)
                        .await
                        .with_context(|| format!("creating GarageKey k-{i}"))?;
                }
                created.fetch_add(1, Ordering::Relaxed);
                anyhow::Ok(())
            }
        })
        .buffer_unordered(in_flight);
    while let Some(result) = creates.next().await {
        result?;
    }
    Ok(())
}

/// Fails when the reconciler has exited, after printing what it logged as errors besides
/// failed passes (why it stopped).
fn alive(reconciler: &mut Reconciler) -> Result<()> {
    let Err(e) = reconciler.check_alive() else {
        return Ok(());
    };
    if let Ok(text) = std::fs::read_to_string(reconciler.log()) {
        let last: Vec<&str> = text
            .lines()
            .filter(|l| {
                l.starts_with("Error:")
                    || (l.contains("\"level\":\"ERROR\"") && !l.contains("reconcile failed"))
            })
            .collect();
        for line in &last[last.len().saturating_sub(3)..] {
            println!("    reconciler log: {line}");
        }
    }
    Err(e)
}

/// `VmHWM` and `VmRSS` of the reconciler in MiB; when they cannot be read, why (it exited).
fn memory(reconciler: &mut Reconciler) -> Result<(f64, f64)> {
    process::memory(reconciler.pid()).or_else(|e| {
        alive(reconciler)?;
        Err(e)
    })
}

async fn wait_cluster_ready(client: &Client, reconciler: &mut Reconciler) -> Result<()> {
    let api: Api<GarageCluster> = Api::namespaced(client.clone(), NS);
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        alive(reconciler)?;
        let cluster = api.get(CLUSTER).await?;
        if timeline::is_ready(&cluster) {
            return Ok(());
        }
        if Instant::now() > deadline {
            let (state, message) = ready_state(
                cluster
                    .status
                    .as_ref()
                    .and_then(|s| s.conditions.as_deref()),
            );
            bail!("GarageCluster {NS}/{CLUSTER} not Ready within 300 s: {state} \"{message}\"");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The reconciler's counters, asked up to three times: under load its `/metrics` can miss the
/// client's 5 s timeout.
async fn counters(reconciler: &Reconciler) -> Result<Counters> {
    let mut tries = 0;
    loop {
        match reconciler.counters().await {
            Ok(c) => return Ok(c),
            Err(e) if tries >= 2 => return Err(e),
            Err(_) => tries += 1,
        }
    }
}

async fn passes(reconciler: &Reconciler) -> Result<Vec<Passes>> {
    let mut out = Vec::new();
    for controller in CONTROLLERS {
        out.push(reconciler.passes(controller).await?);
    }
    Ok(out)
}

fn print_passes(before: &[Passes], after: &[Passes]) {
    for ((controller, b), a) in CONTROLLERS.iter().zip(before).zip(after) {
        println!("    {controller} controller: {}", b.since(a));
    }
}

/// What the objects that are not Ready say, grouped by state, and the reconciler's failed
/// passes from its log.
async fn stuck(client: &Client, reconciler: &Reconciler) -> Result<()> {
    let mut states: BTreeMap<String, (usize, String)> = BTreeMap::new();
    for b in Api::<GarageBucket>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await?
        .items
    {
        let (state, message) = ready_state(b.status.as_ref().and_then(|s| s.conditions.as_deref()));
        let e = states
            .entry(format!("bucket {state}"))
            .or_insert((0, message));
        e.0 += 1;
    }
    for k in Api::<GarageKey>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await?
        .items
    {
        let (state, message) = ready_state(k.status.as_ref().and_then(|s| s.conditions.as_deref()));
        let e = states.entry(format!("key {state}")).or_insert((0, message));
        e.0 += 1;
    }
    for (state, (count, message)) in &states {
        println!("    {count} {state}: \"{message}\"");
    }
    let pod = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), NS)
        .get_opt(POD)
        .await?;
    let pod_ready = pod
        .and_then(|p| p.status?.conditions)
        .and_then(|cs| cs.into_iter().find(|c| c.type_ == "Ready"))
        .map(|c| {
            format!(
                "{} since {} ({})",
                c.status,
                c.last_transition_time
                    .map(|t| t.0.to_string())
                    .unwrap_or_default(),
                c.message.unwrap_or_default()
            )
        });
    println!(
        "    storage pod {POD} Ready: {}",
        pod_ready.unwrap_or_else(|| "unknown".into())
    );
    let text = std::fs::read_to_string(reconciler.log())
        .with_context(|| format!("reading {}", reconciler.log().display()))?;
    let mut failures: BTreeMap<String, usize> = BTreeMap::new();
    for line in text.lines().filter(|l| l.contains("reconcile failed")) {
        let Ok(entry) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let error = entry["fields"]["error"].as_str().unwrap_or_default();
        *failures.entry(error.to_owned()).or_default() += 1;
    }
    for (error, count) in failures.iter().take(10) {
        println!("    reconciler log: {count} failed passes: {error}");
    }
    println!("    log: {}", reconciler.log().display());
    Ok(())
}

/// An Admin API client of the storage pod at `ip`, with the cluster's admin token.
async fn admin_client(client: &Client, ip: IpAddr) -> Result<AdminClient> {
    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get(&format!("{CLUSTER}-admin-token"))
        .await
        .context("reading the cluster's admin token Secret")?;
    let token = secret
        .data
        .as_ref()
        .and_then(|d| d.get("admin-token"))
        .context("the admin token Secret has no admin-token")?;
    Ok(AdminClient::new(
        &format!("http://{ip}:{ADMIN_PORT}"),
        &AdminToken::new(String::from_utf8(token.0.clone())?),
    )?)
}

/// Checks `SAMPLES` random pairs through the Admin API: the key `k-i` named in its status
/// holds read and write on the bucket of global alias `b-i`. Returns the one-line verdict.
async fn sample(client: &Client, admin: &AdminClient, n: usize) -> Result<String> {
    let keys: Api<GarageKey> = Api::namespaced(client.clone(), NS);
    let mut picked: Vec<usize> = Vec::new();
    let mut random = random_words()?;
    while picked.len() < SAMPLES.min(n) {
        let i = (random.next().context("out of random words")? % n as u64) as usize + 1;
        if !picked.contains(&i) {
            picked.push(i);
        }
    }
    let mut verdicts = Vec::new();
    for i in picked {
        let key = keys.get(&format!("k-{i}")).await?;
        let Some(id) = key.status.as_ref().and_then(|s| s.access_key_id.clone()) else {
            println!("  k-{i}: no access key ID in its status");
            verdicts.push(format!("k-{i} FAILED"));
            continue;
        };
        let bucket = admin
            .bucket_info(BucketLookup::GlobalAlias(&format!("b-{i}")))
            .await
            .with_context(|| format!("GetBucketInfo globalAlias=b-{i}"))?;
        let info = admin
            .key_info(Lookup::Id(&id), false)
            .await
            .with_context(|| format!("GetKeyInfo {id}"))?;
        let on_key = info.buckets.iter().find(|b| b.id == bucket.id);
        let on_bucket = bucket.keys.iter().find(|k| k.access_key_id == id);
        let ok = on_key.is_some_and(|b| b.permissions.read && b.permissions.write)
            && on_bucket.is_some_and(|k| k.permissions.read && k.permissions.write);
        println!(
            "  k-{i} ({id}) on b-{i} ({}): key lists {:?}, bucket lists {:?}; the key holds {} bucket(s) -> {}",
            bucket.id,
            on_key.map(|b| b.permissions),
            on_bucket.map(|k| k.permissions),
            info.buckets.len(),
            if ok { "read+write" } else { "MISSING" }
        );
        verdicts.push(format!(
            "k-{i} {}",
            if ok { "read+write" } else { "MISSING" }
        ));
    }
    Ok(verdicts.join(", "))
}

/// Random 64-bit words from `/dev/urandom`.
fn random_words() -> Result<impl Iterator<Item = u64>> {
    let mut bytes = [0u8; 8 * 16];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").context("opening /dev/urandom")?,
        &mut bytes,
    )
    .context("reading /dev/urandom")?;
    Ok(bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect::<Vec<_>>()
        .into_iter())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifests_parse_and_the_key_names_its_bucket() {
        let c = cluster_manifest().unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(c.spec.storage.and_then(|s| s.replicas), Some(1));
        let b = bucket_manifest(7).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(b.name_any(), "b-7");
        let k = key_manifest(7).unwrap_or_else(|e| panic!("{e:#}"));
        let ids = BTreeMap::from([("b-7".to_owned(), "id7".to_owned())]);
        assert!(!granted(&k, &ids));
        let mut k = k;
        k.status = Some(
            serde_json::from_value(
                json!({"buckets": [{"bucketId": "id7", "read": true, "write": true}]}),
            )
            .unwrap_or_else(|e| panic!("{e}")),
        );
        assert!(granted(&k, &ids));
    }
}
