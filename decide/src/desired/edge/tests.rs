//! Table tests of the edge gateway's StatefulSet.

use k8s_openapi::api::apps::v1::StatefulSet;
use serde_json::json;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use super::*;
use crate::desired::config;

/// The upstream edge sample's shape: one gateway connected to `garage` by reference.
fn edge(gateway: serde_json::Value) -> GarageCluster {
    serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2",
        "kind": "GarageCluster",
        "metadata": {"name": "edge", "namespace": "ns", "uid": "uid-e", "generation": 1},
        "spec": {"gateway": gateway, "connectTo": {"clusterRef": {"name": "garage"}}, "zone": "edge-1"},
    }))
    .unwrap()
}

fn render(c: &GarageCluster) -> StatefulSet {
    let s = Settings::from_edge(c).unwrap();
    let rev = config::revision(c, &s).unwrap();
    let source = |name: &str, key: &str| SecretSource {
        name: name.into(),
        key: key.into(),
        generated: false,
    };
    statefulset(
        c,
        &s,
        &rev,
        &source("garage-rpc-secret", "rpc-secret"),
        &source("garage-admin-token", "admin-token"),
    )
    .unwrap()
}

#[test]
fn only_a_gateway_tier_with_connect_to_and_no_storage_is_an_edge() {
    assert!(is_edge(&edge(json!({"replicas": 1}))));
    let mut unified = edge(json!({"replicas": 1}));
    unified.spec.storage = crate::desired::test_support::cluster(3).spec.storage;
    assert!(!is_edge(&unified));
    let mut handle = edge(json!({"replicas": 1}));
    handle.spec.gateway = None;
    assert!(!is_edge(&handle));
}

#[test]
fn the_edge_runs_one_rolling_set_with_the_go_operators_names_and_claims() {
    let set = render(&edge(json!({"replicas": 2})));
    assert_eq!(set.metadata.name.as_deref(), Some("edge-gateway"));
    let spec = set.spec.unwrap();
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(spec.pod_management_policy.as_deref(), Some("Parallel"));
    assert_eq!(
        spec.update_strategy.and_then(|u| u.type_).as_deref(),
        Some("RollingUpdate"),
        "a gateway holds no data: Kubernetes rolls it, one ready member at a time"
    );
    let selector = spec.selector.match_labels.unwrap();
    assert_eq!(selector, labels::gateway_selector("edge"));
    let pod_labels = spec.template.metadata.unwrap().labels.unwrap();
    for (k, v) in &selector {
        assert_eq!(pod_labels.get(k), Some(v), "the selector selects its pods");
    }
    assert_eq!(
        pod_labels.get(label::LABEL_CLUSTER).map(String::as_str),
        Some("edge")
    );
    assert!(!pod_labels.contains_key(label::LABEL_NODE));
    // The claim the Go operator's edge pods hold their node key on: metadata-edge-gateway-<i>.
    let claims = spec.volume_claim_templates.unwrap();
    let names: Vec<_> = claims
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["metadata"]);
    assert_eq!(
        claims[0]
            .spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage"))
            .map(|q| q.0.as_str()),
        Some("1Gi")
    );
    let owner = &set.metadata.owner_references.unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("GarageCluster", "edge")
    );
}

#[test]
fn an_edges_claims_go_with_it_unless_it_keeps_them() {
    let policy = |gateway: serde_json::Value| {
        let p = render(&edge(gateway))
            .spec
            .unwrap()
            .persistent_volume_claim_retention_policy
            .unwrap();
        (p.when_deleted.unwrap(), p.when_scaled.unwrap())
    };
    assert_eq!(
        policy(json!({"replicas": 1})),
        ("Delete".to_owned(), "Delete".to_owned())
    );
    assert_eq!(
        policy(
            json!({"replicas": 1, "pvcRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}})
        ),
        ("Retain".to_owned(), "Retain".to_owned())
    );
}

#[test]
fn a_replica_count_change_is_a_new_rendering() {
    let hash = |r: i32| {
        render(&edge(json!({"replicas": r})))
            .metadata
            .annotations
            .unwrap()[annotation::ANNOTATION_RENDERED_HASH]
            .clone()
    };
    assert_ne!(hash(1), hash(2));
    assert_eq!(hash(2), hash(2));
}

#[test]
fn the_edges_services_front_its_gateways() {
    let c = edge(json!({"replicas": 1}));
    let s = Settings::from_edge(&c).unwrap();
    let all = services(&c, &s).unwrap();
    let by_name = |n: &str| {
        all.iter()
            .find(|x| x.metadata.name.as_deref() == Some(n))
            .and_then(|x| x.spec.clone())
            .unwrap_or_else(|| panic!("no Service {n}"))
    };
    for name in ["edge", "edge-admin"] {
        let spec = by_name(name);
        assert_eq!(
            spec.selector.unwrap(),
            labels::gateway_selector("edge"),
            "{name}"
        );
        assert_eq!(spec.publish_not_ready_addresses, None, "{name}");
    }
    let headless = by_name("edge-headless");
    assert_eq!(
        headless
            .selector
            .unwrap()
            .get(label::LABEL_CLUSTER)
            .map(String::as_str),
        Some("edge")
    );
}

#[test]
fn an_edges_config_advertises_its_gateway_address_and_contacts_its_peers_first() {
    let peer = format!("{}@garage-0.example:3901", "a".repeat(64));
    let mut c = edge(json!({"replicas": 1, "rpcPublicAddr": "edge.example:3901"}));
    c.spec.network =
        Some(serde_json::from_value(json!({"rpcPublicAddr": "cluster.example:3901"})).unwrap());
    c.spec.connect_to = Some(
        serde_json::from_value(json!({"clusterRef": {"name": "garage"}, "bootstrapPeers": [peer]}))
            .unwrap(),
    );
    let s = Settings::from_edge(&c).unwrap();
    let body = config::render(&c, &s).unwrap();
    assert!(
        body.contains("rpc_public_addr = \"edge.example:3901\""),
        "the gateway tier's address wins: {body}"
    );
    assert!(
        body.contains(&format!("bootstrap_peers = [\"{peer}\"]")),
        "{body}"
    );
    // Without a gateway address the cluster's own is advertised.
    c.spec.gateway.as_mut().unwrap().rpc_public_addr = None;
    let body = config::render(&c, &s).unwrap();
    assert!(
        body.contains("rpc_public_addr = \"cluster.example:3901\""),
        "{body}"
    );
}

#[test]
fn a_public_endpoint_on_an_edge_is_refused_naming_it() {
    let mut c = edge(json!({"replicas": 1}));
    c.spec.public_endpoint = serde_json::from_value(json!({"type": "NodePort"})).unwrap();
    match Settings::from_edge(&c) {
        Err(crate::desired::DesiredError::Unsupported(what)) => {
            assert!(what.starts_with("spec.publicEndpoint"), "{what}");
        }
        other => panic!("{:?}", other.map(|s| s.name)),
    }
}

#[test]
fn an_edge_that_turns_discovery_on_runs_it_with_a_token() {
    let mut c = edge(json!({"replicas": 1}));
    let token = |c: &GarageCluster| {
        render(c)
            .spec
            .and_then(|s| s.template.spec)
            .and_then(|p| p.automount_service_account_token)
    };
    assert_eq!(token(&c), Some(false));
    c.spec.discovery =
        Some(serde_json::from_value(json!({"kubernetes": {"enabled": true}})).unwrap());
    let s = Settings::from_edge(&c).unwrap();
    let body =
        config::revision(&c, &s).unwrap().config_map.data.unwrap()[config::CONFIG_KEY].clone();
    assert!(body.contains("[kubernetes_discovery]"), "{body}");
    assert_eq!(
        token(&c),
        Some(true),
        "the discovery its garage.toml runs needs the token"
    );
}
