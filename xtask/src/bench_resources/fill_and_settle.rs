//! The run of `bench resources` once the reconciler is up: the GarageCluster made Ready, the
//! objects created while both kinds are listed every second until all are Ready, the settle
//! window watched for writes, the check through the Admin API, and the summary. It reads its
//! figures through [`super::figures`] and reports what is stuck through [`super::check`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::label;

use super::check::{admin_client, sample, stuck};
use super::figures::{
    alive, apiserver_writes, counters, cpu, cpu_since, garage_admin, garage_since, memory, passes,
    print_passes, rewritten, since, versions,
};
use super::objects::{Tally, cluster_manifest, create_all, ready_state};
use super::{CLUSTER, Opts, POD};
use crate::bench_reconciler::process::{self, Reconciler};
use crate::bench_reconciler::{NS, Stage, secs, timeline};

/// How often the objects are listed.
const POLL: Duration = Duration::from_secs(1);
/// How often a progress line is printed.
const PROGRESS: Duration = Duration::from_secs(15);

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

pub(super) async fn fill_and_settle(
    staged: &Stage,
    reconciler: &mut Reconciler,
    opts: &Opts,
) -> Result<()> {
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
