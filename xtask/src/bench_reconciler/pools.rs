//! `--pools`: one GarageCluster with one node-local pool (`spec.storage.nodeLocalPools`) on a
//! kubesim of `--pool-nodes` Nodes, and what the reconciler does when the pool's selector goes
//! from matching no Node to matching every one of them.
//!
//! A pool is one DaemonSet with one image, so its pods cannot be split into real and
//! placeholder ones: they all name the placeholder image, and kubesim runs `sleep infinity`
//! for them. No Admin API ever answers, so no member gets a Garage node ID or a layout role,
//! and the pool never reports `NodeLocalPoolsReady=True`. What the reconciler can finish is
//! its Kubernetes side, and that is what "converged" means here: every selected Node carries
//! the pool's activation label, the pool pod on every selected Node has had its activation
//! gate lifted, and every selected Node has its member GarageNode.
//!
//! The stamps come from watches (reflector stores on Nodes, the cluster's Pods and the
//! GarageNodes) whose initial lists are done before the clock starts; each is taken when the
//! event that completes it arrives, so it carries the watch delivery delay and no polling
//! interval.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod, Secret};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use kubesim::{KubeSim, NodeSpec};
use serde::de::DeserializeOwned;
use serde_json::json;
use shared_types::conditions::cluster::CONDITION_NODE_LOCAL_POOLS_READY;
use shared_types::conditions::reason::REASON_WAITING_FOR_MEMBERS;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{GarageNode, NodeBacking};
use shared_types::keys::label;
use shared_types::keys::scheduling_gate::SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION;

use super::process::{Passes, Reconciler};
use super::{Bench, NS, PLACEHOLDER_IMAGE, process, secs};

/// The pool cluster.
const CLUSTER: &str = "pools";
/// Its one pool.
const POOL: &str = "local";
/// The pool's DaemonSet (`<cluster>-storage-<pool>`).
const DAEMONSET: &str = "pools-storage-local";
/// The admin's Node label the pool selects on.
const POOL_LABEL: &str = "bench.garage-operator.dev/pool";
/// The admin token Secret a pool requires (`spec.admin.adminTokenSecretRef`).
const ADMIN_SECRET: &str = "pools-admin-token";
const METADATA_DIR: &str = "/var/lib/garage/bench/local/metadata";
const DATA_DIR: &str = "/var/lib/garage/bench/local/data";
/// The "disk is mounted" marker every `Directory` HostPath of a pool must contain.
const MARKER: &str = ".garage-volume-id";
/// Most Nodes of the pool case: kubesim hands every Node and every pod an address of one /24
/// (254 in all), and each selected Node adds a pool pod.
pub(crate) const MAX_NODES: usize = 120;
/// The controllers' names on `/metrics`.
const CLUSTER_CONTROLLER: &str = "garagecluster";
const NODE_CONTROLLER: &str = "garagenode";
/// From the first label patch to convergence, at most.
const CONVERGE_TIMEOUT: Duration = Duration::from_secs(600);

/// What is stamped per selected Node, in the order it normally happens: first when it holds
/// for one Node, then when it holds for all of them.
const FACTS: [&str; 7] = [
    "Node labelled to match the selector",
    "activation label on the Node (reconciler)",
    "pool pod created (DaemonSet controller)",
    "activation gate lifted (reconciler)",
    "pool pod scheduled (scheduler)",
    "pool pod Running, placeholder (kubesim)",
    "member GarageNode (reconciler)",
];
const ACTIVATED: usize = 1;
const RELEASED: usize = 3;
const MEMBER: usize = 6;

/// The names of the pool case's kubesim Nodes: `p01`, `p02`, ...
pub(crate) fn node_names(count: usize) -> Vec<String> {
    let width = count.to_string().len().max(2);
    (1..=count).map(|i| format!("p{i:0width$}")).collect()
}

/// kubesim's Nodes for the pool case: no zone, no label the pool selects yet.
pub(crate) fn node_specs(count: usize) -> Vec<NodeSpec> {
    node_names(count).into_iter().map(NodeSpec::new).collect()
}

/// The pool-only GarageCluster: placeholder image, Manual policy, no default group, one pool
/// of 1 GiB members on two `Directory` HostPaths, selecting Nodes labelled
/// `POOL_LABEL=POOL`.
fn manifest() -> Result<GarageCluster> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
        "metadata": {"name": CLUSTER, "namespace": NS},
        "spec": {
            "image": PLACEHOLDER_IMAGE,
            "replication": {"factor": 3},
            "admin": {"adminTokenSecretRef": {"name": ADMIN_SECRET, "key": "admin-token"}},
            "storage": {
                "layoutPolicy": "Manual",
                "replicas": 0,
                "nodeLocalPools": [{
                    "name": POOL,
                    "capacity": "1Gi",
                    "metadata": {"hostPath": METADATA_DIR, "hostPathType": "Directory"},
                    "data": {"hostPath": DATA_DIR, "hostPathType": "Directory"},
                    "selector": {"matchLabels": {POOL_LABEL: POOL}},
                }],
            },
        },
    }))?)
}

/// The admin's disks, mounted: both HostPath directories with their marker on every Node.
fn prepare_disks(sim: &KubeSim, nodes: &[String]) -> Result<()> {
    for node in nodes {
        for dir in [METADATA_DIR, DATA_DIR] {
            let path = sim.host_path(node, dir);
            std::fs::create_dir_all(&path).with_context(|| format!("creating {dir} on {node}"))?;
            std::fs::File::create(path.join(MARKER))
                .with_context(|| format!("creating the marker in {dir} on {node}"))?;
        }
    }
    Ok(())
}

/// The admin token Secret, then the cluster.
async fn create(client: &Client) -> Result<()> {
    let mut bytes = [0u8; 32];
    std::io::Read::read_exact(
        &mut std::fs::File::open("/dev/urandom").context("opening /dev/urandom")?,
        &mut bytes,
    )
    .context("reading /dev/urandom")?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": ADMIN_SECRET, "namespace": NS},
        "stringData": {"admin-token": token},
    }))?;
    Api::<Secret>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .with_context(|| format!("creating Secret {NS}/{ADMIN_SECRET}"))?;
    Api::<GarageCluster>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &manifest()?)
        .await
        .with_context(|| format!("creating GarageCluster {NS}/{CLUSTER}"))?;
    Ok(())
}

/// `NodeLocalPoolsReady` of the cluster as `status reason`, and its message.
fn pool_condition(cluster: &GarageCluster) -> Option<(String, String, String)> {
    cluster
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == CONDITION_NODE_LOCAL_POOLS_READY)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Waits until the pool's DaemonSet exists and the cluster reports the empty selector
/// (`NodeLocalPoolsReady=False WaitingForMembers`); returns the activation label key, read
/// from the DaemonSet's node selector (the one key the reconciler sets on chosen Nodes).
async fn wait_declared(client: &Client, timeout: Duration) -> Result<String> {
    let clusters: Api<GarageCluster> = Api::namespaced(client.clone(), NS);
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), NS);
    let deadline = Instant::now() + timeout;
    loop {
        let waiting =
            pool_condition(&clusters.get(CLUSTER).await?).is_some_and(|(status, reason, _)| {
                status == "False" && reason == REASON_WAITING_FOR_MEMBERS
            });
        let key = sets.get_opt(DAEMONSET).await?.and_then(|d| {
            d.spec?
                .template
                .spec?
                .node_selector?
                .into_iter()
                .find_map(|(k, v)| (v == "true").then_some(k))
        });
        if let (true, Some(key)) = (waiting, key) {
            return Ok(key);
        }
        if Instant::now() > deadline {
            bail!(
                "{NS}/{CLUSTER}: no DaemonSet {DAEMONSET} with an activation selector, or no \
                 {CONDITION_NODE_LOCAL_POOLS_READY}=False {REASON_WAITING_FOR_MEMBERS}, within {} s",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Labels every Node of `nodes` for the pool, all patches in flight at once; returns when the
/// last one has returned.
async fn label_all(client: Client, nodes: Vec<String>) -> Result<()> {
    let api: Api<Node> = Api::all(client);
    let patch = Patch::Merge(json!({"metadata": {"labels": {POOL_LABEL: POOL}}}));
    futures::future::try_join_all(nodes.iter().map(|node| {
        let (api, patch) = (&api, &patch);
        async move {
            api.patch(node, &PatchParams::default(), patch)
                .await
                .with_context(|| format!("labelling {node} {POOL_LABEL}={POOL}"))
        }
    }))
    .await?;
    Ok(())
}

/// Reflector stores on the kinds the facts are read from, and a signal for every event.
struct Stores {
    nodes: Store<Node>,
    pods: Store<Pod>,
    members: Store<GarageNode>,
    changed: tokio::sync::watch::Receiver<()>,
    /// The watches; dropping the set stops them.
    _tasks: tokio::task::JoinSet<()>,
}

/// Starts a reflector on `api` that signals `changed` after every event.
fn reflect<K>(
    tasks: &mut tokio::task::JoinSet<()>,
    api: Api<K>,
    config: watcher::Config,
    changed: &tokio::sync::watch::Sender<()>,
) -> Store<K>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default + Eq + std::hash::Hash + Clone + Send + Sync,
{
    let (store, writer) = reflector::store();
    let changed = changed.clone();
    tasks.spawn(
        watcher::watcher(api, config)
            .default_backoff()
            .reflect(writer)
            // A failed watch is retried with backoff; a fact is then stamped late.
            .for_each(move |_| {
                changed.send_replace(());
                futures::future::ready(())
            }),
    );
    store
}

impl Stores {
    /// Opens the watches and waits for their initial lists.
    async fn open(client: &Client) -> Result<Self> {
        let (tx, changed) = tokio::sync::watch::channel(());
        let mut tasks = tokio::task::JoinSet::new();
        let of_cluster =
            watcher::Config::default().labels(&format!("{}={CLUSTER}", label::LABEL_CLUSTER));
        let stores = Self {
            nodes: reflect(
                &mut tasks,
                Api::all(client.clone()),
                watcher::Config::default(),
                &tx,
            ),
            pods: reflect(
                &mut tasks,
                Api::namespaced(client.clone(), NS),
                of_cluster,
                &tx,
            ),
            members: reflect(
                &mut tasks,
                Api::namespaced(client.clone(), NS),
                watcher::Config::default(),
                &tx,
            ),
            changed,
            _tasks: tasks,
        };
        tokio::time::timeout(Duration::from_secs(30), async {
            stores.nodes.wait_until_ready().await?;
            stores.pods.wait_until_ready().await?;
            stores.members.wait_until_ready().await
        })
        .await
        .context("a watch did not finish its initial list within 30 s")?
        .context("a watch ended before its initial list")?;
        Ok(stores)
    }

    /// How many selected Nodes each fact holds for now, and whether a capability probe pod
    /// exists.
    fn counts(&self, selected: &BTreeSet<String>, key: &str) -> ([usize; FACTS.len()], bool) {
        let nodes = self.nodes.state();
        let pods = self.pods.state();
        let on = |f: &dyn Fn(&Node) -> bool| {
            nodes
                .iter()
                .filter(|n| selected.contains(&n.name_any()) && f(n))
                .count()
        };
        let label_is =
            |n: &Node, k: &str, v: &str| n.labels().get(k).map(String::as_str) == Some(v);
        let pool_pods: Vec<&Arc<Pod>> = pods
            .iter()
            .filter(|p| {
                p.labels()
                    .get(label::LABEL_NODE_LOCAL_POOL)
                    .map(String::as_str)
                    == Some(POOL)
            })
            .collect();
        let pods_on = |f: &dyn Fn(&Pod) -> bool| {
            pool_pods
                .iter()
                .filter(|p| f(p))
                .filter_map(|p| target_node(p))
                .filter(|n| selected.contains(n))
                .collect::<BTreeSet<_>>()
                .len()
        };
        let members: BTreeSet<String> = self
            .members
            .state()
            .iter()
            .filter(|m| m.spec.backing == Some(NodeBacking::NodeLocalPool))
            .filter(|m| {
                m.labels()
                    .get(label::LABEL_NODE_LOCAL_POOL)
                    .map(String::as_str)
                    == Some(POOL)
            })
            .filter_map(|m| m.spec.kubernetes_node_name.clone())
            .filter(|n| selected.contains(n))
            .collect();
        let probe = pods.iter().any(|p| {
            p.labels()
                .contains_key(label::LABEL_NODE_LOCAL_CAPABILITY_PROBE)
        });
        let counts = [
            on(&|n| label_is(n, POOL_LABEL, POOL)),
            on(&|n| label_is(n, key, "true")),
            pods_on(&|_| true),
            pods_on(&|p| !gated(p)),
            pods_on(&|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()),
            pods_on(&|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")),
            members.len(),
        ];
        (counts, probe)
    }
}

/// The Node a pool pod is for: the one the DaemonSet controller pins it to, or where it was
/// bound.
fn target_node(pod: &Pod) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    spec.node_name.clone().or_else(|| {
        spec.affinity
            .as_ref()?
            .node_affinity
            .as_ref()?
            .required_during_scheduling_ignored_during_execution
            .as_ref()?
            .node_selector_terms
            .iter()
            .flat_map(|t| t.match_fields.iter().flatten())
            .find(|f| f.key == "metadata.name" && f.operator == "In")?
            .values
            .as_ref()?
            .first()
            .cloned()
    })
}

/// True while the pod still carries the pool's activation gate.
fn gated(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| {
            g.iter()
                .any(|g| g.name == SCHEDULING_GATE_NODE_LOCAL_POOL_ACTIVATION)
        })
}

/// The stamps of one selector change, each from just before the first label patch.
#[derive(Debug, Default)]
struct Change {
    /// Every label patch had returned.
    labelled: Option<Duration>,
    /// Per fact: when it first held for one selected Node, and when for all.
    facts: [(Option<Duration>, Option<Duration>); FACTS.len()],
    /// A capability probe pod was first seen.
    probe: Option<Duration>,
    /// Activation label, lifted gate and member GarageNode on every selected Node.
    converged: Option<Duration>,
    /// The counts when the wait ended.
    last: [usize; FACTS.len()],
}

impl Change {
    fn mark(&mut self, counts: [usize; FACTS.len()], probe: bool, total: usize, at: Duration) {
        for (slot, n) in self.facts.iter_mut().zip(counts) {
            if n > 0 && slot.0.is_none() {
                slot.0 = Some(at);
            }
            if n >= total && slot.1.is_none() {
                slot.1 = Some(at);
            }
        }
        if probe && self.probe.is_none() {
            self.probe = Some(at);
        }
        if self.converged.is_none()
            && [ACTIVATED, RELEASED, MEMBER]
                .iter()
                .all(|&i| counts[i] >= total)
        {
            self.converged = Some(at);
        }
        self.last = counts;
    }
}

/// Labels every Node of `nodes` for the pool at once and stamps the facts until the
/// reconciler has converged on all of them, or [`CONVERGE_TIMEOUT`].
async fn follow_change(client: &Client, nodes: &[String], key: &str) -> Result<Change> {
    let mut stores = Stores::open(client).await?;
    let selected: BTreeSet<String> = nodes.iter().cloned().collect();
    let total = selected.len();
    let mut change = Change::default();
    let began = Instant::now();
    let deadline = tokio::time::Instant::now() + CONVERGE_TIMEOUT;
    let mut labelling = tokio::spawn(label_all(client.clone(), nodes.to_vec()));
    let mut labels_done = false;
    loop {
        let (counts, probe) = stores.counts(&selected, key);
        change.mark(counts, probe, total, began.elapsed());
        if change.converged.is_some() && labels_done {
            break;
        }
        tokio::select! {
            joined = &mut labelling, if !labels_done => {
                joined.context("the labelling task panicked")??;
                change.labelled = Some(began.elapsed());
                labels_done = true;
            }
            changed = stores.changed.changed() => {
                changed.context("every watch ended")?;
            }
            () = tokio::time::sleep_until(deadline) => break,
        }
    }
    Ok(change)
}

/// The cluster's `NodeLocalPoolsReady` and the pool's objects, printed with the condition's
/// message; returns the one-line summary.
async fn describe(client: &Client) -> Result<String> {
    let cluster = Api::<GarageCluster>::namespaced(client.clone(), NS)
        .get(CLUSTER)
        .await?;
    let (condition, message) = pool_condition(&cluster)
        .map(|(s, r, m)| (format!("{CONDITION_NODE_LOCAL_POOLS_READY}={s} {r}"), m))
        .unwrap_or_else(|| {
            (
                format!("no {CONDITION_NODE_LOCAL_POOLS_READY}"),
                String::new(),
            )
        });
    let pool = format!("{}={POOL}", label::LABEL_NODE_LOCAL_POOL);
    let members = Api::<GarageNode>::namespaced(client.clone(), NS)
        .list(&ListParams::default().labels(&pool))
        .await?
        .items
        .len();
    let running = Api::<Pod>::namespaced(client.clone(), NS)
        .list(&ListParams::default().labels(&pool))
        .await?
        .items
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .count();
    let summary = format!("{condition}; {members} member GarageNodes, {running} pool pods Running");
    println!("    {summary}");
    if !message.is_empty() {
        println!("      \"{message}\"");
    }
    Ok(summary)
}

/// Prints the stamps of a change of `total` Nodes.
fn print_change(change: &Change, total: usize) {
    let at = |d: Option<Duration>| {
        d.map_or_else(|| "not seen".to_owned(), |d| format!("{:.2} s", secs(d)))
    };
    println!(
        "    every label patch returned: {}; capability probe pod first seen: {}",
        at(change.labelled),
        at(change.probe)
    );
    println!(
        "    {:<44} {:>10} {:>10}",
        "on each selected Node",
        "first",
        format!("all {total}")
    );
    for (name, (first, all)) in FACTS.iter().zip(change.facts) {
        println!("    {name:<44} {:>10} {:>10}", at(first), at(all));
    }
    match change.converged {
        Some(d) => println!(
            "  converged after {:.2} s: activation label, lifted gate and member GarageNode on \
             all {total} Nodes",
            secs(d)
        ),
        None => println!(
            "  NOT converged within {} s; Nodes per fact at the end: {:?}",
            CONVERGE_TIMEOUT.as_secs(),
            change.last
        ),
    }
}

/// The pass durations of both controllers now.
async fn passes(reconciler: &Reconciler) -> Result<[(&'static str, Passes); 2]> {
    Ok([
        (
            CLUSTER_CONTROLLER,
            reconciler.passes(CLUSTER_CONTROLLER).await?,
        ),
        (NODE_CONTROLLER, reconciler.passes(NODE_CONTROLLER).await?),
    ])
}

impl Bench {
    /// The pool case: a fresh reconciler, the pool cluster with a selector matching no Node,
    /// memory sampled; then every Node labelled at once, the convergence stamped, and memory
    /// sampled again.
    pub(super) async fn pool_case(&self, sim: &KubeSim) -> Result<()> {
        let nodes = node_names(self.opts.pool_nodes);
        let total = nodes.len();
        prepare_disks(sim, &nodes)?;
        println!(
            "\npool case: {total} kubesim Nodes with both HostPath disks (marker in place) and none \
             labelled; one GarageCluster {NS}/{CLUSTER} with one pool `{POOL}` selecting \
             {POOL_LABEL}={POOL}, its pods placeholders (load {})",
            process::load_average()
        );
        let mut reconciler = self.start_reconciler("garage-reconciler-pools.log").await?;
        let began = Instant::now();
        create(&self.client).await?;
        let key = wait_declared(&self.client, Duration::from_secs(180)).await?;
        println!(
            "  pool declared, no Node selected: DaemonSet {DAEMONSET} selects activation label \
             {key} ({:.2} s after create)",
            secs(began.elapsed())
        );
        let state = describe(&self.client).await?;
        // The settle window also lets the capability proof (30 s) go stale, as it is when an
        // admin labels Nodes long after the pool was declared.
        let mut levels = vec![
            self.sample(&mut reconciler, "pool, 0 Nodes selected", state)
                .await?,
        ];

        println!(
            "\n  selector change: all {total} Nodes labelled {POOL_LABEL}={POOL} at once (one \
             patch each, all in flight together); watches on Nodes, the cluster's Pods and \
             GarageNodes were listed before the clock started (load {})",
            process::load_average()
        );
        let before = reconciler.counters().await?;
        let passes_before = passes(&reconciler).await?;
        let change = follow_change(&self.client, &nodes, &key).await?;
        reconciler.check_alive()?;
        let after = reconciler.counters().await?;
        let passes_after = passes(&reconciler).await?;
        print_change(&change, total);
        println!("    reconciler during the change: {}", before.since(&after));
        for ((controller, earlier), (_, later)) in passes_before.iter().zip(&passes_after) {
            println!("    {controller} controller: {}", earlier.since(later));
        }
        let state = describe(&self.client).await?;
        levels.push(
            self.sample(
                &mut reconciler,
                &format!("pool, {total} Nodes selected"),
                state,
            )
            .await?,
        );

        println!("\nsummary");
        match change.converged {
            Some(d) => println!(
                "  selector 0 -> {total} Nodes, converged (activation label, lifted gate, member \
                 GarageNode on every Node): {:.2} s",
                secs(d)
            ),
            None => println!(
                "  selector 0 -> {total} Nodes: NOT converged within {} s",
                CONVERGE_TIMEOUT.as_secs()
            ),
        }
        super::print_levels(&levels);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_sort_in_order() {
        assert_eq!(node_names(3), ["p01", "p02", "p03"]);
        assert_eq!(node_names(100)[99], "p100");
        assert_eq!(node_names(100)[0], "p001");
    }

    #[test]
    fn the_manifest_parses_with_placeholder_pods() {
        let c = manifest().unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(c.spec.image.as_deref(), Some(PLACEHOLDER_IMAGE));
        let pools = c
            .spec
            .storage
            .and_then(|s| s.node_local_pools)
            .unwrap_or_default();
        assert_eq!(pools.len(), 1);
        assert_eq!(pools[0].name, POOL);
    }

    #[test]
    fn convergence_needs_the_three_reconciler_facts() {
        let mut change = Change::default();
        change.mark([2, 2, 2, 2, 2, 2, 1], false, 2, Duration::from_secs(1));
        assert!(change.converged.is_none());
        change.mark([2, 2, 2, 2, 0, 0, 2], true, 2, Duration::from_secs(2));
        assert_eq!(change.converged, Some(Duration::from_secs(2)));
        assert_eq!(
            change.facts[MEMBER],
            (Some(Duration::from_secs(1)), Some(Duration::from_secs(2)))
        );
        assert_eq!(change.probe, Some(Duration::from_secs(2)));
    }
}
