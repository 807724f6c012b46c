//! Reading the [`Context`] a rule set needs. The server reads the API server live (uncached GET
//! and LIST: a stale cache could authorise what the current state forbids); the CLI reads a
//! directory of manifests. Either way a failed read fails the review closed, because an empty
//! list would prove "no conflict".

use std::future::Future;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::ListParams;
use kube::{Api, Client};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

use crate::admission::Context;

/// Which lists a rule set reads. Only what is needed is read, so the webhook's RBAC stays
/// small and an unrelated outage does not block admission.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Every GarageCluster (v1beta2) in every namespace.
    pub garage_clusters: bool,
    /// Every GarageNode in every namespace.
    pub garage_nodes: bool,
    /// Every Kubernetes Node.
    pub nodes: bool,
    /// The Pods of the namespace under review.
    pub pods: bool,
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

/// Reads the API server directly: every call is a fresh GET or LIST, served from etcd.
#[derive(Clone)]
pub struct LiveReader {
    client: Client,
}

impl LiveReader {
    /// Reads through `client`.
    pub fn new(client: Client) -> Self {
        LiveReader { client }
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

impl ContextSource for LiveReader {
    async fn read(&self, needs: Needs, namespace: Option<&str>) -> Result<Context, ReadError> {
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
            if needs.nodes {
                list_all(Api::<Node>::all(client.clone()), "Nodes").await
            } else {
                Ok(Vec::new())
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
        let (garage_clusters, garage_nodes, nodes, pods) =
            futures::try_join!(clusters, garage_nodes, nodes, pods)?;
        Ok(Context {
            garage_clusters,
            garage_nodes,
            nodes,
            pods,
            ..Context::default()
        })
    }

    async fn garage_cluster(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<GarageCluster>, ReadError> {
        Api::<GarageCluster>::namespaced(self.client.clone(), namespace)
            .get_opt(name)
            .await
            .map_err(|e| ReadError::new(format!("GarageCluster {namespace}/{name}"), e))
    }
}
