//! Node registration and the two heartbeats a kubelet keeps: the Node Lease
//! (renewed every [`LEASE_RENEW`]) and the Ready condition in Node status
//! (refreshed every [`STATUS_REFRESH`]). A lost node stops both, so the
//! node lifecycle controller marks it NotReady after its grace period.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::time::Clock;
use crate::{Error, NodeSpec};

/// How often the Node Lease is renewed (the kubelet renews every 10s with a
/// 40s duration; tests want a dead node noticed quickly, so renew faster).
pub(crate) const LEASE_RENEW: Duration = Duration::from_secs(5);
/// How often the Ready condition's heartbeat time is refreshed.
pub(crate) const STATUS_REFRESH: Duration = Duration::from_secs(20);
/// The Lease duration written to the Lease.
const LEASE_SECONDS: i32 = 40;
/// The Kubernetes version kubesim claims to be.
pub(crate) const KUBELET_VERSION: &str = "v1.36.2";

/// A registered node.
#[derive(Debug)]
pub(crate) struct NodeState {
    /// Its InternalIP.
    pub ip: Ipv4Addr,
    /// Its root directory.
    pub root: std::path::PathBuf,
    /// The clock its writes, and its pods', carry.
    pub clock: Clock,
    /// Set to true when the node is lost; stops the heartbeats.
    pub lost: watch::Sender<bool>,
    /// The heartbeat task.
    pub heartbeat: Option<JoinHandle<()>>,
}

/// Creates or updates the Node object and its status.
pub(crate) async fn register(
    client: &Client,
    spec: &NodeSpec,
    ip: Ipv4Addr,
    clock: Clock,
    since: &str,
) -> Result<(), Error> {
    let nodes: Api<Node> = Api::all(client.clone());
    let mut labels = BTreeMap::from([
        ("kubernetes.io/hostname".to_owned(), spec.name.clone()),
        ("kubernetes.io/os".to_owned(), "linux".to_owned()),
        ("kubernetes.io/arch".to_owned(), "amd64".to_owned()),
        ("beta.kubernetes.io/os".to_owned(), "linux".to_owned()),
        ("beta.kubernetes.io/arch".to_owned(), "amd64".to_owned()),
    ]);
    labels.extend(spec.labels.clone());
    let taints: Vec<_> = spec
        .taints
        .iter()
        .map(|(key, value, effect)| json!({"key": key, "value": value, "effect": effect}))
        .collect();
    let taints = if taints.is_empty() {
        serde_json::Value::Null
    } else {
        serde_json::Value::Array(taints)
    };
    let node: Node = serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": { "name": spec.name, "labels": labels },
        "spec": { "taints": taints },
    }))
    .map_err(|e| Error::Kube(kube::Error::SerdeError(e)))?;
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {
            // A node left behind by an earlier run of the same cluster:
            // take it over with our labels, schedulable again.
            let patch = json!({
                "metadata": { "labels": labels },
                "spec": { "unschedulable": null, "taints": taints },
            });
            nodes
                .patch(&spec.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        Err(e) => return Err(e.into()),
    }
    let status = json!({
        "status": {
            "capacity": resources(),
            "allocatable": resources(),
            "conditions": conditions(clock, since),
            "addresses": [
                { "type": "InternalIP", "address": ip.to_string() },
                { "type": "Hostname", "address": spec.name },
            ],
            "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
            "nodeInfo": {
                "machineID": format!("kubesim-{}", spec.name),
                "systemUUID": format!("kubesim-{}", spec.name),
                "bootID": format!("kubesim-{}-{}", spec.name, std::process::id()),
                "kernelVersion": "kubesim",
                "osImage": "kubesim (processes on the host)",
                "containerRuntimeVersion": "kubesim://0.1.0",
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": KUBELET_VERSION,
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        }
    });
    nodes
        .patch_status(&spec.name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    renew_lease(client, &spec.name, clock).await?;
    Ok(())
}

/// Starts renewing the Lease and refreshing the Ready heartbeat until
/// `lost` turns true.
pub(crate) fn spawn_heartbeat(
    client: Client,
    name: String,
    clock: Clock,
    since: String,
    mut lost: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut lease = tokio::time::interval(LEASE_RENEW);
        let mut status = tokio::time::interval(STATUS_REFRESH);
        loop {
            tokio::select! {
                _ = lease.tick() => {
                    if let Err(e) = renew_lease(&client, &name, clock).await {
                        tracing::warn!(node = %name, "renewing the node lease: {e}");
                    }
                }
                _ = status.tick() => {
                    let nodes: Api<Node> = Api::all(client.clone());
                    let patch = json!({ "status": { "conditions": conditions(clock, &since) } });
                    if let Err(e) = nodes.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                        tracing::warn!(node = %name, "refreshing node status: {e}");
                    }
                }
                changed = lost.changed() => {
                    if changed.is_err() || *lost.borrow() {
                        return;
                    }
                }
            }
        }
    })
}

async fn renew_lease(client: &Client, name: &str, clock: Clock) -> Result<(), Error> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let now = clock.now_micro();
    let patch = json!({ "spec": { "holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now } });
    match leases
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => {
            let nodes: Api<Node> = Api::all(client.clone());
            let uid = nodes.get(name).await?.metadata.uid.unwrap_or_default();
            let lease: Lease = serde_json::from_value(json!({
                "metadata": {
                    "name": name,
                    "namespace": "kube-node-lease",
                    "ownerReferences": [{ "apiVersion": "v1", "kind": "Node", "name": name, "uid": uid }],
                },
                "spec": { "holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS, "renewTime": now },
            }))
            .map_err(|e| Error::Kube(kube::Error::SerdeError(e)))?;
            leases.create(&PostParams::default(), &lease).await?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}

fn resources() -> serde_json::Value {
    json!({ "cpu": "16", "memory": "64Gi", "pods": "110", "ephemeral-storage": "100Gi" })
}

/// The node conditions, healthy since `since` (the registration time).
fn conditions(clock: Clock, since: &str) -> serde_json::Value {
    let now = clock.now();
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({
            "type": kind, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": now, "lastTransitionTime": since,
        })
    };
    json!([
        condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available"
        ),
        condition(
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure"
        ),
        condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available"
        ),
        condition(
            "Ready",
            "True",
            "KubeletReady",
            "kubesim is posting ready status"
        ),
    ])
}
