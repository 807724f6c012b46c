//! Objects for the decide table tests: clusters, GarageNodes, pods and Garage answers built
//! the way the API server and Garage return them.

// Test fixtures only (built for tests, or with the `test-support` feature): a malformed
// fixture is a bug in the test, so it panics.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use serde_json::{Value, json};
use shared_types::common::ClusterReference;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{
    GarageNode, GarageNodeSpec, GarageNodeStatus, NodeStorageConfig, NodeVolumeConfig,
};
use shared_types::keys::finalizer::FINALIZER_NODE;

use crate::config::Config;
use crate::desired::{Settings, labels, nodes};
use crate::names;
use garage_api_types::{ClusterHealth, ClusterLayout, ClusterStatus, LayoutHistory, NodeId};

pub use crate::desired::test_support::cluster;

/// Timing with distinct values, so a test can tell which requeue was chosen.
pub fn timing() -> Config {
    Config {
        resync: std::time::Duration::from_secs(60),
        short_requeue: std::time::Duration::from_secs(5),
        ..Config::default()
    }
}

/// The 64-hex node ID number `n`.
pub fn id(n: u8) -> NodeId {
    format!("{n:02x}{}", "0".repeat(62))
        .parse()
        .expect("valid id")
}

/// Settings of `c`.
pub fn settings(c: &GarageCluster) -> Settings {
    Settings::from_cluster(c).expect("valid cluster")
}

/// Generated Auto node `ordinal` of `c`, with identity `id` proven by pod UID `pod-<name>`.
pub fn generated(c: &GarageCluster, ordinal: u32, known: Option<NodeId>) -> GarageNode {
    let mut gn = nodes::auto_storage_node(c, &settings(c), ordinal).expect("renders");
    let name = gn.metadata.name.clone().unwrap_or_default();
    gn.metadata.uid = Some(format!("uid-{name}"));
    gn.metadata.finalizers = Some(vec![FINALIZER_NODE.into()]);
    gn.status = known.map(|id| GarageNodeStatus {
        node_id: Some(id.to_string()),
        observed_pod_uid: Some(format!("pod-{name}")),
        ..Default::default()
    });
    gn
}

/// A user-written storage GarageNode of cluster `garage` on PVCs, with `capacity` 2Gi.
pub fn manual(name: &str, known: Option<NodeId>) -> GarageNode {
    let volume = |size: &str| NodeVolumeConfig {
        size: Some(Quantity(size.into())),
        storage_class_name: Some("local-sim".into()),
        ..Default::default()
    };
    let mut gn = GarageNode::new(
        name,
        GarageNodeSpec {
            cluster_ref: ClusterReference {
                name: "garage".into(),
                ..Default::default()
            },
            zone: "zone-m".into(),
            capacity: Some(Quantity("2Gi".into())),
            storage: Some(NodeStorageConfig {
                metadata: Some(volume("100Mi")),
                data: Some(volume("2Gi")),
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    gn.metadata.namespace = Some("ns".into());
    gn.metadata.uid = Some(format!("uid-{name}"));
    gn.metadata.generation = Some(1);
    gn.metadata.finalizers = Some(vec![FINALIZER_NODE.into()]);
    gn.status = known.map(|id| GarageNodeStatus {
        node_id: Some(id.to_string()),
        observed_pod_uid: Some(format!("pod-{name}")),
        ..Default::default()
    });
    gn
}

/// The running, Ready pod of GarageNode `node` at 198.18.0.`ip`, controlled by `owner_uid`.
pub fn pod(node: &str, ip: u8, owner_uid: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(names::node_pod(node)),
            namespace: Some("ns".into()),
            uid: Some(format!("pod-{node}")),
            labels: Some({
                let mut l = labels::storage_pod_labels("garage", node);
                l.insert("controller-revision-hash".into(), "rev-1".into());
                l
            }),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".into(),
                kind: "StatefulSet".into(),
                name: node.into(),
                uid: owner_uid.into(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        spec: None,
        status: Some(PodStatus {
            phase: Some("Running".into()),
            pod_ip: Some(format!("198.18.0.{ip}")),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

/// A role of the layout JSON for node `n`.
pub fn role(n: &NodeId, zone: &str, capacity: u64, tags: &[String]) -> Value {
    json!({"id": n.as_str(), "zone": zone, "capacity": capacity, "tags": tags})
}

/// A layout at `version` with `roles` and `staged` changes.
pub fn layout(version: u64, roles: &[Value], staged: &[Value]) -> ClusterLayout {
    serde_json::from_value(json!({
        "version": version, "roles": roles, "parameters": {"zoneRedundancy": "maximum"},
        "partitionSize": 0, "stagedRoleChanges": staged, "stagedParameters": null
    }))
    .expect("layout")
}

/// A settled history at `version`.
pub fn settled(version: u64) -> LayoutHistory {
    serde_json::from_value(json!({
        "currentVersion": version, "minAck": version,
        "versions": [{"version": version, "status": "Current", "storageNodes": 3, "gatewayNodes": 0}]
    }))
    .expect("history")
}

/// A history at `version` whose previous version is still being synced.
pub fn unsettled(version: u64) -> LayoutHistory {
    serde_json::from_value(json!({
        "currentVersion": version, "minAck": version - 1,
        "versions": [
            {"version": version, "status": "Current", "storageNodes": 3, "gatewayNodes": 1},
            {"version": version - 1, "status": "Draining", "storageNodes": 3, "gatewayNodes": 1}
        ],
        "updateTrackers": {}
    }))
    .expect("history")
}

/// `GetClusterStatus` with `up` connected.
pub fn status(version: u64, up: &[&NodeId]) -> ClusterStatus {
    let nodes: Vec<Value> = up
        .iter()
        .map(|id| json!({"id": id.as_str(), "isUp": true, "draining": false}))
        .collect();
    serde_json::from_value(json!({"layoutVersion": version, "nodes": nodes})).expect("status")
}

/// A healthy `GetClusterHealth` of `n` storage nodes.
pub fn healthy(n: u64) -> ClusterHealth {
    serde_json::from_value(json!({
        "status": "healthy", "knownNodes": n, "connectedNodes": n, "storageNodes": n,
        "storageNodesUp": n, "partitions": 256, "partitionsQuorum": 256, "partitionsAllOk": 256
    }))
    .expect("health")
}

/// A deletion timestamp.
pub fn deleting() -> Option<Time> {
    Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH))
}

/// Status and reason of the Ready condition among `conditions`.
pub fn ready_of(conditions: &[crate::conditions::Desired]) -> (bool, &'static str) {
    let c = conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::common::CONDITION_READY)
        .expect("a Ready condition");
    (c.status, c.reason)
}

/// A pass over `c` that found nothing but `garage`: no member, pod, workload or claim.
pub fn observed_cluster(
    c: GarageCluster,
    garage: crate::cluster::observed::GarageView,
) -> crate::cluster::observed::Observed {
    crate::cluster::observed::Observed {
        cluster: std::sync::Arc::new(c),
        generated: Default::default(),
        retiring: vec![],
        user_nodes: vec![],
        pool_members: vec![],
        gateways: std::collections::BTreeMap::new(),
        daemonsets: vec![],
        config_maps: vec![],
        services: vec![],
        k8s_nodes: vec![],
        foreign_paths: vec![],
        gate: None,
        pods: vec![],
        garage,
        statefulsets: vec![],
        claims: vec![],
        proof: None,
        now: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        transaction_id: "tx".into(),
        monitoring_installed: false,
        edges: Vec::new(),
        go_token: None,
    }
}
