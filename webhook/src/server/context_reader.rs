//! Reading the [`Context`] a rule set needs. The server reads the API server live (uncached GET
//! and LIST: a stale cache could authorise what the current state forbids); the CLI reads a
//! directory of manifests. Either way a failed read fails the review closed, because an empty
//! list would prove "no conflict".

use std::future::Future;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::ListParams;
use kube::{Api, Client};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::garage_reference_grant::GarageReferenceGrant;
use tokio::sync::Semaphore;

use crate::admission::Context;

/// Which lists a rule set reads. Only what is needed is read, so the webhook's RBAC stays
/// small and an unrelated outage does not block admission.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Every GarageCluster (v1beta2) in every namespace.
    pub garage_clusters: bool,
    /// Every GarageNode in every namespace.
    pub garage_nodes: bool,
    /// Kubernetes Nodes (their metadata).
    pub nodes: bool,
    /// When `nodes`: label-selector queries whose results together hold every Node the rules
    /// can count, so only those are read (the API server filters them); `None` reads every
    /// Node, `Some` of an empty list none.
    pub node_queries: Option<Vec<String>>,
    /// The Pods of the namespace under review.
    pub pods: bool,
    /// Namespaces whose GarageReferenceGrants are read (RG-CHK step 2).
    pub reference_grants: Vec<String>,
    /// The referring Namespace, read (metadata only) when one of the grants read for
    /// `reference_grants` selects namespaces by label (RG-CHK step 5).
    pub namespace_labels: Option<String>,
    /// One GarageCluster (namespace, name), read by GET rather than the LIST of every one.
    pub garage_cluster: Option<(String, String)>,
}

/// A read that failed; the review is denied with this message.
#[derive(Debug, thiserror::Error)]
#[error("cannot read {what}: {reason}")]
pub struct ReadError {
    /// What was being read, e.g. "GarageClusters".
    pub what: String,
    /// Why it failed.
    pub reason: String,
}

impl ReadError {
    /// A failure reading `what`.
    pub fn new(what: impl Into<String>, reason: impl std::fmt::Display) -> Self {
        ReadError {
            what: what.into(),
            reason: reason.to_string(),
        }
    }
}

/// Where the objects that cross-object rules read come from.
pub trait ContextSource: Send + Sync {
    /// The lists `needs` names; `namespace` scopes the namespaced ones (Pods).
    fn read(
        &self,
        needs: Needs,
        namespace: Option<&str>,
    ) -> impl Future<Output = Result<Context, ReadError>> + Send;

    /// One GarageCluster as stored (v1beta2), `None` when it does not exist.
    fn garage_cluster(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Option<GarageCluster>, ReadError>> + Send;
}

/// Reviews whose live reads run at once; further reviews wait for a slot. The API server, not
/// the webhook, is the bottleneck of a read (it spends several times the webhook's CPU on each
/// LIST), so more concurrency adds queueing there, plus one pooled HTTP/1.1 connection (and its
/// TLS buffers) per extra concurrent request here. Four reviews of three lists each keep at most
/// twelve connections open.
pub const DEFAULT_CONCURRENT_READS: usize = 4;

/// Reads the API server directly: every call is a fresh, consistent GET or LIST.
#[derive(Clone)]
pub struct LiveReader {
    client: Client,
    slots: Arc<Semaphore>,
    /// The install's host access policy, handed to every rule with what was read.
    host_access: crate::admission::host_access::HostAccessPolicy,
}

impl LiveReader {
    /// Reads through `client`, at most [`DEFAULT_CONCURRENT_READS`] reviews at a time.
    pub fn new(client: Client) -> Self {
        Self::with_concurrency(client, DEFAULT_CONCURRENT_READS)
    }

    /// Reads through `client`, at most `reviews` reviews at a time (at least one).
    pub fn with_concurrency(client: Client, reviews: usize) -> Self {
        LiveReader {
            client,
            slots: Arc::new(Semaphore::new(reviews.max(1))),
            host_access: Default::default(),
        }
    }

    /// The same reader, handing `policy` to the rules instead of the default one.
    pub fn with_host_access(
        mut self,
        policy: crate::admission::host_access::HostAccessPolicy,
    ) -> Self {
        self.host_access = policy;
        self
    }

    async fn slot(&self) -> Result<tokio::sync::SemaphorePermit<'_>, ReadError> {
        // The semaphore is never closed; the error arm only keeps this free of a panic path.
        self.slots
            .acquire()
            .await
            .map_err(|e| ReadError::new("the API server", e))
    }
}

async fn list_all<K>(api: Api<K>, what: &str) -> Result<Vec<K>, ReadError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .map_err(|e| ReadError::new(what, e))
}

async fn get_cluster(
    client: &Client,
    namespace: &str,
    name: &str,
) -> Result<Option<GarageCluster>, ReadError> {
    Api::<GarageCluster>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .map_err(|e| ReadError::new(format!("GarageCluster {namespace}/{name}"), e))
}

/// The GarageReferenceGrants of `namespaces`, and the Namespace `from` (metadata only) when one
/// of them selects namespaces by label. A Namespace that does not exist is left out.
async fn grants(
    client: &Client,
    namespaces: &[String],
    from: Option<&str>,
) -> Result<(Vec<GarageReferenceGrant>, Vec<Namespace>), ReadError> {
    let lists = futures::future::try_join_all(namespaces.iter().map(|ns| async move {
        list_all(
            Api::<GarageReferenceGrant>::namespaced(client.clone(), ns),
            &format!("GarageReferenceGrants in namespace {ns}"),
        )
        .await
    }))
    .await?;
    let grants: Vec<GarageReferenceGrant> = lists.into_iter().flatten().collect();
    let namespace = match from {
        Some(name)
            if grants
                .iter()
                .any(GarageReferenceGrant::reads_namespace_labels) =>
        {
            Api::<Namespace>::all(client.clone())
                .get_metadata_opt(name)
                .await
                .map_err(|e| ReadError::new(format!("Namespace {name}"), e))?
                .map(|m| Namespace {
                    metadata: m.metadata,
                    ..Namespace::default()
                })
        }
        _ => None,
    };
    Ok((grants, namespace.into_iter().collect()))
}

/// Only the labels of Nodes are judged, so only their metadata is read: a Node's status
/// (images, conditions, addresses) is most of its size, and a cluster may have thousands.
async fn node_metadata(client: &Client, params: ListParams) -> Result<Vec<Node>, ReadError> {
    Api::<Node>::all(client.clone())
        .list_metadata(&params)
        .await
        .map(|l| {
            l.items
                .into_iter()
                .map(|m| Node {
                    metadata: m.metadata,
                    ..Node::default()
                })
                .collect()
        })
        .map_err(|e| ReadError::new("Nodes", e))
}

impl ContextSource for LiveReader {
    async fn read(&self, needs: Needs, namespace: Option<&str>) -> Result<Context, ReadError> {
        if needs == Needs::default() {
            return Ok(Context {
                host_access: self.host_access.clone(),
                ..Context::default()
            });
        }
        let _slot = self.slot().await?;
        let client = &self.client;
        let clusters = async {
            if needs.garage_clusters {
                list_all(Api::<GarageCluster>::all(client.clone()), "GarageClusters").await
            } else {
                Ok(Vec::new())
            }
        };
        let garage_nodes = async {
            if needs.garage_nodes {
                list_all(Api::<GarageNode>::all(client.clone()), "GarageNodes").await
            } else {
                Ok(Vec::new())
            }
        };
        let nodes = async {
            match (needs.nodes, &needs.node_queries) {
                (false, _) => Ok(Vec::new()),
                (true, None) => node_metadata(client, ListParams::default()).await,
                (true, Some(queries)) => {
                    let lists = futures::future::try_join_all(
                        queries
                            .iter()
                            .map(|q| node_metadata(client, ListParams::default().labels(q))),
                    )
                    .await?;
                    // A Node several selectors match is counted once.
                    let mut by_name = std::collections::BTreeMap::new();
                    for node in lists.into_iter().flatten() {
                        by_name.insert(node.metadata.name.clone().unwrap_or_default(), node);
                    }
                    Ok(by_name.into_values().collect())
                }
            }
        };
        let pods = async {
            match (needs.pods, namespace) {
                (true, Some(ns)) => {
                    list_all(
                        Api::<Pod>::namespaced(client.clone(), ns),
                        &format!("Pods in namespace {ns}"),
                    )
                    .await
                }
                (true, None) => Err(ReadError::new(
                    "Pods",
                    "the request names no namespace to read them from",
                )),
                (false, _) => Ok(Vec::new()),
            }
        };
        let references = async {
            if needs.reference_grants.is_empty() {
                Ok((Vec::new(), Vec::new()))
            } else {
                grants(
                    client,
                    &needs.reference_grants,
                    needs.namespace_labels.as_deref(),
                )
                .await
            }
        };
        let cluster = async {
            match &needs.garage_cluster {
                Some((namespace, name)) => get_cluster(client, namespace, name).await,
                None => Ok(None),
            }
        };
        let (mut garage_clusters, garage_nodes, nodes, pods, (reference_grants, namespaces), one) =
            futures::try_join!(clusters, garage_nodes, nodes, pods, references, cluster)?;
        garage_clusters.extend(one);
        Ok(Context {
            garage_clusters,
            garage_nodes,
            nodes,
            pods,
            reference_grants,
            namespaces,
            host_access: self.host_access.clone(),
            ..Context::default()
        })
    }

    async fn garage_cluster(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<GarageCluster>, ReadError> {
        let _slot = self.slot().await?;
        get_cluster(&self.client, namespace, name).await
    }
}
