#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use shared_types::common::{LoadBalancerConfig, NodePortConfig};
use shared_types::garage_cluster::common::LayoutPolicy;

use super::*;
use crate::desired::test_support::cluster;
use crate::fixtures::{generated, manual, settings};

fn lb(per_node: bool) -> PublicEndpointConfig {
    PublicEndpointConfig {
        type_: Some(PublicEndpointType::LoadBalancer),
        load_balancer: Some(LoadBalancerConfig {
            per_node: Some(per_node),
            annotations: Some(BTreeMap::from([("lb.example/kind".into(), "nlb".into())])),
            labels: Some(BTreeMap::from([
                ("team".into(), "storage".into()),
                (label::LABEL_CLUSTER.into(), "spoofed".into()),
            ])),
        }),
        ..Default::default()
    }
}

fn node_port(base: Option<i32>, addresses: &[&str]) -> PublicEndpointConfig {
    PublicEndpointConfig {
        type_: Some(PublicEndpointType::NodePort),
        node_port: Some(NodePortConfig {
            base_port: base,
            external_addresses: addresses.iter().map(|a| (*a).to_owned()).collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn with_endpoint(ep: PublicEndpointConfig) -> GarageCluster {
    let mut c = cluster(3);
    c.spec.public_endpoint = Some(ep);
    c
}

fn slots() -> Vec<(u32, String)> {
    vec![
        (0, "garage-storage-0".into()),
        (1, "garage-storage-1-cycle".into()),
        (2, "garage-storage-2".into()),
    ]
}

fn spec_of(svc: &Service) -> &ServiceSpec {
    svc.spec.as_ref().unwrap()
}

#[test]
fn endpoint_service_names_are_recognised_and_nothing_else() {
    let cases = [
        ("garage-rpc", true),
        ("garage-0-rpc", true),
        ("garage-12-rpc", true),
        ("garage--rpc", false),
        ("garage-storage-0-rpc", false),
        ("garage-headless", false),
        ("garage-x-rpc", false),
        ("other-0-rpc", false),
    ];
    for (name, want) in cases {
        assert_eq!(is_endpoint_service("garage", name), want, "{name}");
    }
}

#[test]
fn each_shape_gets_its_services() {
    let c = with_endpoint(lb(false));
    let shared = cluster_services(&c, &settings(&c), &slots()).unwrap();
    assert_eq!(shared.len(), 1);
    assert_eq!(shared[0].metadata.name.as_deref(), Some("garage-rpc"));
    let spec = spec_of(&shared[0]);
    assert_eq!(spec.type_.as_deref(), Some("LoadBalancer"));
    assert_eq!(
        spec.selector
            .as_ref()
            .unwrap()
            .get(label::LABEL_STORAGE_GROUP)
            .map(String::as_str),
        Some(label::value::STORAGE_GROUP_DEFAULT)
    );
    let ports = spec.ports.as_ref().unwrap();
    assert_eq!((ports.len(), ports[0].port), (1, 3901), "only the RPC port");
    let labels = shared[0].metadata.labels.as_ref().unwrap();
    assert_eq!(labels["team"], "storage");
    assert_eq!(
        labels[label::LABEL_CLUSTER],
        "garage",
        "the operator's labels win"
    );
    assert_eq!(
        shared[0].metadata.annotations.as_ref().unwrap()["lb.example/kind"],
        "nlb"
    );

    let c = with_endpoint(lb(true));
    let per_node = cluster_services(&c, &settings(&c), &slots()).unwrap();
    let names: Vec<_> = per_node
        .iter()
        .map(|s| s.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["garage-0-rpc", "garage-1-rpc", "garage-2-rpc"]);
    assert_eq!(
        spec_of(&per_node[1]).selector.as_ref().unwrap()[label::LABEL_NODE],
        "garage-storage-1-cycle",
        "the node filling the slot"
    );
    assert_eq!(
        per_node[1].metadata.labels.as_ref().unwrap()[label::LABEL_NODE],
        "garage-storage-1-cycle"
    );

    let c = with_endpoint(node_port(Some(31000), &["a.example", "b.example"]));
    let ports = cluster_services(&c, &settings(&c), &slots()).unwrap();
    let node_ports: Vec<_> = ports
        .iter()
        .map(|s| {
            (
                spec_of(s).type_.clone().unwrap(),
                spec_of(s).ports.as_ref().unwrap()[0].node_port,
            )
        })
        .collect();
    assert_eq!(
        node_ports,
        [
            ("NodePort".to_owned(), Some(31000)),
            ("NodePort".to_owned(), Some(31001)),
            ("NodePort".to_owned(), Some(31002))
        ]
    );

    let mut manual_policy = with_endpoint(lb(true));
    manual_policy.spec.layout_policy = Some(LayoutPolicy::Manual);
    let s = settings(&manual_policy);
    assert!(
        cluster_services(&manual_policy, &s, &[])
            .unwrap()
            .is_empty()
    );
    let c = condition(&s).unwrap();
    assert_eq!(
        (c.status, c.reason),
        (false, reason::REASON_PER_NODE_NOT_IMPLEMENTED)
    );
    assert!(condition(&settings(&cluster(3))).is_none());
}

#[test]
fn members_advertise_the_address_their_shape_gives_them() {
    let ingress = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    };
    // Shared: the shared garage.toml, once assigned.
    let c = with_endpoint(lb(false));
    let mut s = settings(&c);
    assert_eq!(shared_address(&s), None);
    assert_eq!(
        condition(&s).unwrap().reason,
        reason::REASON_WAITING_FOR_DEPENDENCY
    );
    s.ingress = ingress(&[("garage-rpc", "203.0.113.7")]);
    assert_eq!(shared_address(&s).as_deref(), Some("203.0.113.7:3901"));
    assert!(condition(&s).unwrap().status);
    let gn = generated(&c, 1, None);
    assert_eq!(
        member_address(&gn, &s),
        None,
        "the shared address is not its own"
    );

    // Per node: each slot's Service.
    let c = with_endpoint(lb(true));
    let mut s = settings(&c);
    s.ingress = ingress(&[
        ("garage-1-rpc", "2001:db8::1"),
        ("garage-0-rpc", "lb0.example"),
    ]);
    assert_eq!(shared_address(&s), None);
    assert_eq!(
        member_address(&generated(&c, 1, None), &s).as_deref(),
        Some("[2001:db8::1]:3901")
    );
    assert_eq!(
        member_address(&generated(&c, 2, None), &s),
        None,
        "not assigned yet"
    );
    assert!(!condition(&s).unwrap().status);

    // Node ports: address i mod n, port base + i.
    let c = with_endpoint(node_port(None, &["a.example", "b.example"]));
    let s = settings(&c);
    assert_eq!(
        member_address(&generated(&c, 2, None), &s).as_deref(),
        Some("a.example:30903")
    );
    assert!(condition(&s).unwrap().status);

    // A user-written node: its own Service, and never its cluster's slots.
    let plain = settings(&cluster(3));
    let mut own = manual("manual-a", None);
    own.spec.public_endpoint = Some(lb(false));
    let mut s = plain.clone();
    s.ingress = ingress(&[("manual-a-rpc", "198.51.100.4")]);
    assert_eq!(
        member_address(&own, &s).as_deref(),
        Some("198.51.100.4:3901")
    );
    own.spec.public_endpoint = Some(node_port(Some(30100), &["n.example", "m.example"]));
    assert_eq!(
        member_address(&own, &plain).as_deref(),
        Some("n.example:30100")
    );
    let c = with_endpoint(lb(true));
    let mut s = settings(&c);
    s.ingress = ingress(&[("garage-0-rpc", "lb0.example")]);
    assert_eq!(member_address(&manual("garage-0", None), &s), None);
}

#[test]
fn a_user_nodes_own_endpoint_publishes_its_rpc_service_and_a_generated_ones_does_not() {
    let c = cluster(3);
    let s = settings(&c);
    let mut own = manual("manual-a", None);
    own.spec.public_endpoint = Some(node_port(Some(30100), &["n.example"]));
    let svc = crate::desired::services::node_rpc(&own, &s).unwrap();
    let spec = spec_of(&svc);
    assert_eq!(spec.type_.as_deref(), Some("NodePort"));
    assert_eq!(spec.ports.as_ref().unwrap()[0].node_port, Some(30100));

    let mut gn = generated(&c, 0, None);
    gn.spec.public_endpoint = Some(lb(true));
    let svc = crate::desired::services::node_rpc(&gn, &s).unwrap();
    assert_eq!(spec_of(&svc).type_.as_deref(), Some("ClusterIP"));
}

#[test]
fn stale_endpoint_services_are_those_the_cluster_controls_and_no_longer_wants() {
    let c = with_endpoint(lb(true));
    let s = settings(&c);
    let wanted = cluster_services(&c, &s, &slots()[..2]).unwrap();
    let owned = |name: &str, uid: &str| -> Service {
        serde_json::from_value(json!({"metadata": {"name": name, "uid": format!("svc-{name}"),
            "ownerReferences": [{"apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
            "name": "garage", "uid": uid, "controller": true}]}}))
        .unwrap()
    };
    let live = [
        owned("garage-0-rpc", &s.uid),
        owned("garage-2-rpc", &s.uid),
        owned("garage-rpc", &s.uid),
        owned("garage-3-rpc", "someone-else"),
        owned("garage-headless", &s.uid),
    ];
    let names: Vec<String> = stale(&live, &s, &wanted)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["garage-2-rpc", "garage-rpc"]);
}

#[test]
fn ingress_is_the_first_address_a_load_balancer_assigned() {
    let svc = |name: &str, ingress: serde_json::Value| -> Service {
        serde_json::from_value(
            json!({"metadata": {"name": name}, "status": {"loadBalancer": {"ingress": ingress}}}),
        )
        .unwrap()
    };
    let map = ingress(&[
        svc("a", json!([{"ip": "203.0.113.1"}, {"ip": "203.0.113.2"}])),
        svc("b", json!([{"hostname": "lb.example"}])),
        svc("c", json!([])),
        serde_json::from_value(json!({"metadata": {"name": "d"}})).unwrap(),
    ]);
    assert_eq!(
        map,
        BTreeMap::from([
            ("a".to_owned(), "203.0.113.1".to_owned()),
            ("b".to_owned(), "lb.example".to_owned())
        ])
    );
}
