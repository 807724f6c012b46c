//! The optional NetworkPolicy `C-garage` over every Garage pod of a cluster (chart value
//! `garageNetworkPolicy.enabled`).
//!
//! Garage's listeners do not all deserve the same exposure:
//! - S3 (3900), web (3902) and K2V (3904) serve the store's clients, who may be anywhere: open.
//! - RPC (3901) carries replication between members. Its handshake needs the RPC secret, but
//!   nothing besides the cluster's own members has a reason to connect, so only the cluster's
//!   pods may; unless the cluster has members outside Kubernetes (see [`members_outside`]).
//! - The Admin API (3903) is plain HTTP behind one bearer token that can change the whole
//!   store, and it also serves `/metrics`: only the reconciler's pods may connect, plus the
//!   namespaces the install lets scrape metrics. It is never open to every source.
//!
//! Only ingress is restricted: Garage's outgoing connections (to its peers, to members outside
//! Kubernetes) are not. A policy restricts nothing unless the cluster's network plugin enforces
//! NetworkPolicy.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    NetworkPolicy, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

use super::{DesiredError, Settings, labels};
use crate::names;

/// The label every Namespace carries with its own name (set by the API server), through
/// which a policy selects one namespace by name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Garage's K2V port when `spec.k2vApi` names none.
pub const DEFAULT_K2V_PORT: u16 = 3904;

/// Who may reach the Admin API of a cluster's Garage pods: the install's reconciler
/// pods and, when the install scrapes metrics, the scrapers' namespaces. Built only through
/// [`AdminCallers::new`], which refuses anything that would let every pod of a namespace, or
/// every namespace, reach it.
#[derive(Debug, Clone, PartialEq)]
pub struct AdminCallers {
    reconciler_namespace: String,
    reconciler_pod_labels: BTreeMap<String, String>,
    metrics_namespaces: Option<LabelSelector>,
}

impl AdminCallers {
    /// The reconciler's pods are those labelled `reconciler_pod_labels` in
    /// `reconciler_namespace` (the release namespace); `metrics_namespaces` selects the
    /// namespaces whose pods may read `/metrics` on the Admin port (the chart passes its
    /// `networkPolicy.allowedNamespaceSelector` when metrics scraping is on).
    ///
    /// Refused: an empty namespace, no labels (every pod of the release namespace would reach
    /// the Admin API) and a metrics selector without any term (it selects every namespace).
    pub fn new(
        reconciler_namespace: &str,
        reconciler_pod_labels: BTreeMap<String, String>,
        metrics_namespaces: Option<LabelSelector>,
    ) -> Result<Self, String> {
        let reconciler_namespace = reconciler_namespace.trim();
        if reconciler_namespace.is_empty() {
            return Err("the reconciler's namespace is empty".into());
        }
        if reconciler_pod_labels.is_empty()
            || reconciler_pod_labels.keys().any(|k| k.trim().is_empty())
        {
            return Err(
                "the reconciler's pod labels are empty: every pod of its namespace would reach the Admin API"
                    .into(),
            );
        }
        if metrics_namespaces.as_ref().is_some_and(selects_everything) {
            return Err(
                "the metrics namespace selector has no term: every namespace would reach the Admin API"
                    .into(),
            );
        }
        Ok(Self {
            reconciler_namespace: reconciler_namespace.to_owned(),
            reconciler_pod_labels,
            metrics_namespaces,
        })
    }

    /// The reconciler's namespace.
    pub fn reconciler_namespace(&self) -> &str {
        &self.reconciler_namespace
    }

    /// The labels that select the reconciler's pods.
    pub fn reconciler_pod_labels(&self) -> &BTreeMap<String, String> {
        &self.reconciler_pod_labels
    }

    /// The namespaces that may scrape `/metrics`, when metrics scraping is on.
    pub fn metrics_namespaces(&self) -> Option<&LabelSelector> {
        self.metrics_namespaces.as_ref()
    }
}

/// True for a selector without labels or expressions: it matches everything.
fn selects_everything(s: &LabelSelector) -> bool {
    s.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
        && s.match_expressions.as_ref().is_none_or(Vec::is_empty)
}

/// What the cluster controller does about the policy this pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Create the policy, or converge it when it differs.
    Ensure(Box<NetworkPolicy>),
    /// The install has the policy turned off: delete the policy of this name if the cluster
    /// controls it (a policy left from when it was on would keep restricting the pods).
    Remove {
        /// `C-garage`.
        name: String,
    },
}

/// The plan for cluster `c`: the policy when the install turns it on (`callers` is `Some`),
/// its removal otherwise.
/// `user_nodes` are the user-written GarageNodes that name the cluster; `edges` says whether
/// edge gateways connect to it. Their pods carry their own cluster's labels, which the RPC
/// rule does not name, and must dial the storage members: the RPC port then admits every
/// source, as for members outside the cluster.
pub fn plan(
    c: &GarageCluster,
    s: &Settings,
    callers: Option<&AdminCallers>,
    user_nodes: &[GarageNode],
    edges: bool,
) -> Result<Plan, DesiredError> {
    match callers {
        None => Ok(Plan::Remove {
            name: names::garage_network_policy(&s.name),
        }),
        Some(callers) => Ok(Plan::Ensure(Box::new(policy(
            c,
            s,
            callers,
            members_outside(c, user_nodes)
                .or(edges.then_some("an edge gateway's spec.connectTo.clusterRef")),
        )?))),
    }
}

/// Why members outside the cluster's pods take part in its RPC, if any do: the field that
/// says so. Such members (a GarageNode with `spec.external`, the peers of
/// `spec.remoteClusters`, `spec.connectTo` or `spec.network.bootstrapPeers`) connect to the
/// RPC port from addresses no selector can name (they are not pods of this namespace, and
/// their addresses are not known to the operator), so the RPC port must then accept any
/// source: closing it would cut them off the cluster. The RPC handshake still requires the
/// cluster's RPC secret.
pub fn members_outside(c: &GarageCluster, user_nodes: &[GarageNode]) -> Option<&'static str> {
    let spec = &c.spec;
    if user_nodes.iter().any(|n| n.spec.external.is_some()) {
        return Some("a GarageNode with spec.external");
    }
    if spec.remote_clusters.as_ref().is_some_and(|r| !r.is_empty()) {
        return Some("spec.remoteClusters");
    }
    if spec.connect_to.is_some() {
        return Some("spec.connectTo");
    }
    let bootstrap = spec
        .network
        .as_ref()
        .and_then(|n| n.bootstrap_peers.as_ref());
    if bootstrap.is_some_and(|p| !p.is_empty()) {
        return Some("spec.network.bootstrapPeers");
    }
    None
}

/// The K2V port, when `spec.k2vApi` turns K2V on.
pub fn k2v_port(c: &GarageCluster) -> Result<Option<u16>, DesiredError> {
    k2v_port_of(&c.spec)
}

/// [`k2v_port`] of a spec.
pub fn k2v_port_of(
    spec: &shared_types::garage_cluster::v1beta2::GarageClusterSpec,
) -> Result<Option<u16>, DesiredError> {
    spec.k2v_api
        .as_ref()
        .map(|k| {
            super::port(
                "spec.k2vApi.bindPort",
                k.bind_address.as_deref(),
                k.bind_port,
                DEFAULT_K2V_PORT,
            )
        })
        .transpose()
}

/// The policy `C-garage`: every Garage pod of the cluster (storage, pool and gateway pods all
/// carry the cluster label the headless RPC Service selects), ingress only, with the rules
/// of the module documentation. `outside` is [`members_outside`].
pub fn policy(
    c: &GarageCluster,
    s: &Settings,
    callers: &AdminCallers,
    outside: Option<&str>,
) -> Result<NetworkPolicy, DesiredError> {
    let garage_pods = LabelSelector {
        match_labels: Some(labels::headless_selector(&s.name)),
        match_expressions: None,
    };
    // A client port that is also the RPC or Admin port (a misconfiguration Garage would refuse
    // to start with) must not open those ports to every source through this rule.
    let open: Vec<u16> = [Some(s.s3_port), s.web_port, k2v_port(c)?]
        .into_iter()
        .flatten()
        .filter(|p| *p != s.rpc_port && *p != s.admin_port)
        .collect();
    let rpc_from = match outside {
        Some(_) => None,
        None => Some(vec![NetworkPolicyPeer {
            pod_selector: Some(garage_pods.clone()),
            ..Default::default()
        }]),
    };
    let mut admin_from = vec![NetworkPolicyPeer {
        namespace_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(
                NAMESPACE_NAME_LABEL.to_owned(),
                callers.reconciler_namespace.clone(),
            )])),
            match_expressions: None,
        }),
        pod_selector: Some(LabelSelector {
            match_labels: Some(callers.reconciler_pod_labels.clone()),
            match_expressions: None,
        }),
        ip_block: None,
    }];
    if let Some(scrapers) = callers.metrics_namespaces.as_ref() {
        admin_from.push(NetworkPolicyPeer {
            namespace_selector: Some(scrapers.clone()),
            ..Default::default()
        });
    }
    let mut ingress = Vec::new();
    if !open.is_empty() {
        ingress.push(rule(&open, None));
    }
    ingress.push(rule(&[s.rpc_port], rpc_from));
    ingress.push(rule(&[s.admin_port], Some(admin_from)));
    let spec = NetworkPolicySpec {
        pod_selector: Some(garage_pods),
        policy_types: Some(vec!["Ingress".into()]),
        ingress: Some(ingress),
        egress: None,
    };
    Ok(NetworkPolicy {
        metadata: super::hashed_child_meta(c, s, names::garage_network_policy(&s.name), &spec)?,
        spec: Some(spec),
    })
}

/// One ingress rule: TCP `ports` from `from` (`None`: from every source).
fn rule(ports: &[u16], from: Option<Vec<NetworkPolicyPeer>>) -> NetworkPolicyIngressRule {
    NetworkPolicyIngressRule {
        from,
        ports: Some(
            ports
                .iter()
                .map(|p| NetworkPolicyPort {
                    port: Some(IntOrString::Int(i32::from(*p))),
                    protocol: Some("TCP".into()),
                    end_port: None,
                })
                .collect(),
        ),
    }
}

#[cfg(test)]
mod tests;
