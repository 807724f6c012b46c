//! Table tests for the GarageNode rules: fixtures and the harness. Each case
//! names the rule it expects to fire (or none), and optionally a message or
//! warning fragment.

mod create;
mod create_parent;
mod cycle;
mod delete;
mod update;
mod volumes;

use super::validate_node;
use crate::admission::shared::drain_token::target_hash;
pub use crate::admission::testing::{Want, check, merge};
use crate::admission::{Context, Review, Verdict};
use serde_json::{Value, json};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

pub const NS: &str = "garage";
pub const CLUSTER: &str = "garage";
pub const CLUSTER_UID: &str = "cluster-uid";
pub const NODE_UID: &str = "node-uid";

pub fn id(c: char) -> String {
    std::iter::repeat_n(c, 64).collect()
}

/// A managed StatefulSet storage node.
pub fn storage_node() -> Value {
    json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageNode",
        "metadata": {"name": "n1", "namespace": NS, "uid": NODE_UID, "generation": 1},
        "spec": {
            "clusterRef": {"name": CLUSTER},
            "zone": "dc1",
            "capacity": "1Ti",
            "storage": {"metadata": {"size": "10Gi"}, "data": {"size": "100Gi"}}
        }
    })
}

/// A managed gateway node.
pub fn gateway_node() -> Value {
    merge(
        storage_node(),
        json!({"spec": {"gateway": true, "capacity": null, "storage": {"data": null}}}),
    )
}

/// An external storage node.
pub fn external_node() -> Value {
    merge(
        storage_node(),
        json!({"spec": {"storage": null, "nodeId": id('a'), "external": {"address": "10.0.0.9", "port": 3901}}}),
    )
}

/// A node-local-pool member controlled by the cluster.
pub fn pool_node() -> Value {
    merge(
        storage_node(),
        json!({
            "metadata": {
                "name": "garage-node-local-local-700-worker-a",
                "ownerReferences": [{"apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster", "name": CLUSTER, "uid": CLUSTER_UID, "controller": true}],
                "labels": {"app.kubernetes.io/managed-by": "operator", "garage.rajsingh.info/node-local-pool": "local-700"}
            },
            "spec": {"storage": null, "backing": "NodeLocalPool", "kubernetesNodeName": "worker-a", "nodeLocalPoolName": "local-700"}
        }),
    )
}

/// A node with a running, identified, committed source (cycle-eligible).
pub fn running(node: Value) -> Value {
    merge(
        node,
        json!({"status": {"nodeId": id('a'), "observedPodUid": "pod-uid", "observedGeneration": 1, "connected": true, "inLayout": true}}),
    )
}

fn condition(kind: &str, status: &str, reason: &str, generation: i64) -> Value {
    json!({"type": kind, "status": status, "reason": reason, "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": generation})
}

/// A healthy, settled storage cluster with one pool.
pub fn cluster() -> Value {
    json!({
        "apiVersion": "garage.rajsingh.info/v1beta2",
        "kind": "GarageCluster",
        "metadata": {"name": CLUSTER, "namespace": NS, "uid": CLUSTER_UID, "generation": 3},
        "spec": {
            "replication": {"factor": 3, "consistencyMode": "consistent"},
            "storage": {"replicas": 0, "nodeLocalPools": [{"name": "local-700", "capacity": "700Gi", "metadata": {"hostPath": "/var/lib/garage/m"}, "data": {"hostPath": "/var/lib/garage/d"}, "selector": {"matchLabels": {"pool": "local-700"}}}]}
        },
        "status": {
            "conditions": [condition("StorageRolloutReady", "True", "Ready", 3)],
            "health": {"status": "healthy", "healthy": true, "available": true, "storageNodes": 3, "storageNodesOk": 3, "partitions": 256, "partitionsQuorum": 256, "partitionsAllOk": 256}
        }
    })
}

/// The cluster replacing a pod of `node_name` (status.storageRollout).
pub fn rolling_cluster(node_name: &str) -> Value {
    merge(
        cluster(),
        json!({"status": {"storageRollout": {"garageNodeName": node_name, "garageNodeUid": NODE_UID, "garageNodeId": id('a'), "previousPodUid": "old-pod"}}}),
    )
}

/// A terminal drain token for the node `n1`, removing `id('a')`.
pub fn node_drain(unavailable: bool) -> Value {
    let ids = vec![id('a')];
    let lost: Vec<String> = if unavailable { ids.clone() } else { Vec::new() };
    json!({
        "actor": {"apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageNode", "namespace": NS, "name": "n1", "uid": NODE_UID},
        "transactionId": "tx-1",
        "startedAt": "2026-01-01T00:00:00Z",
        "completedAt": "2026-01-01T01:00:00Z",
        "roleRemovalNodeIds": ids,
        "removedStorageNodeIds": ids,
        "unavailableSourceNodeIds": lost,
        "managedPodUids": {id('a'): "pod-uid"},
        "targetHash": target_hash(&ids, &ids, &lost)
    })
}

/// A cluster whose own terminal drain (empty sets) has completed.
pub fn cluster_drain() -> Value {
    json!({
        "actor": {"apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster", "namespace": NS, "name": CLUSTER, "uid": CLUSTER_UID},
        "transactionId": "tx-site",
        "startedAt": "2026-01-01T00:00:00Z",
        "completedAt": "2026-01-01T01:00:00Z",
        "targetHash": target_hash(&[], &[], &[])
    })
}

pub fn gn(v: Value) -> GarageNode {
    serde_json::from_value(v).expect("node fixture")
}

pub fn gc(v: Value) -> GarageCluster {
    serde_json::from_value(v).expect("cluster fixture")
}

/// A context holding `clusters`.
pub fn ctx(clusters: Vec<Value>) -> Context {
    Context {
        garage_clusters: clusters.into_iter().map(gc).collect(),
        ..Context::default()
    }
}

/// Runs a CREATE.
pub fn create(node: Value, ctx: &Context) -> Verdict {
    validate_node(Review::create(&gn(node)), ctx)
}

/// Runs an UPDATE.
pub fn update(old: Value, new: Value, ctx: &Context) -> Verdict {
    let (old, new) = (gn(old), gn(new));
    validate_node(Review::update(&old, &new), ctx)
}

/// Runs a DELETE.
pub fn delete(old: Value, ctx: &Context) -> Verdict {
    validate_node(Review::delete(&gn(old)), ctx)
}
