//! The kube-runtime controllers: GarageCluster (secrets, config, Services, PDB, the Garage
//! pods' NetworkPolicy, generated GarageNodes, node-local pools, layout, status, teardown),
//! GarageNode (StatefulSet, per-node Service, node identity, claims, finalizer), and the
//! objects inside Garage ([`garage_objects`]: keys, buckets, admin tokens, reference grants).
//! Every one is started by [`runner::start`].
//!
//! Each pass is observe → decide (the `decide` crate: no I/O, table-tested) → act. Every write
//! is counted
//! ([`Metrics::api_writes`]), so tests can prove that a converged cluster is left alone.
//!
//! Every controller acts for a GarageCluster only once [`ownership`] finds that this install
//! manages it.

pub mod admin_route;
pub mod cluster;
pub mod error;
pub mod events;
pub mod finalizer;
pub mod garage_access;
pub mod garage_objects;
pub mod legacy_env;
pub mod metrics;
pub mod node;
mod node_labels;
pub mod one_shot;
pub mod ownership;
pub mod pools;
pub mod runner;
pub mod triggers;
pub mod write;

// The controllers' configuration and the conditions they publish are decided in the `decide`
// crate; they are re-exported here, where the controllers of `garage_objects` name them.
pub use decide::Config;
pub use decide::conditions;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, StatefulSet};
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::label;

use triggers::OwnsIn as _;

pub use error::Error;
pub use events::Events;
pub use metrics::Metrics;

/// Shared state of both controllers.
pub struct Context {
    /// API client.
    pub client: Client,
    /// Timing.
    pub config: Config,
    /// Figures.
    pub metrics: Arc<Metrics>,
    /// Kubernetes Events.
    pub events: Events,
    /// Proofs of the scheduling-gate capability node-local pools rest on, per namespace.
    pub gate_evidence: decide::pools::capability::EvidenceCache,
    /// Claims (`namespace/name`) on which the API server refused a VolumeAttributesClass,
    /// and when: they are not asked again before [`VOLUME_CLASS_BACKOFF`] has passed.
    pub volume_class_refusals: std::sync::Mutex<std::collections::BTreeMap<String, Instant>>,
    /// Claims the API server refused to grow (`namespace/name`), when and why.
    pub expansion_refusals: std::sync::Mutex<std::collections::BTreeMap<String, (Instant, String)>>,
    /// The `ManagedByAnotherInstall` warnings published, so that each is repeated only when
    /// due.
    pub ownership_warnings: decide::ownership::Warnings,
    /// Whether the API server serves the ServiceMonitor kind, as last asked.
    pub monitoring_kind: cluster::service_monitor::KindCache,
}

/// How long a claim whose class the API server refused is left alone.
pub const VOLUME_CLASS_BACKOFF: Duration = Duration::from_secs(600);

impl Context {
    /// True while the API server's refusal of a class on claim `ns/name` is recent.
    pub fn volume_class_refused(&self, ns: &str, name: &str) -> bool {
        self.volume_class_refusals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&format!("{ns}/{name}"))
            .is_some_and(|at| at.elapsed() < VOLUME_CLASS_BACKOFF)
    }

    /// Remembers that the API server refused a class on claim `ns/name` now.
    pub fn refuse_volume_class(&self, ns: &str, name: &str) {
        self.volume_class_refusals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(format!("{ns}/{name}"), Instant::now());
    }

    /// What the API server said when it refused to grow claim `ns/name`, while that refusal
    /// is recent: the claim is not asked again before [`VOLUME_CLASS_BACKOFF`] has passed.
    pub fn expansion_refused(&self, ns: &str, name: &str) -> Option<String> {
        self.expansion_refusals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&format!("{ns}/{name}"))
            .filter(|(at, _)| at.elapsed() < VOLUME_CLASS_BACKOFF)
            .map(|(_, why)| why.clone())
    }

    /// Remembers that the API server refused to grow claim `ns/name` now, and why.
    pub fn refuse_expansion(&self, ns: &str, name: &str, why: String) {
        self.expansion_refusals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(format!("{ns}/{name}"), (Instant::now(), why));
    }
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
        events: Events::new(client.clone()),
        gate_evidence: decide::pools::capability::EvidenceCache::default(),
        volume_class_refusals: std::sync::Mutex::default(),
        expansion_refusals: std::sync::Mutex::default(),
        ownership_warnings: decide::ownership::Warnings::default(),
        monitoring_kind: Default::default(),
    });
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let garage_objects = garage_objects::run(ctx.clone(), scopes.clone(), stop_rx.clone());
    let (relabelled, node_watch) = node_labels::start(&client);
    let controllers = futures::future::join_all(
        scopes
            .into_iter()
            .map(|scope| run_scope(ctx.clone(), scope, &relabelled, stop_rx.clone())),
    );
    let signal = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    tokio::join!(controllers, garage_objects, signal);
    node_watch.abort();
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
    relabelled: &tokio::sync::broadcast::Sender<node_labels::Relabelled>,
    stop_rx: tokio::sync::watch::Receiver<bool>,
) {
    let client = ctx.client.clone();
    let ns = namespace.as_deref();
    let managed = watcher::Config::default().labels(&format!(
        "{}={}",
        label::LABEL_APP_MANAGED_BY,
        label::value::MANAGED_BY_OPERATOR
    ));
    let clusters = runner::start(
        cluster::CONTROLLER,
        cluster_controller(&client, ns, &managed, relabelled),
        cluster::reconcile,
        ctx.clone(),
        stop_rx.clone(),
    );
    let nodes = runner::start(
        node::CONTROLLER,
        node_controller(&client, ns, managed, relabelled),
        node::reconcile,
        ctx,
        stop_rx,
    );
    tokio::join!(clusters, nodes);
}

/// The GarageCluster controller of one scope and what starts its passes: its own objects,
/// the GarageNodes that name a cluster, the objects it owns, its pods and Node label changes.
fn cluster_controller(
    client: &Client,
    ns: Option<&str>,
    managed: &watcher::Config,
    relabelled: &tokio::sync::broadcast::Sender<node_labels::Relabelled>,
) -> kube::runtime::Controller<GarageCluster> {
    let clusters = triggers::controller(
        scoped::<GarageCluster>(client, ns),
        watcher::Config::default(),
    )
    // Generated and user-written members alike: a GarageNode maps to the cluster it names.
    .watches_stream(
        triggers::touched(scoped::<GarageNode>(client, ns), watcher::Config::default()),
        |gn: GarageNode| {
            // Admission keeps parents in the node's namespace; any other is never ours.
            let ns = gn.namespace().unwrap_or_default();
            (gn.parent_namespace() == ns && !gn.spec.cluster_ref.name.is_empty())
                .then(|| ObjectRef::<GarageCluster>::new(&gn.spec.cluster_ref.name).within(&ns))
        },
    )
    // An edge gateway's recorded identities are its storage cluster's to give roles: a
    // change of an edge (or its deletion) wakes the cluster it joins.
    .watches_stream(
        triggers::touched(
            scoped::<GarageCluster>(client, ns),
            watcher::Config::default(),
        ),
        |edge: GarageCluster| {
            let ns = edge.namespace().unwrap_or_default();
            decide::desired::edge::is_edge(&edge)
                .then(|| decide::cluster::edge::storage_cluster(&edge).ok())
                .flatten()
                .map(|storage| ObjectRef::<GarageCluster>::new(&storage).within(&ns))
        },
    )
    .owns_in::<Service>(client, ns, managed)
    .owns_in::<ConfigMap>(client, ns, managed)
    .owns_in::<Secret>(client, ns, managed)
    .owns_in::<PodDisruptionBudget>(client, ns, managed)
    .owns_in::<NetworkPolicy>(client, ns, managed)
    .owns_in::<DaemonSet>(client, ns, managed)
    .watches_stream(
        triggers::touched(scoped::<Pod>(client, ns), managed.clone()),
        |pod: Pod| {
            let ns = pod.namespace();
            pod.labels().get(label::LABEL_CLUSTER).map(|c| {
                ObjectRef::<GarageCluster>::new(c).within(ns.as_deref().unwrap_or_default())
            })
        },
    );
    // Pool membership follows Node labels: a label change looks at every cluster again.
    clusters.reconcile_all_on(node_labels::subscribe(relabelled).map(|_| ()))
}

/// The GarageNode controller of one scope and what starts its passes: its own objects, its
/// cluster's changes, its StatefulSet, pods and claims.
fn node_controller(
    client: &Client,
    ns: Option<&str>,
    managed: watcher::Config,
    relabelled: &tokio::sync::broadcast::Sender<node_labels::Relabelled>,
) -> kube::runtime::Controller<GarageNode> {
    let nodes = triggers::controller(scoped::<GarageNode>(client, ns), watcher::Config::default());
    // A cluster's spec or annotations (the pinned admin token copy) change what its members
    // render: its GarageNodes look again. (A status write passes too; a converged cluster
    // writes none.)
    let node_store = nodes.store();
    let zoned_store = nodes.store();
    let nodes = nodes
        .watches_stream(
            triggers::touched(
                scoped::<GarageCluster>(client, ns),
                watcher::Config::default(),
            ),
            move |c: GarageCluster| {
                let ns = c.namespace().unwrap_or_default();
                let name = c.name_any();
                node_store
                    .state()
                    .into_iter()
                    .filter(|gn| {
                        gn.namespace().as_deref() == Some(ns.as_str())
                            && gn.spec.cluster_ref.name == name
                            && gn.parent_namespace() == ns
                    })
                    .map(|gn| ObjectRef::from_obj(&*gn))
                    .collect::<Vec<_>>()
            },
        )
        .owns_in::<StatefulSet>(client, ns, &managed)
        .watches_stream(
            triggers::touched(scoped::<Pod>(client, ns), managed),
            |pod: Pod| {
                let ns = pod.namespace();
                pod.labels().get(label::LABEL_NODE).map(|n| {
                    ObjectRef::<GarageNode>::new(n).within(ns.as_deref().unwrap_or_default())
                })
            },
        )
        // A load balancer assigning an address to a member's RPC Service changes what the
        // member advertises: its node looks again.
        .watches_stream(
            triggers::touched(
                scoped::<Service>(client, ns),
                watcher::Config::default().labels(label::LABEL_NODE),
            ),
            |svc: Service| {
                let ns = svc.namespace();
                svc.labels().get(label::LABEL_NODE).map(|n| {
                    ObjectRef::<GarageNode>::new(n).within(ns.as_deref().unwrap_or_default())
                })
            },
        )
        // A claim's class and modify status change in the claim alone: its node looks again.
        .watches_stream(
            triggers::touched(
                scoped::<PersistentVolumeClaim>(client, ns),
                watcher::Config::default().labels(label::LABEL_NODE),
            ),
            |pvc: PersistentVolumeClaim| {
                let ns = pvc.namespace();
                pvc.labels().get(label::LABEL_NODE).map(|n| {
                    ObjectRef::<GarageNode>::new(n).within(ns.as_deref().unwrap_or_default())
                })
            },
        );
    // zoneFrom follows Node labels: a label change looks again at every member that may take
    // its zone from one (its own zoneFrom, or a pool member under its cluster's).
    nodes.watches_stream(node_labels::subscribe(relabelled), move |_| {
        zoned_store
            .state()
            .into_iter()
            .filter(|gn| {
                gn.spec.zone_from.is_some()
                    || gn.spec.backing
                        == Some(shared_types::garage_node::NodeBacking::NodeLocalPool)
            })
            .map(|gn| ObjectRef::from_obj(&*gn))
            .collect::<Vec<_>>()
    })
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}
