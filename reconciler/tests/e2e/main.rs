//! End-to-end: one real control plane (localcluster), kubesim with four nodes in four zones
//! (two of them with clocks an hour ahead and behind; a fifth, tainted, for the lost-node
//! step) running real garage 2.5.0, the webhook
//! appliance serving in this process behind the chart's own CRDs and webhook registrations
//! (pointed at it by URL, caBundle written by the webhook itself), and the reconciler's
//! controllers run in-process. Every write of the scenario therefore passes admission. One
//! scenario, in order, one module per stage:
//!
//! 1. `bootstrap`: a 3-member GarageCluster (replication factor 3, local-sim PVCs) is created;
//!    the reconciler is aborted mid-bootstrap and restarted; the cluster reaches Ready with
//!    exactly three roles and its NetworkPolicy (`network_policy`: the reconciler runs with
//!    `garageNetworkPolicy` on) holds the expected ports and peers; 200 objects PUT through
//!    one pod read back through another; five resyncs make no API write; a deleted storage
//!    pod comes back with the same node ID;
//! 2. `membership`: two Manual GarageNodes (claim templates on the tainted node; emptyDir
//!    metadata and an existing claim) join beside the Auto group; 3 -> 4 adds one role; then
//!    `rollout`: with four members and 200 random objects, a pod-template change and then a
//!    Garage configuration change (turning K2V on, with a reconciler restart mid-way) replace
//!    every pod one at a time under a continuous S3 reader: never two pods down, same node
//!    IDs, no failed GET; every pod then serves K2V;
//! 3. `drain::scale_down`: with 200 random objects written, 4 -> 3 drains the fourth member
//!    through a reconciler restart (its pod runs until DrainPrepared=True) and every object
//!    reads back;
//!    On site B (3 Auto + 2 Manual members), `evictions`: a storage pod is evicted through the
//!    Eviction API and a second, asked right after, is refused by the storage budget until
//!    the first is back (never two storage pods down; every object reads back); site P plays
//!    the same on its pool-only cluster;
//! 4. `lost`: a wiped metadata volume under a running member is reported as an identity
//!    change with no layout write; then its Kubernetes Node is lost, the loss acknowledged,
//!    the workload fenced, the dead role removed by hand, skip-dead-nodes requested, the
//!    destination-only proof completes, the node is deleted and every object reads back;
//!    Then `claims::retired`: manual-a created again is held (`RetiredClaims`) until the
//!    claims its lost identity left are deleted, and joins with a new identity;
//! 5. `drain::manual`: a Manual node's DELETE is refused before its proof and allowed after;
//!    every object reads back; on site B `claims::rollout_barrier` follows: a claim deleted and
//!    recreated mid-rollout stops the rollout (`ClaimReplaced`) with no layout change;
//! 6. `replication`: with three roles left at factor 3 a scale-down reports
//!    ReplicationUnsafe and removes nothing; a fourth member joins and the drain resumes;
//! 7. `teardown`: deleting the GarageCluster (mid-drain) tears everything down through the
//!    finalizers (no one touches one by hand) and leaves only the retained claims.
//! 8. `pools` (site C, beside A and B): a pool-only cluster on HostPath directories of the
//!    Nodes its selector picks runs one member per Node; 200 random objects are written; a
//!    selector typo drains no one; a replacement Node joins before the Node that leaves is
//!    drained (through a reconciler restart once its drain is recorded; its pod running until
//!    the proof), its HostPath data is kept and every object
//!    reads back; a pod whose disk marker is missing never starts; a DaemonSet deleted out of
//!    band is recreated only after its pods are gone, and a cold restart of every pool pod
//!    comes back with the same identities; a fourth member's Node (n6) is lost: the member
//!    is kept until the loss is acknowledged, then fenced, its role removed by hand and
//!    proven on the destinations, every object read back; Destroy leaves no operator key on
//!    any Node;
//! 9. `volumes` (site D, beside the others): VolumeAttributesClass on the claims of a
//!    3-member cluster: a live data class change reaches every data claim without a restart,
//!    an infeasible class is reported and recovered, a live unset is refused; then
//!    `buckets` on the same cluster: the upstream bucket, key and admin-token samples become
//!    Ready, a key's Secret works with an S3 client where granted and only there, quotas hold,
//!    a cross-namespace key works through grants and loses access with them, a non-empty bucket
//!    is kept until emptied, a deleted key stops authenticating; then `handles`: the upstream
//!    management handle (its URL a storage pod's) and one by `clusterRef` become Running and
//!    create nothing, their bucket and keys serve checksummed objects, and deleting them
//!    leaves Garage as it was; then `drift`: a label changed
//!    or removed by hand on a generated GarageNode, its StatefulSet, two Services, the
//!    disruption budget and the NetworkPolicy is put back with no layout change; then the
//!    Garage settings (`workers`, `layout_parameters`, `operations`), `monitoring` (the
//!    ServiceMonitor of `spec.monitoring` before and after its CRD is installed) and
//!    `status_fields`; last, `data_paths`: a
//!    one-member cluster on two `spec.storage.data.paths`, one claim and class each, its
//!    layout capacity their sum, blocks of checksummed objects in both, one path's class
//!    changed live without a restart, a data path and the metadata claim on a class whose
//!    file systems grow only when mounted again (the pod replaced once for it), every object
//!    read back. A Manual node's claim grows too (`expansion::manual_node`).
//!
//! 10. `chaos` (site E, beside the others): a cluster reconciled by two leader-elected
//!     `garage-reconciler` processes; once it is Ready, `second_install` runs a third process
//!     under another Lease (another install) for a short while: it publishes
//!     `ManagedByAnotherInstall` on the cluster, writes nothing, and the cluster still names
//!     the first install at the same layout version. Then the cluster drains 4 -> 3 while its
//!     leader is frozen past its lease (the standby takes over no sooner than the lease
//!     allows; the thawed one exits without a write) and while every Garage process is frozen
//!     (`GarageAPIError`, nothing removed);
//!     then, alone after every other site, the finale: with the webhook stopped a spec change
//!     and a GarageNode are refused and nothing of them stored; with it back, the change rolls
//!     out through an API server restart, one pod at a time; every object reads back.
//!
//! 11. `pool_disks` (site P, after site D's steps): a pool-only cluster on n2..n4 with two
//!     `dataPaths` writes 200 objects whose blocks land on both disks; a third disk added and
//!     the first marked readOnly roll the pool pods one at a time (same identities), and so
//!     does a change of the pool's pod template; removing
//!     a disk is refused by admission, a record that disagrees with the mounts by the
//!     reconciler (`DiskLayoutChangeBlocked`); Destroy leaves none of its keys on the Nodes.
//!
//! 12. `cycle` (site F, beside the others): a 3-member cluster (its manifest switching both
//!     discoveries off, which is accepted) with 200 checksummed objects;
//!     `cycle=true` on one Auto member makes a sibling with a fresh identity join, then the
//!     source drains (its pod runs until the proof), the sibling takes its slot and the
//!     source goes; every object reads back and slot 1 is not made again. Then `zone_from`,
//!     `public_endpoint` and `gateways`: the upstream sample's gateway tier joins with
//!     capacity-less roles behind its own Service and budget, serves every object, and
//!     scales 2 -> 1 under a continuous reader, its role retired before its pod stops; then
//!     `edge` (the upstream edge sample joins by `clusterRef`, scales 1 -> 2 -> 1 through its
//!     v1beta1 Scale, is deleted with its role) and `edge_remote` (the upstream sample of an
//!     edge of a cluster outside this Kubernetes cluster, given a storage pod's Admin API URL,
//!     writes its own roles, serves every object, scales 2 -> 1 and is deleted the same way).
//! 13. `go_takeover` (site G, beside the others): the objects the Go operator made for a
//!     3-member cluster, a bucket and a key (a recording) are created again with real Garage
//!     behind them and 200 checksummed objects written through the recorded key; a reconciler
//!     started on the namespace only then takes the cluster over with the same node IDs and
//!     layout roles, replacing pods one at a time; the key keeps its credentials, the bucket
//!     its ID; a scale-up and a drain follow, every object read back.
//!
//! The drain proof's quiet window cannot be shortened below Garage's own block delays (about
//! eleven minutes with a live source), so each completed live drain takes that long here too.
//!
//! `cargo test -p reconciler --test e2e`

// Test code: a panic is a failed step with a message.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

mod bootstrap;
mod bucket_health;
mod bucket_uploads;
mod buckets;
mod chaos;
mod claims;
mod cycle;
mod data_paths;
mod discovery;
mod drain;
mod drift;
mod edge;
mod edge_remote;
mod evictions;
mod expansion;
mod gateways;
mod go_takeover;
mod grants;
mod handles;
mod layout_parameters;
mod lost;
mod membership;
mod metrics_token;
mod monitoring;
mod network_policy;
mod object_diff;
mod operations;
mod pool_disks;
mod pools;
mod public_endpoint;
mod reconciler_log;
mod replication;
mod rollout;
mod second_install;
mod status_fields;
mod support;
mod suspension;
mod teardown;
mod volumes;
mod workers;
mod zone_from;

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::PostParams;
use kube::{Api, Client};
use kubesim::{KubeSim, NodeSpec};
use localcluster::LocalCluster;
use localcluster::tools::Tool;
use reconciler::controller::{self, Metrics};
use serde_json::json;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

/// Site A: bootstrap through a crash, scale-up, the Auto scale-down drain, ReplicationUnsafe.
const NS_A: &str = "e2e";
/// Site B, run beside A once A is past its steady-state check: Manual nodes, the lost node,
/// the Manual drain.
const NS_B: &str = "e2e-b";
/// Site C, run beside A and B: a node-local pool on n1..n4, and on n6 until it is lost.
const NS_C: &str = "e2e-c";
/// Site D, run beside the others: VolumeAttributesClass changes on a 3-member cluster.
const NS_D: &str = "e2e-d";
/// Site D's last step: a one-member cluster on two data paths.
const NS_D_PATHS: &str = "e2e-d-paths";
/// Site P, run in site D's turn after its data paths: a node-local pool on several disks.
const NS_P: &str = "e2e-p";
/// Site E, run beside the others and in the finale after them: the chaos site, reconciled by
/// two leader-elected reconciler processes instead of the in-process controllers.
const NS_E: &str = "e2e-e";
/// The namespaces whose pods must satisfy Pod Security `restricted`.
const RESTRICTED_NAMESPACES: [&str; 5] = [NS_A, NS_B, NS_D, NS_D_PATHS, cycle::NS_F];
const WEBHOOK_NS: &str = "garage-operator";
const NAME: &str = "garage";
const RESYNC: Duration = Duration::from_secs(3);
/// The Kubernetes Node the lost-node step takes away; only manual-a runs there.
const LOST_NODE: &str = "n5";
/// Its zone.
const LOST_ZONE: &str = "zone-e";
/// The taint that keeps every other pod off it.
const DEDICATED_TAINT: &str = "e2e/dedicated";
/// The Kubernetes Node site C's pool loses; only that pool tolerates its taint.
const POOL_LOST_NODE: &str = "n6";
/// The value of its taint.
const POOL_LOST_TAINT: &str = "pool-lost";

fn main() -> ExitCode {
    // Debug builds keep the large reconcile futures on the stack.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(16 << 20)
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run()) {
        Ok(()) => {
            println!("e2e passed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("e2e FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

struct Reconciler {
    handle: tokio::task::JoinHandle<()>,
}

tokio::task_local! {
    /// The namespace of the site a step runs for.
    static SITE: &'static str;
}

/// The namespace of the site the calling step runs for.
fn ns() -> &'static str {
    SITE.get()
}

/// What the steps share.
struct World<'a> {
    client: Client,
    sim: &'a KubeSim,
    metrics: Arc<Metrics>,
    /// The one reconciler, shared by both sites; a step may restart it.
    rec: Arc<tokio::sync::Mutex<Reconciler>>,
    clusters: Api<GarageCluster>,
    gns: Api<GarageNode>,
    pods: Api<Pod>,
    /// Node IDs of the three Auto members after bootstrap.
    ids: BTreeMap<String, String>,
    /// Random objects written before the first drain, read back after every later change.
    checksummed: Vec<(String, Vec<u8>)>,
    /// The store that reads them.
    store: Option<garage_fixture::s3::Objects>,
}

impl<'a> World<'a> {
    /// A site in namespace `ns` over the shared parts.
    fn new(
        client: &Client,
        sim: &'a KubeSim,
        metrics: &Arc<Metrics>,
        rec: &Arc<tokio::sync::Mutex<Reconciler>>,
        ns: &str,
    ) -> World<'a> {
        World {
            client: client.clone(),
            sim,
            metrics: metrics.clone(),
            rec: rec.clone(),
            clusters: Api::namespaced(client.clone(), ns),
            gns: Api::namespaced(client.clone(), ns),
            pods: Api::namespaced(client.clone(), ns),
            ids: BTreeMap::new(),
            checksummed: Vec::new(),
            store: None,
        }
    }

    /// Aborts the in-process reconciler, as a crash would.
    async fn stop_reconciler(&self) {
        let mut r = self.rec.lock().await;
        if !r.handle.is_finished() {
            r.handle.abort();
            let _ = (&mut r.handle).await;
        }
    }

    /// Starts a new reconciler in place of the stopped one. Sites restart it on their own
    /// schedules: a reconciler another site started in the meantime is aborted too, or its
    /// dropped handle would leave it running beside this one.
    async fn start_reconciler(&self) {
        let mut r = self.rec.lock().await;
        if !r.handle.is_finished() {
            r.handle.abort();
            let _ = (&mut r.handle).await;
        }
        *r = start_reconciler(&self.client, &self.metrics);
    }
}

fn start_reconciler(client: &Client, metrics: &Arc<Metrics>) -> Reconciler {
    // Every site but E, whose cluster belongs to the reconciler processes of `chaos`, and G,
    // which starts a reconciler of its own once the Go operator's cluster is in place.
    reconciler_for(
        client,
        metrics,
        &[
            NS_A,
            NS_B,
            NS_C,
            NS_D,
            NS_D_PATHS,
            buckets::APPS_NS,
            NS_P,
            cycle::NS_F,
        ],
    )
}

/// An in-process reconciler of `namespaces`.
fn reconciler_for(client: &Client, metrics: &Arc<Metrics>, namespaces: &[&str]) -> Reconciler {
    let config = controller::Config {
        namespaces: namespaces.iter().map(|n| (*n).to_owned()).collect(),
        resync: RESYNC,
        drift_resync: RESYNC,
        // A waiting cluster is looked at again this often. Each look asks every Garage pod
        // for its status and health, and Garage checks the admin token of each request with
        // argon2 (tens of milliseconds of CPU): at one second, the clusters waiting out their
        // drains kept both cores busy for nothing.
        short_requeue: Duration::from_secs(2),
        // A cluster whose drain waits on Garage is looked at as often as a shipped install
        // looks: several sites drain at once, each look asks every member, and at 2 s they
        // took most of both cores.
        drain_requeue: Duration::from_secs(5),
        error_requeue: Duration::from_secs(2),
        admin_timeout: Duration::from_secs(5),
        // Long enough to see a changing counter twice, short enough for a test.
        drain_quiet: Duration::from_secs(5),
        // Well above any pass on two loaded cores; a pass stuck longer is stopped and retried.
        pass_timeout: Duration::from_secs(60),
        // As the chart's garageNetworkPolicy.enabled and serviceMonitor.enabled pass it.
        garage_network_policy: Some(network_policy::admin_callers()),
        ..controller::Config::default()
    };
    Reconciler {
        handle: tokio::spawn(controller::run(
            client.clone(),
            config,
            metrics.clone(),
            std::future::pending(),
        )),
    }
}

/// The local cluster's kubeconfig, for a step that needs a client of its own.
static KUBECONFIG: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();

/// The in-process reconciler's log at info level, in the local cluster's directory: a failed
/// site prints its own namespaces' last lines from it.
const RECONCILER_LOG: &str = "reconciler.log";

async fn run() -> anyhow::Result<()> {
    Tool::Garage.require()?;
    let begin = Instant::now();
    let mut cluster = LocalCluster::start(localcluster::Options {
        name: "reconciler-e2e".into(),
        // Kubernetes' long-standing default: the finale's API server restart (about ten
        // seconds away) must not make the node lifecycle controller think the Nodes died.
        node_monitor_grace: Duration::from_secs(40),
        ..localcluster::Options::default()
    })
    .await?;
    reconciler_log::init(&cluster.dir().join(RECONCILER_LOG))?;
    let _ = KUBECONFIG.set(cluster.kubeconfig().to_path_buf());
    let client = cluster.client().await?;
    let mut options = kubesim::Options::new(
        cluster.dir().join("kubesim"),
        Tool::Garage.path(),
        cluster.server(),
        cluster.ca_pem(),
    );
    // Two Nodes' clocks are an hour off, one ahead and one behind, for the whole scenario:
    // nothing the operator decides may rest on the time a kubelet stamps.
    for (n, zone, skew) in [
        ("n1", "zone-a", 0),
        ("n2", "zone-b", 3600),
        ("n3", "zone-c", -3600),
        ("n4", "zone-d", 0),
    ] {
        options = options.node(NodeSpec::new(n).zone(zone).clock_skew(skew));
    }
    options = options.node(NodeSpec::new(LOST_NODE).zone(LOST_ZONE).taint(
        DEDICATED_TAINT,
        "lost",
        "NoSchedule",
    ));
    options = options.node(NodeSpec::new(POOL_LOST_NODE).zone("zone-f").taint(
        DEDICATED_TAINT,
        POOL_LOST_TAINT,
        "NoSchedule",
    ));
    let sim = KubeSim::start(client.clone(), options).await?;
    println!(
        "cluster and kubesim up after {:.1}s",
        begin.elapsed().as_secs_f64()
    );
    let result = scenario(&client, &sim, &mut cluster).await;
    if result.is_err() {
        println!("garage logs: {}", cluster.dir().join("kubesim").display());
    }
    sim.shutdown().await;
    drop(cluster);
    result
}

async fn scenario(
    client: &Client,
    sim: &KubeSim,
    cluster: &mut LocalCluster,
) -> anyhow::Result<()> {
    for ns in [
        NS_A,
        NS_B,
        NS_C,
        NS_D,
        NS_D_PATHS,
        NS_E,
        NS_P,
        cycle::NS_F,
        go_takeover::NS_G,
        WEBHOOK_NS,
    ] {
        // Sites whose Garage pods live on claims and emptyDir volumes run under Pod Security
        // `restricted`, enforced by the API server on every pod the workload controllers
        // create: the operator's default pod hardening must satisfy it. Pools mount HostPaths,
        // which only the `privileged` level admits.
        let labels = if RESTRICTED_NAMESPACES.contains(&ns) {
            json!({"pod-security.kubernetes.io/enforce": "restricted"})
        } else {
            json!({})
        };
        Api::<Namespace>::all(client.clone())
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns, "labels": labels}}))?,
            )
            .await?;
    }
    let reconciler_log = cluster.dir().join(RECONCILER_LOG);
    let webhook = support::start_webhook(client, "127.0.0.1:0".parse()?).await?;
    let base = format!("https://127.0.0.1:{}", webhook.local_addr().port());
    SITE.scope(NS_A, support::install_registrations(client, &base))
        .await?;
    let metrics = Arc::new(Metrics::default());
    let rec = Arc::new(tokio::sync::Mutex::new(start_reconciler(client, &metrics)));
    let mut a = World::new(client, sim, &metrics, &rec, NS_A);
    let mut b = World::new(client, sim, &metrics, &rec, NS_B);
    let mut c = World::new(client, sim, &metrics, &rec, NS_C);
    let mut d = World::new(client, sim, &metrics, &rec, NS_D);
    let mut d_paths = World::new(client, sim, &metrics, &rec, NS_D_PATHS);
    let mut p = World::new(client, sim, &metrics, &rec, NS_P);
    let mut e = World::new(client, sim, &metrics, &rec, NS_E);
    let mut f = World::new(client, sim, &metrics, &rec, cycle::NS_F);
    let mut g = World::new(client, sim, &metrics, &rec, go_takeover::NS_G);
    // `E2E_SITES=c` (any of a, b, c, d, e, f, g, p) runs only those sites, for working on one
    // stage; the default, and CI, runs them all.
    let sites = std::env::var("E2E_SITES").unwrap_or_else(|_| "abcdefgp".into());
    let run_a = sites.contains('a');
    let chaos = if sites.contains('e') {
        Some(chaos::Chaos::start(
            cluster.kubeconfig(),
            &cluster.dir().join("chaos"),
        )?)
    } else {
        None
    };
    let result = async {
        // A alone first: its steady-state check counts every API write of the reconciler.
        if run_a {
            let bootstrapped = SITE
                .scope(NS_A, async {
                    create_cluster(&a).await?;
                    bootstrap::run(&mut a).await
                })
                .await;
            if let Err(e) = bootstrapped {
                println!("site A FAILED: {e:#}");
                reconciler_log::print(&reconciler_log, &[NS_A]);
                return Err(e.context("site A"));
            }
        }
        let site_a = SITE.scope(NS_A, async {
            if !run_a {
                return Ok(());
            }
            membership::scale_up(&mut a).await?;
            rollout::run(&mut a).await?;
            drain::scale_down(&mut a, rollout::Midway::RestartReconciler).await?;
            replication::run(&mut a).await?;
            teardown::run(&mut a).await
        });
        let site_b = SITE.scope(NS_B, async {
            if !sites.contains('b') {
                return Ok(());
            }
            create_cluster(&b).await?;
            bootstrap::ready(&mut b).await?;
            membership::manual_join(&mut b).await?;
            drain::write_objects(&mut b).await?;
            // 3 Auto + 2 Manual members: the budget lets one storage pod go at a time.
            evictions::two_at_once(
                &b,
                ["garage-storage-0-0".into(), "garage-storage-1-0".into()],
                5,
                async || Ok("garage-storage-2-0".to_owned()),
            )
            .await?;
            lost::run(&mut b).await?;
            claims::retired(&mut b).await?;
            drain::manual(&mut b).await?;
            claims::rollout_barrier(&b).await?;
            teardown::run(&mut b).await
        });
        let site_c = SITE.scope(NS_C, async {
            if !sites.contains('c') {
                return Ok(());
            }
            pools::run(&mut c).await
        });
        let site_d = SITE.scope(NS_D, async {
            if sites.contains('d') {
                volumes::run(&mut d).await?;
                expansion::auto_group(&d).await?;
                buckets::run(&mut d).await?;
                handles::run(&d).await?;
                metrics_token::guards_metrics(&d).await?;
                // Read back after each change below, with the token the pods run now.
                let via = "garage-storage-0-0";
                let admin = support::admin_client_as_mounted(&d.client, d.sim, via).await?;
                support::write_checksummed(&mut d, &admin, via).await?;
                drift::put_back(&d).await?;
                workers::variables(&d).await?;
                layout_parameters::zone_redundancy(&d).await?;
                layout_parameters::factor_change_refused(&d).await?;
                operations::run(&d).await?;
                bucket_health::decode_failure(&d).await?;
                monitoring::service_monitor(&d).await?;
                status_fields::columns(&d).await?;
                volumes::manual_nodes(&d).await?;
                expansion::manual_node(&d).await?;
                teardown::destroy(&mut d, &[buckets::TOKEN_SECRET, metrics_token::USER_MADE])
                    .await?;
                buckets::token_gone(&d).await?;
                SITE.scope(NS_D_PATHS, data_paths::run(&mut d_paths))
                    .await?;
            }
            if sites.contains('p') {
                SITE.scope(NS_P, pool_disks::run(&mut p)).await?;
            }
            Ok(())
        });
        let site_e = SITE.scope(NS_E, async {
            match &chaos {
                Some(chaos) => chaos::run(&mut e, chaos).await,
                None => Ok(()),
            }
        });
        let site_f = SITE.scope(cycle::NS_F, async {
            if !sites.contains('f') {
                return Ok(());
            }
            cycle::create_cluster(&f).await?;
            bootstrap::ready(&mut f).await?;
            discovery::published(&f).await?;
            cycle::run(&mut f).await?;
            zone_from::run(&mut f).await?;
            public_endpoint::run(&mut f).await?;
            gateways::run(&mut f).await?;
            edge::run(&mut f).await?;
            edge_remote::run(&mut f).await?;
            teardown::run(&mut f).await
        });
        let site_g = SITE.scope(go_takeover::NS_G, async {
            if !sites.contains('g') {
                return Ok(());
            }
            let own = std::sync::Mutex::new(None::<Reconciler>);
            let result = go_takeover::run(&mut g, async || {
                let started = reconciler_for(client, &metrics, &[go_takeover::NS_G]);
                *own.lock().unwrap() = Some(started);
            })
            .await;
            if let Some(r) = own.lock().unwrap().take() {
                r.handle.abort();
            }
            result
        });
        let (ra, rb, rc, rd, re, rf, rg) =
            tokio::join!(site_a, site_b, site_c, site_d, site_e, site_f, site_g);
        // Every site's failure is shown, not only the first.
        for (site, r) in [
            ("A", &ra),
            ("B", &rb),
            ("C", &rc),
            ("D", &rd),
            ("E", &re),
            ("F", &rf),
            ("G", &rg),
        ] {
            if let Err(e) = r {
                println!("site {site} FAILED: {e:#}");
                let namespaces: &[&str] = match site {
                    "A" => &[NS_A],
                    "B" => &[NS_B],
                    "C" => &[NS_C],
                    "D" => &[NS_D, NS_D_PATHS, buckets::APPS_NS, NS_P],
                    "F" => &[cycle::NS_F],
                    "G" => &[go_takeover::NS_G],
                    _ => &[NS_E],
                };
                reconciler_log::print(&reconciler_log, namespaces);
            }
        }
        ra.map_err(|e| e.context("site A"))?;
        rb.map_err(|e| e.context("site B"))?;
        rc.map_err(|e| e.context("site C"))?;
        rd.map_err(|e| e.context("site D"))?;
        re.map_err(|e| e.context("site E"))?;
        rf.map_err(|e| e.context("site F"))?;
        rg.map_err(|e| e.context("site G"))
    }
    .await;
    // The finale, alone on the control plane: faults every site would feel.
    let (webhook, result) = match (result, &chaos) {
        (Ok(()), Some(_)) => {
            SITE.scope(NS_E, finale(client, cluster, webhook, &mut e))
                .await
        }
        (result, _) => (Some(webhook), result),
    };
    rec.lock().await.handle.abort();
    if let Some(chaos) = chaos {
        if result.is_err() {
            println!("reconciler process logs: {:?}", chaos.logs());
        }
        chaos.shutdown().await;
    }
    if let Some(webhook) = webhook {
        webhook.stop().await;
    }
    result
}

/// Site E's finale, after every other site is done. The webhook is stopped: a spec change
/// and a new GarageNode are refused and nothing of them is stored; the webhook comes back at
/// the same address and the change is admitted. Its rollout then runs through an API server
/// restart taken right after its first replacement is recorded: one pod at a time, the same
/// node IDs, every object read back. Last, the cluster is deleted through its finalizers.
async fn finale(
    client: &Client,
    cluster: &mut LocalCluster,
    webhook: webhook::server::Running,
    e: &mut World<'_>,
) -> (Option<webhook::server::Running>, anyhow::Result<()>) {
    let listen = webhook.local_addr();
    webhook.stop().await;
    let refused = chaos::refused_without_webhook(e).await;
    let webhook = match support::start_webhook(client, listen).await {
        Ok(webhook) => webhook,
        Err(err) => {
            return (
                None,
                refused.and(Err(err.context("restarting the webhook"))),
            );
        }
    };
    let result = async {
        refused?;
        support::wait_admission(client).await?;
        println!("chaos: webhook back at {listen}; admission works again");
        let restart = Box::pin(async move {
            let away = cluster.restart_apiserver().await?;
            println!(
                "chaos: API server restarted mid-rollout; away for {:.1}s",
                away.as_secs_f64()
            );
            Ok(())
        });
        rollout::roll(
            e,
            "pod template (an env var), through an API server restart",
            json!({"spec": {"storage": {"env": [{"name": "E2E_CHAOS", "value": "1"}]}}}),
            rollout::Midway::Fault(restart),
        )
        .await?;
        teardown::run(e).await
    }
    .await;
    (Some(webhook), result)
}

/// The site's 3-member GarageCluster. A short RPC timeout keeps Garage's delayed block
/// checks, which the drain proof waits for, short too.
async fn create_cluster(w: &World<'_>) -> anyhow::Result<()> {
    let gc: GarageCluster = serde_json::from_value(cluster_manifest())?;
    w.clusters.create(&PostParams::default(), &gc).await?;
    Ok(())
}

/// The manifest [`create_cluster`] creates, for a site that changes it first.
fn cluster_manifest() -> serde_json::Value {
    let mut gc = kubesim::three_node_garage_cluster(NAME);
    gc["spec"]["network"] = json!({"rpcTimeout": "15s"});
    gc
}
