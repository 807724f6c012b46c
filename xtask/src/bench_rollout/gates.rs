//! The sequencer's gates (decide/src/machine/rollout.rs), taken by hand through each
//! storage pod's own Admin API: every member's Garage identity proven from its current pod,
//! Garage seeing every member up at its current pod's address with its role, every member's
//! own `GetClusterHealth` fully healthy, and no layout data migration in progress. Whether
//! every pod is Ready comes from the Kubernetes API ([`super::pods`]).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, Result};
use garage_admin::{AdminClient, AdminToken, ClientConfig, ClusterHealth, HealthStatus, NodeId};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt as _;

/// Garage's RPC and Admin API ports in the operator's pods.
const RPC_PORT: u16 = 3901;
const ADMIN_PORT: u16 = 3903;

/// One reading of the gates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Gates {
    /// Every pod reports the node ID its member had before the change.
    pub identity: bool,
    /// Garage sees every member up at its pod's address, with a role in the layout.
    pub up: bool,
    /// Every pod's own `GetClusterHealth` says every storage node is up and every partition
    /// has all its nodes.
    pub healthy: bool,
    /// The layout history has no version still migrating data.
    pub settled: bool,
}

impl Gates {
    /// Every gate holds.
    pub(crate) fn hold(&self) -> bool {
        self.identity && self.up && self.healthy && self.settled
    }
}

/// Admin API clients of the cluster's pods, and the identities proven so far.
pub(crate) struct Admin {
    token: AdminToken,
    /// Clients by pod address: a replacement has a new one.
    clients: BTreeMap<String, AdminClient>,
    /// Node ID each member must report, by pod name.
    ids: BTreeMap<String, NodeId>,
    /// Pod UID each identity was last proven from, by pod name.
    proven: BTreeMap<String, String>,
}

impl Admin {
    /// Reads every pod's node ID: what each must report again after its replacement.
    pub(crate) async fn new(token: AdminToken, pods: &[Pod]) -> Result<Self> {
        let mut admin = Self {
            token,
            clients: BTreeMap::new(),
            ids: BTreeMap::new(),
            proven: BTreeMap::new(),
        };
        for pod in pods {
            let client = admin.client(pod)?;
            let id = client
                .local_node_id()
                .await
                .with_context(|| format!("reading the node ID of pod {}", pod.name_any()))?;
            admin.ids.insert(pod.name_any(), id);
            admin.proven.insert(pod.name_any(), uid(pod));
        }
        Ok(admin)
    }

    /// The client of `pod`'s Admin API: short timeouts and no retries, as the polls retry.
    fn client(&mut self, pod: &Pod) -> Result<AdminClient> {
        let ip = ip(pod).with_context(|| format!("pod {} has no address", pod.name_any()))?;
        let base = format!("http://{ip}:{ADMIN_PORT}");
        if let Some(client) = self.clients.get(&base) {
            return Ok(client.clone());
        }
        let config = ClientConfig {
            timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(1),
            read_retries: 0,
            ..ClientConfig::default()
        };
        let client = AdminClient::with_config(&base, &self.token, config)?;
        self.clients.insert(base, client.clone());
        Ok(client)
    }

    /// Reads the gates over `pods`, the cluster's storage pods (a pod without an address, or
    /// one that does not answer, holds none of the gates it takes part in).
    pub(crate) async fn read(&mut self, pods: &[Pod]) -> Gates {
        let Ok(clients) = pods
            .iter()
            .map(|p| self.client(p))
            .collect::<Result<Vec<AdminClient>>>()
        else {
            return Gates::default();
        };
        let healths =
            futures::future::join_all(clients.iter().map(AdminClient::cluster_health)).await;
        let healthy = healths.iter().all(|h| h.as_ref().is_ok_and(fully_healthy));
        let identity = self.prove(pods, &clients).await;
        let mut gates = Gates {
            identity,
            healthy,
            ..Gates::default()
        };
        // Garage's view of the members and the layout, from the first pod that answers, as
        // the operator reads them.
        for client in &clients {
            if let (Ok(status), Ok(history)) =
                (client.cluster_status().await, client.layout_history().await)
            {
                gates.up = self.ids.iter().all(|(name, id)| {
                    let addr = pods
                        .iter()
                        .find(|p| &p.name_any() == name)
                        .and_then(ip)
                        .map(|ip| format!("{ip}:{RPC_PORT}"));
                    // As the operator compares: a node Garage lists without an address counts.
                    addr.is_some()
                        && status.nodes.iter().any(|n| {
                            &n.id == id
                                && n.is_up
                                && n.role.is_some()
                                && (n.addr.is_none() || n.addr == addr)
                        })
                });
                gates.settled = history.is_settled();
                break;
            }
        }
        gates
    }

    /// Tells the first other member where `name`'s replacement runs now, as the operator's
    /// pass does for a member Garage does not see up at its pod's address: the others keep
    /// dialling the old pod's address until their pings give up. Failures are expected while
    /// the replacement starts; the caller asks again. False when nothing could be sent yet (the
    /// replacement has no address).
    pub(crate) async fn introduce(&mut self, pods: &[Pod], name: &str) -> bool {
        let (Some(id), Some(addr)) = (
            self.ids.get(name).cloned(),
            pods.iter().find(|p| p.name_any() == name).and_then(ip),
        ) else {
            return false;
        };
        let Some(Ok(other)) = pods
            .iter()
            .find(|p| p.name_any() != name && ip(p).is_some())
            .map(|p| self.client(p))
        else {
            return false;
        };
        let _ = other
            .connect_nodes(&[format!("{id}@{addr}:{RPC_PORT}")])
            .await;
        true
    }

    /// Asks every pod whose identity was not proven from its current UID for its node ID;
    /// true when every pod's is proven.
    async fn prove(&mut self, pods: &[Pod], clients: &[AdminClient]) -> bool {
        let mut all = true;
        for (pod, client) in pods.iter().zip(clients) {
            let name = pod.name_any();
            if self.proven.get(&name) == Some(&uid(pod)) {
                continue;
            }
            let same = client
                .local_node_id()
                .await
                .is_ok_and(|id| self.ids.get(&name) == Some(&id));
            if same {
                self.proven.insert(name, uid(pod));
            } else {
                all = false;
            }
        }
        all
    }
}

/// `GetClusterHealth` from one node: healthy, every storage node connected, every partition
/// with its quorum and all of its nodes.
fn fully_healthy(h: &ClusterHealth) -> bool {
    let all = |n: u64| n == h.partitions;
    h.status == HealthStatus::Healthy
        && h.storage_nodes > 0
        && h.storage_nodes_up == h.storage_nodes
        && h.partitions > 0
        && all(h.partitions_quorum)
        && all(h.partitions_all_ok)
}

fn ip(pod: &Pod) -> Option<String> {
    pod.status.as_ref()?.pod_ip.clone()
}

fn uid(pod: &Pod) -> String {
    pod.metadata.uid.clone().unwrap_or_default()
}
