//! Apply -> Ready of one GarageCluster, cut into the steps a reader can act on. Watches on
//! every kind involved are open (their initial list done) before the cluster is created, and
//! each step is stamped when the event that completes it arrives, so the stamps carry the
//! watch delivery delay (milliseconds on loopback) and no polling interval.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result, bail};
use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::PostParams;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::label;

/// The steps, in the order they normally complete.
pub const STEPS: [&str; 10] = [
    "GarageNodes created",
    "StatefulSets created",
    "Pods created",
    "PVCs bound",
    "Pods scheduled",
    "Pods Running",
    "node IDs recorded on GarageNodes",
    "layoutVersion in cluster status",
    "health healthy in cluster status",
    "Ready=True",
];
const READY: usize = STEPS.len() - 1;

/// Every member has a metadata and a data claim in the bench's manifest.
const CLAIMS_PER_MEMBER: usize = 2;

/// What the watches have seen of one cluster.
#[derive(Default)]
struct Seen {
    cluster: Option<GarageCluster>,
    nodes: BTreeMap<String, GarageNode>,
    sets: BTreeMap<String, ()>,
    claims: BTreeMap<String, bool>,
    pods: BTreeMap<String, Pod>,
    done: [Option<Duration>; STEPS.len()],
}

impl Seen {
    fn mark(&mut self, members: usize, elapsed: Duration) {
        let pods = |f: fn(&Pod) -> bool| self.pods.values().filter(|p| f(p)).count() >= members;
        let status = self.cluster.as_ref().and_then(|c| c.status.as_ref());
        let facts = [
            self.nodes.len() >= members,
            self.sets.len() >= members,
            self.pods.len() >= members,
            self.claims.values().filter(|b| **b).count() >= members * CLAIMS_PER_MEMBER,
            pods(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()),
            pods(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")),
            self.nodes
                .values()
                .filter(|n| n.status.as_ref().and_then(|s| s.node_id.as_ref()).is_some())
                .count()
                >= members,
            status
                .and_then(|s| s.layout_version)
                .is_some_and(|v| v >= 1),
            status
                .and_then(|s| s.health.as_ref())
                .and_then(|h| h.healthy)
                == Some(true),
            self.cluster.as_ref().is_some_and(is_ready),
        ];
        for (slot, fact) in self.done.iter_mut().zip(facts) {
            if fact && slot.is_none() {
                *slot = Some(elapsed);
            }
        }
    }
}

/// Ready=True for the cluster's current generation.
pub fn is_ready(cluster: &GarageCluster) -> bool {
    let Some(status) = cluster.status.as_ref() else {
        return false;
    };
    status.observed_generation == cluster.metadata.generation
        && status
            .conditions
            .as_deref()
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// The stamped steps of one apply -> Ready.
#[derive(Debug)]
pub struct Timeline {
    /// Wall-clock time just before the create call, to place log lines.
    pub began_at: SystemTime,
    /// Each step's time from just before the create call.
    pub steps: [Option<Duration>; STEPS.len()],
}

impl Timeline {
    /// Apply -> Ready.
    pub fn ready(&self) -> Option<Duration> {
        self.steps[READY]
    }
}

type Shared = Arc<Mutex<(Seen, Option<Instant>)>>;

fn lock(shared: &Shared) -> MutexGuard<'_, (Seen, Option<Instant>)> {
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

/// Opens the watches, creates `cluster` in `namespace` and stamps every step until Ready or
/// `timeout`.
pub async fn follow(
    client: &Client,
    namespace: &str,
    cluster: &GarageCluster,
    members: usize,
    timeout: Duration,
) -> Result<Timeline> {
    let name = cluster.name_any();
    let shared: Shared = Arc::default();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel::<()>(8);
    let (changed_tx, mut changed_rx) = tokio::sync::watch::channel(());
    let by_cluster = watcher::Config::default().labels(&format!("{}={name}", label::LABEL_CLUSTER));
    let mut tasks = tokio::task::JoinSet::new();
    let ctx = Watch {
        shared: shared.clone(),
        members,
        ready: ready_tx,
        changed: changed_tx,
    };
    ctx.spawn(
        &mut tasks,
        Api::<GarageCluster>::namespaced(client.clone(), namespace),
        watcher::Config::default().fields(&format!("metadata.name={name}")),
        |seen, c, gone| seen.cluster = (!gone).then_some(c),
    );
    let of_cluster = name.clone();
    ctx.spawn(
        &mut tasks,
        Api::<GarageNode>::namespaced(client.clone(), namespace),
        watcher::Config::default(),
        move |seen, n, gone| {
            if n.spec.cluster_ref.name == of_cluster {
                upsert(&mut seen.nodes, n.name_any(), n, gone);
            }
        },
    );
    ctx.spawn(
        &mut tasks,
        Api::<StatefulSet>::namespaced(client.clone(), namespace),
        by_cluster.clone(),
        |seen, s, gone| upsert(&mut seen.sets, s.name_any(), (), gone),
    );
    ctx.spawn(
        &mut tasks,
        Api::<PersistentVolumeClaim>::namespaced(client.clone(), namespace),
        by_cluster.clone(),
        |seen, c, gone| {
            let bound = c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
            upsert(&mut seen.claims, c.name_any(), bound, gone);
        },
    );
    ctx.spawn(
        &mut tasks,
        Api::<Pod>::namespaced(client.clone(), namespace),
        by_cluster,
        |seen, p, gone| upsert(&mut seen.pods, p.name_any(), p, gone),
    );
    drop(ctx);
    for _ in 0..5 {
        tokio::time::timeout(Duration::from_secs(30), ready_rx.recv())
            .await
            .context("a watch did not finish its initial list within 30 s")?
            .context("a watch ended before its initial list")?;
    }

    let began_at = SystemTime::now();
    let began = Instant::now();
    lock(&shared).1 = Some(began);
    Api::<GarageCluster>::namespaced(client.clone(), namespace)
        .create(&PostParams::default(), cluster)
        .await
        .with_context(|| format!("creating GarageCluster {namespace}/{name}"))?;
    let finished = tokio::time::timeout(timeout, async {
        loop {
            if lock(&shared).0.done[READY].is_some() {
                return;
            }
            if changed_rx.changed().await.is_err() {
                return;
            }
        }
    })
    .await;
    tasks.abort_all();
    let steps = lock(&shared).0.done;
    if finished.is_err() || steps[READY].is_none() {
        let status = lock(&shared)
            .0
            .cluster
            .as_ref()
            .map(|c| serde_json::to_string(&c.status))
            .transpose()?
            .unwrap_or_default();
        bail!(
            "{namespace}/{name} was not Ready within {} s; steps so far {:?}; status {status}",
            timeout.as_secs(),
            STEPS
                .iter()
                .zip(steps)
                .filter_map(|(s, d)| Some((*s, d?)))
                .collect::<Vec<_>>()
        );
    }
    Ok(Timeline { began_at, steps })
}

fn upsert<V>(map: &mut BTreeMap<String, V>, key: String, value: V, gone: bool) {
    if gone {
        map.remove(&key);
    } else {
        map.insert(key, value);
    }
}

struct Watch {
    shared: Shared,
    members: usize,
    ready: tokio::sync::mpsc::Sender<()>,
    changed: tokio::sync::watch::Sender<()>,
}

impl Watch {
    fn spawn<K>(
        &self,
        tasks: &mut tokio::task::JoinSet<()>,
        api: Api<K>,
        config: watcher::Config,
        apply: impl Fn(&mut Seen, K, bool) + Send + 'static,
    ) where
        K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    {
        let shared = self.shared.clone();
        let members = self.members;
        let ready = self.ready.clone();
        let changed = self.changed.clone();
        tasks.spawn(async move {
            let mut stream = std::pin::pin!(watcher::watcher(api, config).default_backoff());
            let mut listed = false;
            while let Some(event) = stream.next().await {
                // A failed watch is retried with backoff; a step is then stamped late.
                let Ok(event) = event else { continue };
                let (object, gone) = match event {
                    Event::Apply(o) | Event::InitApply(o) => (o, false),
                    Event::Delete(o) => (o, true),
                    Event::Init => continue,
                    Event::InitDone => {
                        if !listed {
                            listed = true;
                            let _ = ready.send(()).await;
                        }
                        continue;
                    }
                };
                let mut guard = lock(&shared);
                let (seen, began) = &mut *guard;
                apply(seen, object, gone);
                if let Some(began) = began {
                    seen.mark(members, began.elapsed());
                }
                drop(guard);
                changed.send_replace(());
            }
        });
    }
}
