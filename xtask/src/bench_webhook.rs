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
//! The load generator is this xtask, rebuilt with the optimised `loadgen` profile (see
//! `bench.rs`); its own cost is still included in every latency.
//! Each step also prints the CPU time per answer of the binary, the API server, etcd and the
//! load generator (from /proc), and the binary's RSS, so the record says what the cost is.
//! Percentiles are exact (nearest rank over every sorted sample). Targets are printed with
//! PASS/MISS and never asserted.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result, bail};
use localcluster::{LocalCluster, Options};
use serde_json::{Value, json};

use self::load::{Counts, closed_loop, conversions, ms, open_loop, validate, verdict};
use self::meter::{CpuMeter, memory, memory_detail};
use self::reviews::{admission_review, first_document};

mod load;
mod meter;
mod population;
mod reviews;

const USAGE: &str = "usage: cargo xtask bench webhook [--debug] [--musl] [--binary P] [--seconds N]

  --debug      run the debug build of garage-webhook (faster to build, slower to run)
  --musl       run the static musl build (needs the target and musl-gcc)
  --binary P   measure the garage-webhook binary at P as it is (no build)
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
    musl: bool,
    /// A binary to measure as it is, instead of building one.
    binary: Option<PathBuf>,
    seconds: u64,
}

/// The static musl target, measured as a variant (`--musl`); the image ships glibc.
const MUSL: &str = "x86_64-unknown-linux-musl";

/// Runs `cargo xtask bench webhook` with the arguments after `webhook`.
pub fn run(rest: &[&str]) -> Result<()> {
    let mut opts = Opts {
        release: true,
        musl: false,
        binary: None,
        seconds: 5,
    };
    let mut rest = rest.iter();
    while let Some(arg) = rest.next() {
        match *arg {
            "--debug" => opts.release = false,
            "--musl" => opts.musl = true,
            "--binary" => {
                opts.binary = Some(rest.next().context("--binary needs a path")?.into());
            }
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

fn build(opts: &Opts) -> Result<PathBuf> {
    if let Some(binary) = &opts.binary {
        if !binary.is_file() {
            bail!("--binary {}: no such file", binary.display());
        }
        println!("measuring {} as it is (not built)", binary.display());
        return Ok(std::fs::canonicalize(binary)?);
    }
    let began = Instant::now();
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo.args(["build", "-p", "webhook", "--bin", "garage-webhook"]);
    if opts.release {
        cargo.arg("--release");
    }
    if opts.musl {
        cargo.args(["--target", MUSL]);
    }
    let status = cargo
        .current_dir(crate::workspace_root())
        .status()
        .context("running cargo build")?;
    if !status.success() {
        if opts.musl {
            bail!(
                "cargo build of garage-webhook for {MUSL} failed; it needs the target's standard \
                 library (`rustup target add {MUSL}`) and a musl C compiler for ring (`musl-gcc`, \
                 Debian package musl-tools)"
            );
        }
        bail!("cargo build of garage-webhook failed");
    }
    let profile = if opts.release { "release" } else { "debug" };
    println!(
        "built garage-webhook ({profile}{}) in {:.1} s",
        if opts.musl { ", musl" } else { "" },
        began.elapsed().as_secs_f64()
    );
    let mut dir = crate::target_dir();
    if opts.musl {
        dir.push(MUSL);
    }
    Ok(dir.join(profile).join("garage-webhook"))
}

async fn webhook(opts: Opts) -> Result<()> {
    let binary = build(&opts)?;
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
        // The population's Nodes have no kubelet; with the default grace the node lifecycle
        // controller would rewrite all of them (NotReady, taints) in the middle of a step.
        node_monitor_grace: Duration::from_secs(3600),
        ..Options::default()
    })
    .await
    .context("starting the local cluster (cargo xtask tools builds its binaries)")?;
    let kube = cluster.client().await?;
    crate::crds::install(&kube).await?;

    let pools_sample = first_document(&root.join(SAMPLE_POOLS))?;
    let node_bytes = population::populate(&kube, &pools_sample).await?;
    println!(
        "cluster holds {} Nodes ({node_bytes} bytes of JSON each, {IMAGES} images in status), {} \
         other GarageClusters with node-local pools and {} Manual GarageNodes",
        population::NODES,
        population::CLUSTERS,
        population::GARAGE_NODES,
        IMAGES = population::IMAGES_PER_NODE,
    );

    // A bench CA and a serving keypair, mounted as cert-manager would.
    certs::install_default_provider();
    let dir = crate::target_dir().join("tmp").join("webhook-bench");
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
    let image_env = crate::image::env(&root)?;
    let mut server = Server {
        child: Command::new(&binary)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--cert-mode", "cert-manager", "--cert-dir"])
            .arg(&dir)
            .args(["--log-format", "text"])
            // Every load connection comes from this one address, where an API server's would
            // come from several replicas' worth of callers: the per-source cap would measure
            // itself instead of the server.
            .args(["--max-connections-per-source", "4096"])
            .env("KUBECONFIG", cluster.kubeconfig())
            .env("POD_NAMESPACE", "garage-operator-system")
            .env("POD_SERVICE_ACCOUNT", "garage-operator")
            .env("RUST_LOG", "warn")
            .envs(image_env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?,
    };
    let pid = server.child.id();
    for (key, value) in &image_env {
        println!("garage-webhook runs with {key}={value} (the image's Dockerfile ENV)");
    }
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
         no node-local pools, so no live reads), or of {SAMPLE_POOLS} ({} bytes; LISTs of GarageClusters, \
         GarageNodes and the selected Nodes' metadata each)",
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
        "\ngarage-webhook ({}{}): peak RSS (VmHWM) {hwm:.1} MiB, RSS after load {rss:.1} MiB ({})",
        if opts.release { "release" } else { "debug" },
        if opts.musl { ", musl" } else { "" },
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
