//! The kube-runtime controllers: GarageCluster (secrets, config, Services, PDB, generated
//! GarageNodes, layout, status) and GarageNode (StatefulSet, per-node Service, node identity).
//!
//! They only read, call the pure builders and planner, and write differences. Every write
//! goes through [`write`] helpers that count it in [`Metrics::api_writes`], so tests can prove
//! that a converged cluster is left alone.

pub mod cluster;
pub mod conditions;
pub mod garage_access;
pub mod node;
pub mod write;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::{Controller, watcher};
use kube::{Api, Client, ResourceExt};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::label;

use crate::desired::DesiredError;
use crate::garage::GarageError;

/// Timing of the controllers.
#[derive(Debug, Clone)]
pub struct Config {
    /// Resync of a converged object.
    pub resync: Duration,
    /// Requeue while something is still converging.
    pub short_requeue: Duration,
    /// Requeue after an error.
    pub error_requeue: Duration,
    /// Deadline of one Admin API call to a pod.
    pub admin_timeout: Duration,
    /// Garage image for clusters that name none (the install's `defaultGarageImage`).
    pub default_garage_image: Option<String>,
    /// Namespaces whose objects are reconciled; empty means every namespace.
    pub namespaces: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            resync: Duration::from_secs(60),
            short_requeue: Duration::from_secs(5),
            error_requeue: Duration::from_secs(30),
            admin_timeout: Duration::from_secs(5),
            default_garage_image: None,
            namespaces: Vec::new(),
        }
    }
}

/// Counters exported on `/metrics`.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Reconcile passes run.
    pub reconciles: AtomicU64,
    /// Reconcile passes that ended in an error.
    pub errors: AtomicU64,
    /// Writes to the Kubernetes API (create, replace, patch, status).
    pub api_writes: AtomicU64,
    /// Layout versions applied.
    pub layout_applies: AtomicU64,
}

impl Metrics {
    /// Prometheus text exposition of the counters.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, help, value) in [
            (
                "garage_reconciler_reconciles_total",
                "Reconcile passes.",
                &self.reconciles,
            ),
            (
                "garage_reconciler_errors_total",
                "Reconcile passes that failed.",
                &self.errors,
            ),
            (
                "garage_reconciler_api_writes_total",
                "Writes to the Kubernetes API.",
                &self.api_writes,
            ),
            (
                "garage_reconciler_layout_applies_total",
                "Garage layout versions applied.",
                &self.layout_applies,
            ),
        ] {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}\n",
                value.load(Ordering::Relaxed)
            ));
        }
        out
    }
}

/// Shared state of both controllers.
pub struct Context {
    /// API client.
    pub client: Client,
    /// Timing.
    pub config: Config,
    /// Counters.
    pub metrics: Arc<Metrics>,
}

/// Why a reconcile pass failed. Each is retried after [`Config::error_requeue`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Kubernetes API refused or failed.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// Garage's Admin API refused or failed.
    #[error("garage admin API: {0}")]
    Garage(#[from] GarageError),
    /// Desired state cannot be rendered.
    #[error(transparent)]
    Desired(#[from] DesiredError),
    /// An object the reconciler would write exists but is not controlled by the expected
    /// owner; it is never adopted or overwritten.
    #[error("{kind} {name} exists but is not controlled by {owner}; it is left untouched")]
    Foreign {
        /// Kind.
        kind: &'static str,
        /// Name.
        name: String,
        /// Expected owner.
        owner: String,
    },
    /// A safety invariant failed; nothing destructive was done.
    #[error("{0}")]
    Unsafe(String),
    /// Local I/O (the random source).
    #[error("local I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs both controllers until `shutdown` completes; in-flight reconciles finish first.
///
/// With [`Config::namespaces`] set, each namespace gets its own pair of controllers watching
/// only that namespace, so a namespace-scoped install needs no cluster-wide list or watch.
pub async fn run(
    client: Client,
    config: Config,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let scopes: Vec<Option<String>> = if config.namespaces.is_empty() {
        vec![None]
    } else {
        config.namespaces.iter().cloned().map(Some).collect()
    };
    let ctx = Arc::new(Context {
        client: client.clone(),
        config,
        metrics,
    });
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let controllers = futures::future::join_all(
        scopes
            .into_iter()
            .map(|scope| run_scope(ctx.clone(), scope, stop_rx.clone())),
    );
    let signal = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    tokio::join!(controllers, signal);
}

/// The objects of one namespace, or of all of them.
fn scoped<K>(client: &Client, namespace: Option<&str>) -> Api<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
    <K as kube::Resource>::DynamicType: Default,
{
    match namespace {
        Some(ns) => Api::namespaced(client.clone(), ns),
        None => Api::all(client.clone()),
    }
}

/// The GarageCluster and GarageNode controllers of one scope.
async fn run_scope(
    ctx: Arc<Context>,
    namespace: Option<String>,
    stop_rx: tokio::sync::watch::Receiver<bool>,
) {
    let client = ctx.client.clone();
    let ns = namespace.as_deref();
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let managed = watcher::Config::default().labels(&format!(
        "{}={}",
        label::LABEL_APP_MANAGED_BY,
        label::value::MANAGED_BY_OPERATOR
    ));
    let clusters = Controller::new(
        scoped::<GarageCluster>(&client, ns),
        watcher::Config::default(),
    )
    .owns(
        scoped::<GarageNode>(&client, ns),
        watcher::Config::default(),
    )
    .owns(scoped::<Service>(&client, ns), managed.clone())
    .owns(scoped::<ConfigMap>(&client, ns), managed.clone())
    .owns(scoped::<Secret>(&client, ns), managed.clone())
    .owns(scoped::<PodDisruptionBudget>(&client, ns), managed.clone())
    .watches(scoped::<Pod>(&client, ns), managed.clone(), |pod: Pod| {
        let ns = pod.namespace();
        pod.labels()
            .get(label::LABEL_CLUSTER)
            .map(|c| ObjectRef::<GarageCluster>::new(c).within(ns.as_deref().unwrap_or_default()))
    })
    .graceful_shutdown_on(stopped(stop_rx.clone()))
    .run(
        |c, x| Box::pin(cluster::reconcile(c, x)),
        error_policy,
        ctx.clone(),
    )
    .for_each(|_| futures::future::ready(()));
    let nodes = Controller::new(
        scoped::<GarageNode>(&client, ns),
        watcher::Config::default(),
    )
    .owns(scoped::<StatefulSet>(&client, ns), managed.clone())
    .watches(scoped::<Pod>(&client, ns), managed, |pod: Pod| {
        let ns = pod.namespace();
        pod.labels()
            .get(label::LABEL_NODE)
            .map(|n| ObjectRef::<GarageNode>::new(n).within(ns.as_deref().unwrap_or_default()))
    })
    .graceful_shutdown_on(stopped(stop_rx))
    .run(|n, x| Box::pin(node::reconcile(n, x)), error_policy, ctx)
    .for_each(|_| futures::future::ready(()));
    tokio::join!(clusters, nodes);
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn error_policy<K: ResourceExt>(obj: Arc<K>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.errors.fetch_add(1, Ordering::Relaxed);
    tracing::warn!(
        object = %obj.name_any(),
        namespace = obj.namespace().unwrap_or_default(),
        error = %error,
        "reconcile failed; retrying"
    );
    Action::requeue(ctx.config.error_requeue)
}
