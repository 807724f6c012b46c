//! Site E, the chaos site. Its GarageCluster is reconciled not by the in-process controllers
//! but by two `garage-reconciler` processes, the real binary as the chart runs it: both
//! contend for one Lease, and each is started again a second after it exits, as its
//! Deployment would. Once the cluster is Ready, a process of another install runs beside them
//! for a while and must leave the cluster alone (`second_install`). With 200 checksummed
//! objects written, a 4 -> 3 drain runs through two faults:
//!
//! - the leader is frozen (SIGSTOP) past its lease: the standby takes the Lease no sooner than
//!   the lease allows and carries the drain on; thawed, the old leader exits without one more
//!   API write;
//! - every Garage process of the cluster is frozen, so each Admin API call times out: the
//!   drain reports `GarageAPIError`, removes nothing and completes once Garage answers again.
//!
//! After the other sites are done, the finale (see `main.rs`) takes the webhook away during
//! an update and restarts the API server in the middle of a rollout on the same cluster.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use localcluster::wait_until as wait;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::json;
use shared_types::conditions::cluster::CONDITION_STORAGE_DRAIN_READY;
use shared_types::conditions::reason::REASON_GARAGE_API_ERROR;
use shared_types::garage_node::GarageNode;
use shared_types::keys::label::{LABEL_CLUSTER, LABEL_TIER};
use tokio::task::JoinHandle;

use crate::rollout::Midway;
use crate::support::*;
use crate::{NAME, NS_E, World};

/// The Lease the two processes contend for; with the namespace, the identity of their install.
pub(crate) const LEASE: &str = "chaos-reconciler";
/// The leader timing the binary uses (`Timing::DEFAULT`): a standby may take over only this
/// long after the holder's last renewal.
const LEASE_DURATION: Duration = Duration::from_secs(15);
/// How often the holder renews, at most.
const RETRY_PERIOD: Duration = Duration::from_secs(2);
/// The member the drain takes away.
const LEAVING: &str = "garage-storage-3";

/// One `garage-reconciler` process, started again a second after each exit until
/// [`Contender::shutdown`].
pub(crate) struct Contender {
    name: String,
    pid: Arc<AtomicI32>,
    exits: Arc<AtomicUsize>,
    log: PathBuf,
    port: u16,
    stop: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Contender {
    /// Starts process `name` contending for `lease` in site E's namespace.
    fn start(name: &str, lease: &str, kubeconfig: &Path, dir: &Path) -> anyhow::Result<Contender> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let log = dir.join(format!("{name}.log"));
        let (pid, exits, stop) = (
            Arc::new(AtomicI32::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let command = {
            let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_garage-reconciler"));
            c.env("KUBECONFIG", kubeconfig)
                .env("POD_NAMESPACE", NS_E)
                .env("POD_NAME", name)
                .env("GARAGE_RECONCILER_LEASE", lease)
                .env("GARAGE_RECONCILER_LISTEN", format!("127.0.0.1:{port}"))
                .env("WATCH_NAMESPACES", NS_E)
                // As the in-process reconciler: long enough to see a counter change twice.
                .env("GARAGE_DRAIN_QUIET_SECONDS", "5")
                .env("RUST_LOG", "reconciler=info,garage_reconciler=info")
                .kill_on_drop(true);
            c
        };
        let task = tokio::spawn({
            let (pid, exits, stop, log) = (pid.clone(), exits.clone(), stop.clone(), log.clone());
            let mut command = command;
            async move {
                while !stop.load(Ordering::SeqCst) {
                    let out = match std::fs::File::options()
                        .create(true)
                        .append(true)
                        .open(&log)
                    {
                        Ok(out) => out,
                        Err(e) => {
                            println!("chaos: cannot open {}: {e}", log.display());
                            return;
                        }
                    };
                    let Ok(err) = out.try_clone() else { return };
                    let mut child = match command.stdout(out).stderr(err).spawn() {
                        Ok(child) => child,
                        Err(e) => {
                            println!("chaos: cannot start the reconciler binary: {e}");
                            return;
                        }
                    };
                    pid.store(
                        child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0),
                        Ordering::SeqCst,
                    );
                    let _ = child.wait().await;
                    pid.store(0, Ordering::SeqCst);
                    exits.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        });
        Ok(Contender {
            name: name.to_owned(),
            pid,
            exits,
            log,
            port,
            stop,
            task,
        })
    }

    fn pid(&self) -> anyhow::Result<Pid> {
        match self.pid.load(Ordering::SeqCst) {
            0 => Err(anyhow!("{} is not running", self.name)),
            pid => Ok(Pid::from_raw(pid)),
        }
    }

    /// A counter of its `/metrics`, with the number of exits seen before the answer: a
    /// value is the current process's only if that number is still [`Contender::exits`]
    /// afterwards.
    pub(crate) async fn counter(&self, name: &str) -> anyhow::Result<(usize, f64)> {
        let exits = self.exits.load(Ordering::SeqCst);
        let text = reqwest::get(format!("http://127.0.0.1:{}/metrics", self.port))
            .await?
            .text()
            .await?;
        let value = text
            .lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        Ok((exits, value))
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub(crate) async fn shutdown(self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(pid) = self.pid() {
            let _ = kill(pid, Signal::SIGCONT);
            let _ = kill(pid, Signal::SIGTERM);
        }
        let _ = tokio::time::timeout(Duration::from_secs(20), self.task).await;
    }
}

/// The two contenders of site E.
pub(crate) struct Chaos {
    contenders: Vec<Contender>,
    kubeconfig: PathBuf,
    dir: PathBuf,
}

impl Chaos {
    /// Starts both processes; their logs go to `dir`.
    pub(crate) fn start(kubeconfig: &Path, dir: &Path) -> anyhow::Result<Chaos> {
        std::fs::create_dir_all(dir)?;
        let contenders = ["reconciler-a", "reconciler-b"]
            .into_iter()
            .map(|name| Contender::start(name, LEASE, kubeconfig, dir))
            .collect::<anyhow::Result<_>>()?;
        Ok(Chaos {
            contenders,
            kubeconfig: kubeconfig.to_path_buf(),
            dir: dir.to_path_buf(),
        })
    }

    /// Starts process `name` of another install (it holds `lease`, not [`LEASE`]) in site
    /// E's namespace, logging beside the two; the caller shuts it down.
    pub(crate) fn start_other_install(&self, name: &str, lease: &str) -> anyhow::Result<Contender> {
        Contender::start(name, lease, &self.kubeconfig, &self.dir)
    }

    fn named(&self, name: &str) -> anyhow::Result<&Contender> {
        self.contenders
            .iter()
            .find(|c| c.name == name)
            .with_context(|| format!("no contender named {name}"))
    }

    /// Stops both processes (thawing a frozen one first).
    pub(crate) async fn shutdown(self) {
        for c in self.contenders {
            c.shutdown().await;
        }
    }

    /// Where the processes log.
    pub(crate) fn logs(&self) -> Vec<PathBuf> {
        self.contenders.iter().map(|c| c.log.clone()).collect()
    }
}

/// The holder of the contenders' Lease.
async fn holder(client: &Client) -> anyhow::Result<Option<String>> {
    Ok(Api::<Lease>::namespaced(client.clone(), NS_E)
        .get_opt(LEASE)
        .await?
        .and_then(|l| l.spec?.holder_identity))
}

/// Site E: a 4-member cluster under the two processes; a second install beside them for a
/// while, which leaves the cluster alone; 200 objects; the 4 -> 3 drain through a frozen
/// leader and a frozen Garage; every object read back. The cluster stays for the finale.
pub(crate) async fn run(w: &mut World<'_>, chaos: &Chaos) -> anyhow::Result<()> {
    crate::create_cluster(w).await?;
    crate::bootstrap::ready(w).await?;
    let leader = holder(&w.client).await?.context("no contender leads")?;
    println!("chaos: {leader} leads and bootstrapped the cluster");
    crate::second_install::leaves_it_alone(w, chaos).await?;
    crate::membership::scale_up(w).await?;
    let faults = {
        let (client, sim) = (w.client.clone(), w.sim);
        let (gns, pods) = (w.gns.clone(), w.pods.clone());
        let clusters = w.clusters.clone();
        Box::pin(async move {
            leader_frozen(&client, chaos, &pods).await?;
            garage_frozen(sim, &clusters, &gns, &pods).await
        })
    };
    crate::drain::scale_down(w, Midway::Fault(faults)).await
}

/// The leader is frozen past its lease in the middle of the drain. The standby takes the
/// Lease, no sooner than the lease allows, and works the drain on (the leaving member's pod
/// still runs); thawed, the old leader exits on its lost tenure with no further API write.
async fn leader_frozen(
    client: &Client,
    chaos: &Chaos,
    pods: &Api<k8s_openapi::api::core::v1::Pod>,
) -> anyhow::Result<()> {
    let name = holder(client).await?.context("no contender leads")?;
    let leader = chaos.named(&name)?;
    let standby = chaos
        .contenders
        .iter()
        .find(|c| c.name != name)
        .context("no standby")?;
    let pid = leader.pid()?;
    let exits = leader.exits.load(Ordering::SeqCst);
    let (_, writes) = leader.counter("garage_reconciler_api_writes_total").await?;
    kill(pid, Signal::SIGSTOP)?;
    let t = Instant::now();
    println!("chaos: {name} (the leader, pid {pid}) frozen mid-drain after {writes} API writes");
    let result = async {
        wait(
            &format!("{} holding the Lease", standby.name),
            LEASE_DURATION * 4,
            || async { Ok(holder(client).await?.as_deref() == Some(standby.name.as_str())) },
        )
        .await?;
        let takeover = t.elapsed();
        // The frozen holder renewed at most one retry period before it froze.
        ensure!(
            takeover + RETRY_PERIOD >= LEASE_DURATION,
            "{} took the Lease {:.1}s after the leader froze, before its lease ran out",
            standby.name,
            takeover.as_secs_f64()
        );
        // The new leader works while the old one stays frozen.
        let (_, before) = standby
            .counter("garage_reconciler_reconciles_total")
            .await?;
        wait(
            &format!("{} reconciling", standby.name),
            Duration::from_secs(120),
            || async {
                Ok(standby
                    .counter("garage_reconciler_reconciles_total")
                    .await?
                    .1
                    > before)
            },
        )
        .await?;
        ensure!(
            pods.get_opt(&format!("{LEAVING}-0")).await?.is_some(),
            "the leaving member's pod went while the drain was unproven"
        );
        println!(
            "chaos: {} took the Lease {:.1}s after the leader froze and reconciles",
            standby.name,
            takeover.as_secs_f64()
        );
        Ok(())
    }
    .await;
    let logged = leader.log_text().len();
    kill(pid, Signal::SIGCONT)?;
    result?;
    // Thawed, it sees its tenure over before its work runs again, and exits; its last words
    // count its API writes, which must be those it had made before it froze. (A write in the
    // instant between the count read above and the SIGSTOP would show here as one more.)
    let thawed = Instant::now();
    wait(
        &format!("{name} exiting after the thaw"),
        Duration::from_secs(60),
        || async { Ok(leader.exits.load(Ordering::SeqCst) > exits) },
    )
    .await?;
    let log = leader.log_text();
    let last_words = log.get(logged..).unwrap_or_default();
    ensure!(
        last_words.contains("leadership lost"),
        "{name} exited, but its log does not say it lost its leadership ({})",
        leader.log.display()
    );
    let total = last_words
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["fields"]["message"] == "controllers stopped")
        .find_map(|l| l["fields"]["api_writes"].as_f64())
        .with_context(|| format!("{name} exited without counting its writes"))?;
    ensure!(
        total == writes,
        "{name} made {} API writes after it was frozen and lost its tenure",
        total - writes
    );
    println!(
        "chaos: {name} thawed: exited {:.1}s later on its lost tenure with {total} API writes, none after the freeze; it restarts as the standby",
        thawed.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Every Garage process of the cluster is frozen, so each Admin API call times out: the drain
/// says `GarageAPIError` and removes nothing; Garage is thawed and the drain goes on.
async fn garage_frozen(
    sim: &kubesim::KubeSim,
    clusters: &Api<shared_types::garage_cluster::v1beta2::GarageCluster>,
    gns: &Api<GarageNode>,
    pods: &Api<k8s_openapi::api::core::v1::Pod>,
) -> anyhow::Result<()> {
    let members: Vec<String> = pods
        .list(
            &ListParams::default().labels(&format!("{LABEL_CLUSTER}={NAME},{LABEL_TIER}=storage")),
        )
        .await?
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    ensure!(members.len() == 4, "storage pods: {members:?}");
    for pod in &members {
        sim.pause_container(NS_E, pod, "garage").await?;
    }
    let t = Instant::now();
    let result = wait(
        "StorageDrainReady=False/GarageAPIError while Garage is frozen",
        Duration::from_secs(120),
        || async {
            let c = clusters.get(NAME).await?;
            let drain = c
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == CONDITION_STORAGE_DRAIN_READY))
                .cloned();
            ensure!(
                gns.get_opt(LEAVING).await?.is_some()
                    && pods.get_opt(&format!("{LEAVING}-0")).await?.is_some(),
                "the leaving member went while Garage could not be read"
            );
            Ok(drain.is_some_and(|d| d.status == "False" && d.reason == REASON_GARAGE_API_ERROR))
        },
    )
    .await;
    let said = clusters
        .get(NAME)
        .await
        .ok()
        .and_then(|c| c.status?.conditions)
        .and_then(|cs| {
            cs.into_iter()
                .find(|c| c.type_ == CONDITION_STORAGE_DRAIN_READY)
        })
        .map(|c| c.message);
    for pod in &members {
        sim.resume_container(NS_E, pod, "garage").await?;
    }
    result?;
    ensure!(
        gns.get_opt(LEAVING).await?.is_some(),
        "{LEAVING} went while Garage was frozen"
    );
    println!(
        "chaos: every Garage process frozen for {:.1}s mid-drain: nothing removed; StorageDrainReady said {said:?}",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The webhook is away: a spec change and a new GarageNode are refused (fail closed) and
/// nothing of either is stored.
pub(crate) async fn refused_without_webhook(w: &World<'_>) -> anyhow::Result<()> {
    let before = w.clusters.get(NAME).await?;
    let nodes_before = node_ids(&w.gns).await?;
    let refused = w
        .clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"storage": {"env": [{"name": "E2E_CHAOS", "value": "1"}]}}}),
            ),
        )
        .await
        .err()
        .context("a spec change was admitted with the webhook away")?;
    let node: GarageNode = serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageNode",
        "metadata": {"name": "chaos-manual"},
        "spec": {"clusterRef": {"name": NAME}, "zone": "zone-a", "capacity": "1Gi",
                 "storage": {
                     "metadata": {"size": "100Mi", "storageClassName": kubesim::STORAGE_CLASS},
                     "data": {"size": "1Gi", "storageClassName": kubesim::STORAGE_CLASS}}},
    }))?;
    let node_refused = w
        .gns
        .create(&PostParams::default(), &node)
        .await
        .err()
        .context("a GarageNode was created with the webhook away")?;
    for e in [&refused, &node_refused] {
        ensure!(
            e.to_string().contains("webhook"),
            "refused, but not for want of the webhook: {e}"
        );
    }
    let after = w.clusters.get(NAME).await?;
    ensure!(
        after.metadata.generation == before.metadata.generation
            && serde_json::to_value(&after.spec)? == serde_json::to_value(&before.spec)?,
        "the refused change left something in the spec"
    );
    ensure!(
        node_ids(&w.gns).await? == nodes_before && w.gns.get_opt("chaos-manual").await?.is_none(),
        "the refused GarageNode left something behind"
    );
    println!(
        "chaos: webhook away: the spec change refused ({}), the GarageNode refused ({}); spec and members unchanged",
        short(&refused.to_string()),
        short(&node_refused.to_string())
    );
    Ok(())
}

/// The first 120 characters of an error, for a log line.
fn short(s: &str) -> String {
    s.chars().take(120).collect()
}
