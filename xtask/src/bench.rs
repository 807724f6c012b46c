//! `cargo xtask bench webhook`: latency, throughput and memory of the real `garage-webhook`
//! binary over TLS with keep-alive.
//!
//! The binary needs an API server for the live, fail-closed context reads of the validating
//! endpoints, so the bench starts a local control plane (tests/localcluster), installs the
//! CRDs, writes a bench CA and serving keypair into a directory and runs the binary in
//! cert-manager mode against it. Two validation workloads: the upstream sample, whose rules
//! read no other object (so the binary makes no API call), and the node-local pools sample,
//! whose rules read GarageClusters, GarageNodes and Nodes live, exactly as in production.
//!
//! The load generator is this (debug-built) xtask: its own cost is included in every latency.
//! Each step also prints the CPU time per answer of the binary, the API server, etcd and the
//! load generator (from /proc), and the binary's RSS, so the record says what the cost is.
//! Percentiles are exact (nearest rank over every sorted sample). Targets are printed with
//! PASS/MISS and never asserted.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams};
use localcluster::{LocalCluster, Options};
use serde_json::{Value, json};

const USAGE: &str = "usage: cargo xtask bench webhook [--debug] [--seconds N]

  --debug      run the debug build of garage-webhook (faster to build, slower to run)
  --seconds N  measured seconds per load step (default 5, after 1 s of warm-up)";

const VALIDATE_PATH: &str = "/validate-garage-rajsingh-info-v1beta2-garagecluster";
/// A GarageCluster with node-local pools: its rules read GarageClusters, GarageNodes and Nodes,
/// so each validation makes the binary's three live LISTs.
const SAMPLE_POOLS: &str =
    "tests/fixtures/upstream-samples/garage_v1beta2_garagecluster_node_local_pools.yaml";
const POOLS_CONNECTIONS: usize = 16;
const SAMPLE_V1BETA2: &str = "tests/fixtures/upstream-samples/garage_v1beta2_garagecluster.yaml";
const CONCURRENCIES: [usize; 4] = [1, 4, 16, 64];
const OFFERED_RATE: u64 = 2_000;
const WARM_UP: Duration = Duration::from_secs(1);
const CONVERSION_OBJECTS: usize = 500;
const CONVERSION_REPEATS: usize = 50;
const ROUNDS: usize = 2;

const TARGET_P99_MS: f64 = 5.0;
const TARGET_CONVERSION_MS: f64 = 25.0;
const TARGET_RSS_MIB: f64 = 30.0;

struct Opts {
    release: bool,
    seconds: u64,
}

pub fn run(args: &[&str]) -> Result<()> {
    if let Some((&"reconciler", rest)) = args.split_first() {
        return crate::bench_reconciler::run(rest);
    }
    let Some((&"webhook", rest)) = args.split_first() else {
        bail!("{USAGE}");
    };
    let mut opts = Opts {
        release: true,
        seconds: 5,
    };
    let mut rest = rest.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--debug" => opts.release = false,
            "--seconds" => {
                opts.seconds = rest
                    .next()
                    .context("--seconds needs a value")?
                    .parse()
                    .context("--seconds needs a whole number")?;
            }
            other => bail!("unknown argument `{other}`\n\n{USAGE}"),
        }
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(webhook(opts))
}

/// The served binary, stopped on drop.
struct Server {
    child: Child,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace_root().join("target"))
}

fn build(release: bool) -> Result<PathBuf> {
    let began = Instant::now();
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo.args(["build", "-p", "webhook", "--bin", "garage-webhook"]);
    if release {
        cargo.arg("--release");
    }
    let status = cargo
        .current_dir(crate::workspace_root())
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("cargo build of garage-webhook failed");
    }
    println!(
        "built garage-webhook ({}) in {:.1} s",
        if release { "release" } else { "debug" },
        began.elapsed().as_secs_f64()
    );
    Ok(target_dir()
        .join(if release { "release" } else { "debug" })
        .join("garage-webhook"))
}

fn first_document(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .with_context(|| format!("parsing {}", path.display()))?;
    docs.into_iter()
        .next()
        .with_context(|| format!("{} holds no document", path.display()))
}

fn admission_review(object: &Value) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000001",
            "kind": {"group": "garage.rajsingh.info", "version": "v1beta2", "kind": "GarageCluster"},
            "resource": {"group": "garage.rajsingh.info", "version": "v1beta2", "resource": "garageclusters"},
            "requestKind": {"group": "garage.rajsingh.info", "version": "v1beta2", "kind": "GarageCluster"},
            "requestResource": {"group": "garage.rajsingh.info", "version": "v1beta2", "resource": "garageclusters"},
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        }
    }))?)
}

fn conversion_review(objects: &[Value], to: &str) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000002",
            "desiredAPIVersion": to,
            "objects": objects,
        }
    }))?)
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "MISS" }
}

#[derive(Default)]
struct Counts {
    allowed: AtomicU64,
    other: AtomicU64,
    errors: AtomicU64,
    /// The first transport error with its causes, so that a failed step says why.
    first_error: std::sync::Mutex<Option<String>>,
}

impl Counts {
    fn summary(&self) -> String {
        let errors = self.errors.load(Ordering::Relaxed);
        let first = match self.first_error.lock() {
            Ok(first) if errors > 0 => first
                .as_deref()
                .map(|e| format!(", first: {e}"))
                .unwrap_or_default(),
            _ => String::new(),
        };
        format!(
            "allowed {} / not allowed {} / transport errors {errors}{first}",
            self.allowed.load(Ordering::Relaxed),
            self.other.load(Ordering::Relaxed),
        )
    }

    /// Answers received, whatever the verdict.
    fn answered(&self) -> u64 {
        self.allowed.load(Ordering::Relaxed) + self.other.load(Ordering::Relaxed)
    }

    fn add(&self, other: &Counts) {
        self.allowed
            .fetch_add(other.allowed.load(Ordering::Relaxed), Ordering::Relaxed);
        self.other
            .fetch_add(other.other.load(Ordering::Relaxed), Ordering::Relaxed);
        self.errors
            .fetch_add(other.errors.load(Ordering::Relaxed), Ordering::Relaxed);
        if let (Ok(mut mine), Ok(theirs)) = (self.first_error.lock(), other.first_error.lock())
            && mine.is_none()
        {
            mine.clone_from(&theirs);
        }
    }
}

/// CPU time (user + system, from /proc) of the processes a validation passes through, so that
/// "what dominates the cost" is measured rather than guessed.
struct CpuMeter {
    parts: Vec<(&'static str, Vec<u32>)>,
}

/// Clock ticks per second of /proc/<pid>/stat (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

fn cpu_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // The command name may hold spaces and parentheses; the fields after its last `)` are
    // fixed: utime and stime are the 12th and 13th of them.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    field(11).unwrap_or(0) + field(12).unwrap_or(0)
}

impl CpuMeter {
    /// The webhook, this process, and the control plane processes whose command line names
    /// `cluster_dir`.
    fn new(webhook: u32, cluster_dir: &Path) -> Self {
        let marker = cluster_dir.to_string_lossy().into_owned();
        let mut parts: Vec<(&'static str, Vec<u32>)> = vec![
            ("garage-webhook", vec![webhook]),
            ("kube-apiserver", Vec::new()),
            ("etcd", Vec::new()),
            ("other control plane", Vec::new()),
            ("load generator", vec![std::process::id()]),
        ];
        let pids = std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok());
        for pid in pids {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline);
            if !cmdline.contains(&marker) {
                continue;
            }
            let program = cmdline.split('\0').next().unwrap_or_default();
            let index = match Path::new(program).file_name().and_then(|n| n.to_str()) {
                Some("kube-apiserver") => 1,
                Some("etcd") => 2,
                _ => 3,
            };
            parts[index].1.push(pid);
        }
        CpuMeter { parts }
    }

    fn snapshot(&self) -> Vec<u64> {
        self.parts
            .iter()
            .map(|(_, pids)| pids.iter().map(|&pid| cpu_ticks(pid)).sum())
            .collect()
    }

    /// Prints CPU milliseconds per answered request since `before`.
    fn report(&self, before: &[u64], answered: u64) {
        let after = self.snapshot();
        let per_request = |i: usize| {
            let ticks = after[i].saturating_sub(before[i]) as f64;
            ticks / TICKS_PER_SECOND * 1000.0 / answered.max(1) as f64
        };
        let parts: Vec<String> = self
            .parts
            .iter()
            .enumerate()
            .map(|(i, (name, _))| format!("{name} {:.2}", per_request(i)))
            .collect();
        let rss = self.parts[0]
            .1
            .first()
            .and_then(|&pid| memory(pid).ok())
            .map(|(hwm, rss)| {
                format!(
                    "; webhook RSS {rss:.1} MiB ({}), peak {hwm:.1} MiB",
                    memory_detail(self.parts[0].1[0])
                )
            })
            .unwrap_or_default();
        println!(
            "  {:<18} CPU ms per answer: {} (over {answered} answers, warm-up included){rss}",
            "",
            parts.join(", ")
        );
    }
}

/// One validation; the latency is recorded only when the call succeeded.
async fn validate(
    client: &reqwest::Client,
    url: &str,
    body: &[u8],
    counts: &Counts,
) -> Option<Duration> {
    let began = Instant::now();
    let answer = async {
        let response = client
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_vec())
            .send()
            .await?;
        let ok = response.status().is_success();
        let bytes = response.bytes().await?;
        Ok::<bool, reqwest::Error>(
            ok && bytes
                .windows(14)
                .any(|w| w == b"\"allowed\":true".as_slice()),
        )
    }
    .await;
    let elapsed = began.elapsed();
    match answer {
        Ok(true) => {
            counts.allowed.fetch_add(1, Ordering::Relaxed);
            Some(elapsed)
        }
        Ok(false) => {
            counts.other.fetch_add(1, Ordering::Relaxed);
            Some(elapsed)
        }
        Err(e) => {
            if counts.errors.fetch_add(1, Ordering::Relaxed) == 0 {
                let mut chain = e.to_string();
                let mut source = std::error::Error::source(&e);
                while let Some(cause) = source {
                    chain.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                if let Ok(mut first) = counts.first_error.lock() {
                    *first = Some(chain);
                }
            }
            None
        }
    }
}

fn report(label: &str, samples: &mut [Duration], seconds: f64, counts: &Counts) -> Duration {
    samples.sort_unstable();
    let p99 = percentile(samples, 99.0);
    println!(
        "  {label:<18} {:>8.0} req/s  p50 {:>7.2} ms  p90 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms  ({} samples; {})",
        samples.len() as f64 / seconds,
        ms(percentile(samples, 50.0)),
        ms(percentile(samples, 90.0)),
        ms(p99),
        ms(samples.last().copied().unwrap_or_default()),
        samples.len(),
        counts.summary(),
    );
    p99
}

/// `connections` workers, each with its own keep-alive connection, back to back.
async fn closed_loop(
    make_client: &dyn Fn() -> Result<reqwest::Client>,
    (url, label): (&str, &str),
    body: &Arc<Vec<u8>>,
    connections: usize,
    measured: Duration,
    meter: &CpuMeter,
) -> Result<()> {
    let cpu = meter.snapshot();
    let began = Instant::now();
    let from = began + WARM_UP;
    let until = from + measured;
    let counts = Arc::new(Counts::default());
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let client = make_client()?;
        let url = url.to_owned();
        let body = body.clone();
        let counts = counts.clone();
        workers.spawn(async move {
            let mut samples = Vec::new();
            loop {
                let sent = Instant::now();
                if sent >= until {
                    break;
                }
                // Verdicts are counted over warm-up and measured requests alike.
                if let Some(latency) = validate(&client, &url, &body, &counts).await
                    && sent >= from
                    && sent + latency <= until
                {
                    samples.push(latency);
                }
            }
            samples
        });
    }
    let mut samples = Vec::new();
    while let Some(worker) = workers.join_next().await {
        samples.extend(worker?);
    }
    report(label, &mut samples, measured.as_secs_f64(), &counts);
    meter.report(&cpu, counts.answered());
    Ok(())
}

/// Open loop: requests are started on a fixed schedule whatever the answers do. Its own client
/// opens as many connections as requests are outstanding (as the API server's would); they
/// close when it returns, so an overload does not leave the server's connection slots taken.
async fn open_loop(
    make_client: &dyn Fn() -> Result<reqwest::Client>,
    url: &str,
    body: &Arc<Vec<u8>>,
    measured: Duration,
    meter: &CpuMeter,
) -> Result<Duration> {
    let client = make_client()?;
    let cpu = meter.snapshot();
    let all = Arc::new(Counts::default());
    let total = WARM_UP + measured;
    let count = OFFERED_RATE * total.as_millis() as u64 / 1000;
    let interval = Duration::from_nanos(1_000_000_000 / OFFERED_RATE);
    let began = Instant::now();
    let from = began + WARM_UP;
    let counts = Arc::new(Counts::default());
    let mut tasks = tokio::task::JoinSet::new();
    let mut max_lag = Duration::ZERO;
    for i in 0..count {
        let due = began + interval * u32::try_from(i)?;
        tokio::time::sleep_until(due.into()).await;
        // The timer ticks in milliseconds: start everything that is due.
        max_lag = max_lag.max(Instant::now().saturating_duration_since(due));
        let client = client.clone();
        let url = url.to_owned();
        let body = body.clone();
        let counts = counts.clone();
        let all = all.clone();
        tasks.spawn(async move {
            let measured = due >= from;
            let local = Counts::default();
            let latency = validate(&client, &url, &body, &local).await;
            if measured {
                counts.add(&local);
            }
            all.add(&local);
            latency.filter(|_| measured)
        });
    }
    let offered_for = began.elapsed();
    let mut samples = Vec::new();
    while let Some(task) = tasks.join_next().await {
        if let Some(latency) = task? {
            samples.push(latency);
        }
    }
    let p99 = report(
        &format!("open loop {OFFERED_RATE}/s"),
        &mut samples,
        measured.as_secs_f64(),
        &counts,
    );
    meter.report(&cpu, all.answered());
    println!(
        "  {:<18} offered {count} requests in {:.2} s (scheduler lag max {:.2} ms; latency is \
         measured from the actual send)",
        "",
        offered_for.as_secs_f64(),
        ms(max_lag)
    );
    drop(client);
    // Let the server see the overload's connections close before the next step connects.
    tokio::time::sleep(Duration::from_secs(1)).await;
    Ok(p99)
}

/// `CONVERSION_REPEATS` reviews of `CONVERSION_OBJECTS` objects each way, one connection.
async fn conversions(
    client: &reqwest::Client,
    url: &str,
    v1beta1: &[Value],
) -> Result<(Duration, Duration)> {
    let call = |body: Vec<u8>| async move {
        let began = Instant::now();
        let response = client
            .post(url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await?
            .error_for_status()?;
        let bytes = response.bytes().await?;
        let elapsed = began.elapsed();
        let answer: Value = serde_json::from_slice(&bytes)?;
        let response = &answer["response"];
        if response["result"]["status"] != "Success" {
            bail!("conversion refused: {}", response["result"]);
        }
        let converted = response["convertedObjects"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if converted.len() != CONVERSION_OBJECTS {
            bail!(
                "{} objects came back, not {CONVERSION_OBJECTS}",
                converted.len()
            );
        }
        Ok::<_, anyhow::Error>((elapsed, converted))
    };
    let up_body = conversion_review(v1beta1, "garage.rajsingh.info/v1beta2")?;
    let (_, v1beta2) = call(up_body.clone()).await?;
    let down_body = conversion_review(&v1beta2, "garage.rajsingh.info/v1beta1")?;
    for _ in 0..3 {
        call(up_body.clone()).await?;
        call(down_body.clone()).await?;
    }
    let mut worst = Duration::ZERO;
    let mut p50s = Duration::ZERO;
    for (label, body) in [
        ("v1beta1 -> v1beta2", &up_body),
        ("v1beta2 -> v1beta1", &down_body),
    ] {
        let mut samples = Vec::with_capacity(CONVERSION_REPEATS);
        for _ in 0..CONVERSION_REPEATS {
            samples.push(call(body.clone()).await?.0);
        }
        samples.sort_unstable();
        let p99 = percentile(&samples, 99.0);
        println!(
            "  {label:<18} p50 {:>7.2} ms  p99 {:>7.2} ms  max {:>7.2} ms per review of {CONVERSION_OBJECTS} ({} KiB request)",
            ms(percentile(&samples, 50.0)),
            ms(p99),
            ms(samples.last().copied().unwrap_or_default()),
            body.len() / 1024,
        );
        worst = worst.max(p99);
        p50s = p50s.max(percentile(&samples, 50.0));
    }
    Ok((p50s, worst))
}

fn memory(pid: u32) -> Result<(f64, f64)> {
    Ok((status_mib(pid, "VmHWM:")?, status_mib(pid, "VmRSS:")?))
}

/// A size field of /proc/<pid>/status, in MiB.
fn status_mib(pid: u32, name: &str) -> Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| -> Result<f64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(name))
            .with_context(|| format!("{name} missing from /proc/{pid}/status"))?;
        let kib: f64 = line
            .split_whitespace()
            .nth(1)
            .context("malformed status line")?
            .parse()?;
        Ok(kib / 1024.0)
    };
    field(name)
}

/// Where the binary's memory is: RSS split into heap and other anonymous memory (RssAnon) and
/// mapped files such as its own code (RssFile), and its open descriptors, which are nearly all
/// client connections (each holds TLS and HTTP buffers).
fn memory_detail(pid: u32) -> String {
    let anon = status_mib(pid, "RssAnon:").unwrap_or(0.0);
    let file = status_mib(pid, "RssFile:").unwrap_or(0.0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    format!("anon {anon:.1} MiB + files {file:.1} MiB, {fds} fds")
}

async fn webhook(opts: Opts) -> Result<()> {
    let binary = build(opts.release)?;
    let measured = Duration::from_secs(opts.seconds);
    let root = crate::workspace_root();
    let samples = root.join("tests/fixtures/upstream-samples");
    let cluster_v1beta2 = first_document(&root.join(SAMPLE_V1BETA2))?;
    let cluster_v1beta1 = first_document(&samples.join("garage_v1beta1_garagecluster.yaml"))?;
    let review = Arc::new(admission_review(&cluster_v1beta2)?);
    let pools_review = Arc::new(admission_review(&first_document(
        &root.join(SAMPLE_POOLS),
    )?)?);
    let v1beta1: Vec<Value> = (0..CONVERSION_OBJECTS)
        .map(|i| {
            let mut object = cluster_v1beta1.clone();
            object["metadata"]["name"] = json!(format!("garage-{i}"));
            object["metadata"]["uid"] = json!(format!("00000000-0000-0000-0000-{i:012}"));
            object
        })
        .collect();

    println!("starting a local control plane for the webhook's context reads…");
    let cluster = LocalCluster::start(Options {
        name: "webhook-bench".into(),
        ..Options::default()
    })
    .await
    .context("starting the local cluster (cargo xtask tools builds its binaries)")?;
    let kube = cluster.client().await?;
    let crds: Api<CustomResourceDefinition> = Api::all(kube.clone());
    for crd in shared_types::crds::all()? {
        let name = crd.metadata.name.clone().unwrap_or_default();
        crds.patch(
            &name,
            &PatchParams::apply("garage-operator-bench").force(),
            &Patch::Apply(&crd),
        )
        .await
        .with_context(|| format!("installing CRD {name}"))?;
    }

    // A bench CA and a serving keypair, mounted as cert-manager would.
    certs::install_default_provider();
    let dir = target_dir().join("tmp").join("webhook-bench");
    std::fs::create_dir_all(&dir)?;
    let now = SystemTime::now();
    let ca = certs::generate::new_authority(now, Duration::from_secs(86_400))?;
    let leaf = certs::generate::issue_serving(
        &ca,
        &["127.0.0.1".to_owned(), "localhost".to_owned()],
        now,
        Duration::from_secs(86_400),
    )?;
    std::fs::write(dir.join("tls.crt"), &leaf.cert_pem)?;
    std::fs::write(dir.join("tls.key"), &leaf.key_pem)?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let log = dir.join("garage-webhook.log");
    let mut server = Server {
        child: Command::new(&binary)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--cert-mode", "cert-manager", "--cert-dir"])
            .arg(&dir)
            .args(["--log-format", "text"])
            .env("KUBECONFIG", cluster.kubeconfig())
            .env("POD_NAMESPACE", "garage-operator-system")
            .env("POD_SERVICE_ACCOUNT", "garage-operator")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?,
    };
    let pid = server.child.id();
    let meter = CpuMeter::new(pid, cluster.dir());

    let ca_cert = reqwest::Certificate::from_pem(ca.cert_pem.as_bytes())?;
    let make_client = move || -> Result<reqwest::Client> {
        Ok(reqwest::Client::builder()
            .tls_certs_only([ca_cert.clone()])
            .no_proxy()
            .pool_idle_timeout(None)
            .build()?)
    };
    let base = format!("https://127.0.0.1:{port}");
    let url = format!("{base}{VALIDATE_PATH}");
    let convert_url = format!("{base}/convert");
    let client = make_client()?;

    // Ready, and the CRDs served: wait for the first allowed verdict.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = server.child.try_wait()? {
            bail!("garage-webhook exited ({status}); see {}", log.display());
        }
        let counts = Counts::default();
        if validate(&client, &url, &review, &counts).await.is_some()
            && counts.allowed.load(Ordering::Relaxed) == 1
        {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "garage-webhook did not allow the sample within 60 s ({}); see {}",
                counts.summary(),
                log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let (idle_hwm, idle_rss) = memory(pid)?;
    println!(
        "garage-webhook pid {pid} ready on {base}; idle RSS {idle_rss:.1} MiB ({}; peak so far \
         {idle_hwm:.1} MiB)",
        memory_detail(pid)
    );
    println!(
        "each validation: AdmissionReview CREATE of {SAMPLE_V1BETA2} (first document, {} bytes; \
         no node-local pools, so no live reads), or of {SAMPLE_POOLS} ({} bytes; three live \
         LISTs each)",
        review.len(),
        pools_review.len()
    );

    let mut open_p99 = Vec::new();
    let mut conversion_p99 = Vec::new();
    for round in 1..=ROUNDS {
        println!(
            "\nround {round}/{ROUNDS}: validation, closed loop ({} s warm-up + {} s each)",
            WARM_UP.as_secs(),
            measured.as_secs()
        );
        for connections in CONCURRENCIES {
            let label = format!("{connections} connection(s)");
            closed_loop(
                &make_client,
                (&url, &label),
                &review,
                connections,
                measured,
                &meter,
            )
            .await?;
        }
        println!("round {round}/{ROUNDS}: validation, open loop");
        open_p99.push(open_loop(&make_client, &url, &review, measured, &meter).await?);
        println!(
            "round {round}/{ROUNDS}: ConversionReview of {CONVERSION_OBJECTS} GarageClusters x {CONVERSION_REPEATS}"
        );
        let conversion_client = make_client()?;
        conversion_p99.push(
            conversions(&conversion_client, &convert_url, &v1beta1)
                .await?
                .1,
        );
        // Last in the round: its load on the control plane must not spill into the open loop.
        println!("round {round}/{ROUNDS}: validation of {SAMPLE_POOLS} (live reads), closed loop");
        let label = format!("{POOLS_CONNECTIONS} conn, pools");
        closed_loop(
            &make_client,
            (&url, &label),
            &pools_review,
            POOLS_CONNECTIONS,
            measured,
            &meter,
        )
        .await?;
    }
    let (hwm, rss) = memory(pid)?;
    println!(
        "\ngarage-webhook ({}): peak RSS (VmHWM) {hwm:.1} MiB, RSS after load {rss:.1} MiB ({})",
        if opts.release { "release" } else { "debug" },
        memory_detail(pid)
    );
    // Last, because it overloads the binary: the peak above is what the rounds needed.
    let mut pools_p99 = Vec::new();
    for round in 1..=ROUNDS {
        println!("\nround {round}/{ROUNDS}: validation of {SAMPLE_POOLS} (live reads), open loop");
        pools_p99.push(open_loop(&make_client, &url, &pools_review, measured, &meter).await?);
    }
    let (overload_hwm, overload_rss) = memory(pid)?;
    println!(
        "garage-webhook after the live-read open loops: peak RSS (VmHWM) {overload_hwm:.1} MiB, \
         RSS {overload_rss:.1} MiB"
    );
    if let Some(status) = server.child.try_wait()? {
        bail!("garage-webhook exited during the bench ({status})");
    }
    drop(server);
    drop(cluster);
    println!("\ntargets (informational, never asserted):");
    for (workload, p99s) in [("sample", &open_p99), ("pools, live reads", &pools_p99)] {
        for (round, p99) in p99s.iter().enumerate() {
            println!(
                "  validation p99 at {OFFERED_RATE}/s < {TARGET_P99_MS} ms ({workload:<17})  round {}: {:>8.2} ms  {}",
                round + 1,
                ms(*p99),
                verdict(ms(*p99) < TARGET_P99_MS)
            );
        }
    }
    for (round, p99) in conversion_p99.iter().enumerate() {
        println!(
            "  500-object conversion p99 < {TARGET_CONVERSION_MS} ms   round {}: {:>7.2} ms  {}",
            round + 1,
            ms(*p99),
            verdict(ms(*p99) < TARGET_CONVERSION_MS)
        );
    }
    for (when, peak) in [("rounds", hwm), ("after overload", overload_hwm)] {
        println!(
            "  peak RSS < {TARGET_RSS_MIB} MiB ({when:<14})        {peak:>7.1} MiB  {}",
            verdict(peak < TARGET_RSS_MIB)
        );
    }
    Ok(())
}
