//! A management handle: a GarageCluster with only `spec.connectTo` (no storage, no gateway).
//!
//! It runs nothing. It names a Garage cluster this install does not run (an Admin API URL and
//! its bearer), or another GarageCluster of its namespace, so that GarageBuckets and
//! GarageKeys can manage that cluster's buckets and keys through it. Its own pass only proves
//! that the Admin API answers and says so in `ManagementHandleReady`; dependents wait for it.
//! Deleting a handle changes nothing in Garage: the cluster behind it is not its to tear down.

use std::time::Duration;

use shared_types::common::ClusterPhase;
use shared_types::conditions::{cluster, common, reason};
use shared_types::garage_cluster::common::ClusterEndpoints;
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterStatus};

use crate::conditions::Desired;
use crate::desired::config::ADMIN_TOKEN_KEY;
use crate::desired::secrets::SecretSource;
use crate::desired::{DesiredError, labels};

/// How many handles a chain of `connectTo.clusterRef` may pass before it must reach a cluster
/// that answers; a longer chain is refused as a loop.
pub const MAX_CHAIN: usize = 8;

/// Conditions a handle's pass owns: those it does not want go when it publishes (a lifted
/// suspension's included).
pub const OWNED: &[&str] = &[
    cluster::CONDITION_MANAGEMENT_HANDLE_READY,
    common::CONDITION_READY,
    shared_types::conditions::node::CONDITION_SUSPENDED,
];

/// Why the handle `c` does not serve its dependents yet: its `ManagementHandleReady` is not
/// True for its current generation (a changed `connectTo` is proven again first).
pub fn waits(c: &GarageCluster) -> Option<String> {
    let conditions = c.status.as_ref().and_then(|s| s.conditions.as_deref());
    let ready = conditions.and_then(|cs| {
        cs.iter()
            .find(|x| x.type_ == cluster::CONDITION_MANAGEMENT_HANDLE_READY)
    });
    match ready {
        Some(r) if r.status == "True" && r.observed_generation == c.metadata.generation => None,
        Some(r) if r.status != "True" => Some(r.message.clone()),
        _ => Some("its Admin API has not been proven for its current spec yet".into()),
    }
}

/// Where a handle's Admin API is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminSource {
    /// An Admin API URL (no trailing `/`), with the Secret of its bearer in the handle's
    /// namespace.
    Endpoint {
        /// The URL.
        url: String,
        /// The bearer's Secret and key (`admin-token` unless named).
        token: SecretSource,
    },
    /// Another GarageCluster of the handle's namespace, reached as its own dependents reach
    /// it.
    Cluster(String),
}

/// True for a management handle: `connectTo` with neither tier.
pub fn is_handle(c: &GarageCluster) -> bool {
    c.spec.connect_to.is_some() && c.spec.storage.is_none() && c.spec.gateway.is_none()
}

/// Where the handle `c` reaches Garage. An Admin API URL with its token wins over a
/// `clusterRef`; a URL without a token is only used when there is no `clusterRef` to follow
/// (and then refused, naming the token).
pub fn admin_source(c: &GarageCluster) -> Result<AdminSource, DesiredError> {
    let invalid = |field: &'static str, message: &str| DesiredError::Invalid {
        field,
        message: message.into(),
    };
    let Some(to) = &c.spec.connect_to else {
        return Err(invalid(
            "spec.connectTo",
            "a management handle needs spec.connectTo",
        ));
    };
    let url = to
        .admin_api_endpoint
        .as_deref()
        .map(str::trim)
        .filter(|u| !u.is_empty());
    let token = to
        .admin_token_secret_ref
        .as_ref()
        .filter(|r| !r.name.is_empty());
    if let Some(url) = url.filter(|_| token.is_some() || to.cluster_ref.is_none()) {
        let url = endpoint_url(url)?;
        let Some(token) = token else {
            return Err(invalid(
                "spec.connectTo.adminTokenSecretRef",
                "required with spec.connectTo.adminApiEndpoint: name the Secret holding a bearer the remote Admin API accepts",
            ));
        };
        let key = Some(token.key.as_str())
            .filter(|k| !k.is_empty())
            .unwrap_or(ADMIN_TOKEN_KEY);
        return Ok(AdminSource::Endpoint {
            url,
            token: SecretSource {
                name: token.name.clone(),
                key: key.to_owned(),
                generated: false,
            },
        });
    }
    let Some(reference) = &to.cluster_ref else {
        return Err(invalid(
            "spec.connectTo",
            "a management handle needs clusterRef, or adminApiEndpoint with adminTokenSecretRef",
        ));
    };
    if reference.kube_config_secret_ref.is_some() {
        return Err(invalid(
            "spec.connectTo.clusterRef.kubeConfigSecretRef",
            "a cluster of another Kubernetes cluster is reached through adminApiEndpoint, not a kubeconfig; remove it",
        ));
    }
    let own = c.metadata.namespace.as_deref().unwrap_or_default();
    if reference
        .namespace
        .as_deref()
        .is_some_and(|n| !n.is_empty() && n != own)
    {
        return Err(invalid(
            "spec.connectTo.clusterRef.namespace",
            "must be empty or this cluster's own namespace",
        ));
    }
    if reference.name.is_empty() || Some(reference.name.as_str()) == c.metadata.name.as_deref() {
        return Err(invalid(
            "spec.connectTo.clusterRef.name",
            "must name another GarageCluster of this namespace",
        ));
    }
    Ok(AdminSource::Cluster(reference.name.clone()))
}

/// `url` without its trailing `/`, when it is an absolute http(s) URL with a host and no
/// credentials, query or fragment (the bearer goes in a header, never in the URL).
fn endpoint_url(url: &str) -> Result<String, DesiredError> {
    let invalid = |message: &str| DesiredError::Invalid {
        field: "spec.connectTo.adminApiEndpoint",
        message: message.into(),
    };
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| invalid("must start with http:// or https://"))?;
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() {
        return Err(invalid("names no host"));
    }
    if authority.contains('@') {
        return Err(invalid(
            "must not carry credentials; put the bearer in adminTokenSecretRef",
        ));
    }
    if url.contains('?') || url.contains('#') || url.chars().any(char::is_whitespace) {
        return Err(invalid("must have no query, fragment or whitespace"));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// What a handle's pass found when it asked the Admin API.
#[derive(Debug, Clone, PartialEq)]
pub enum Probe {
    /// The spec does not say where the Admin API is.
    Invalid(DesiredError),
    /// The bearer cannot be read (the message names the Secret).
    TokenMissing(String),
    /// The referenced cluster cannot be used yet (the message says why).
    Referent(String),
    /// The Admin API did not answer, or refused the bearer.
    Unreachable(String),
    /// The Admin API answered.
    Reached {
        /// Garage's health, as the status reports it.
        health: Option<shared_types::garage_cluster::common::ClusterHealth>,
        /// The Admin API URL, for `status.endpoints.admin` (none through a `clusterRef`).
        admin_url: Option<String>,
    },
}

/// The status of the handle `name`, its conditions and when to look again: soon while it
/// waits, at the long resync once it answers. It counts no replicas: it runs none.
pub fn status(
    name: &str,
    probe: &Probe,
    resync: Duration,
    short: Duration,
) -> (GarageClusterStatus, Vec<Desired>, Duration) {
    let (ready, why, message) = match probe {
        Probe::Invalid(e) => (false, e.reported_as().0, e.to_string()),
        Probe::TokenMissing(m) => (false, reason::REASON_ADMIN_TOKEN_MISSING, m.clone()),
        Probe::Referent(m) => (false, reason::REASON_CLUSTER_NOT_READY, m.clone()),
        Probe::Unreachable(m) => (false, reason::REASON_ADMIN_UNREACHABLE, m.clone()),
        Probe::Reached { .. } => (
            true,
            reason::REASON_RECONCILE_SUCCESS,
            "the Admin API answers; buckets and keys are managed through this handle".into(),
        ),
    };
    let mut status = GarageClusterStatus {
        phase: Some(if ready {
            ClusterPhase::Running
        } else {
            ClusterPhase::Pending
        }),
        replicas: Some(0),
        ready_replicas: Some(0),
        scale_replicas: Some(0),
        selector: Some(labels::selector_string(&labels::api_selector(name))),
        ..Default::default()
    };
    status.scale_selector = status.selector.clone();
    if let Probe::Reached { health, admin_url } = probe {
        status.health = health.clone();
        status.endpoints = admin_url.as_ref().map(|url| ClusterEndpoints {
            admin: Some(url.clone()),
            ..Default::default()
        });
    }
    let wanted = [
        cluster::CONDITION_MANAGEMENT_HANDLE_READY,
        common::CONDITION_READY,
    ]
    .into_iter()
    .map(|type_| Desired {
        type_,
        status: ready,
        reason: why,
        message: message.clone(),
    })
    .collect();
    (status, wanted, if ready { resync } else { short })
}

#[cfg(test)]
mod tests;
