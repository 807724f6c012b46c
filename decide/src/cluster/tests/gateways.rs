//! Table tests of the GarageCluster decision for gateways: user-written gateway GarageNodes,
//! a gateway running an unrecorded identity, and the generated gateway tier.

use super::*;

#[test]
fn a_user_gateway_joins_with_a_capacity_less_role_outside_the_storage_budget() {
    let mut o = converged();
    let mut gw = manual("gw", Some(id(8)));
    gw.spec.gateway = Some(true);
    gw.spec.capacity = None;
    o.user_nodes.push(gw);
    let mut p = pod("gw", 40, "sts-gw");
    p.metadata.labels = Some(crate::desired::labels::gateway_pod_labels("garage", "gw"));
    o.pods.push(p);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let change = d.layout.expect("the gateway is added");
    assert!(
        matches!(&change.stage[..], [RoleChange::Assign { id: i, capacity: None, tags, .. }]
            if *i == id(8) && tags.contains(&"tier:gateway".to_owned())),
        "{:?}",
        change.stage
    );
    // Three storage pods: one may go; the gateway is not counted.
    let min = d.pdb.and_then(|p| p.spec).and_then(|s| s.min_available);
    assert_eq!(
        min,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(2))
    );
    assert!(d.gateway_pdb.is_none(), "no gateway tier declared");
    let gw_status = d
        .status
        .nodes
        .unwrap()
        .into_iter()
        .find(|n| n.pod_name.as_deref() == Some("gw-0"))
        .unwrap();
    assert_eq!((gw_status.gateway, gw_status.capacity), (Some(true), None));
}

#[test]
fn a_gateway_running_an_unrecorded_identity_is_asked_to_dial_its_peers() {
    let mut o = converged();
    let mut gw = manual("gw", Some(id(8)));
    gw.spec.gateway = Some(true);
    gw.spec.capacity = None;
    // Its pod reported another identity: the node controller dropped the proof.
    gw.status.as_mut().unwrap().observed_pod_uid = None;
    o.user_nodes.push(gw);
    let mut p = pod("gw", 40, "sts-gw");
    p.metadata.labels = Some(crate::desired::labels::gateway_pod_labels("garage", "gw"));
    o.pods.push(p);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let (host, peers) = d
        .rejoin
        .iter()
        .find(|(h, _)| h == "198.18.0.40")
        .expect("the gateway dials out");
    assert_eq!(host, "198.18.0.40");
    assert_eq!(peers.len(), 3, "every storage member: {peers:?}");
    assert!(
        d.reconnect.iter().all(|r| !r.contains("198.18.0.40")),
        "nobody dials an identity the operator does not know"
    );
}

#[test]
fn a_gateway_tier_adds_its_service_budget_and_generated_gateways() {
    let mut o = converged();
    let mut c = (*o.cluster).clone();
    c.spec.gateway = Some(shared_types::garage_cluster::v1beta2::GatewaySpec {
        replicas: Some(2),
        ..Default::default()
    });
    o.cluster = std::sync::Arc::new(c);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let created: Vec<String> = d.create_nodes.iter().map(|n| n.name_any()).collect();
    assert_eq!(created, ["garage-gateway-0", "garage-gateway-1"]);
    assert!(d.services.iter().any(|v| v.name_any() == "garage-gateway"));
    let pdb = d.gateway_pdb.expect("a gateway budget");
    assert_eq!(pdb.metadata.name.as_deref(), Some("garage-gateway"));
    assert_eq!(d.status.gateway_replicas, Some(2));
    assert_eq!(d.status.gateway_ready_replicas, Some(0));
    assert_eq!(d.status.gateway_nodes_not_in_layout, Some(vec![]));
    // Made, but without an identity in the layout yet: reported.
    for n in d.create_nodes {
        let ordinal = crate::desired::nodes::gateway_ordinal("garage", &n.name_any()).unwrap();
        o.gateways.insert(ordinal, n);
    }
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(
        d.status.gateway_nodes_not_in_layout,
        Some(vec![
            "garage-gateway-0".to_owned(),
            "garage-gateway-1".to_owned()
        ])
    );
    let degraded = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_GATEWAY_LAYOUT_DEGRADED)
        .unwrap();
    assert!(degraded.status);
    assert_eq!(degraded.reason, reason::REASON_GATEWAY_ROLE_MISSING);
}

/// An edge gateway `edge` connected to the cluster, whose one running pod recorded `id(9)`.
fn connected_edge(deleting: bool) -> crate::cluster::observed::Edge {
    let mut e: GarageCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "garage.rajsingh.info/v1beta2",
        "kind": "GarageCluster",
        "metadata": {"name": "edge", "namespace": "ns", "uid": "uid-edge", "generation": 1},
        "spec": {"gateway": {"replicas": 1}, "connectTo": {"clusterRef": {"name": "garage"}}},
        "status": {"nodes": [{"podName": "edge-gateway-0", "nodeId": id(9).as_str()}]},
    }))
    .unwrap();
    if deleting {
        e.metadata.deletion_timestamp = crate::fixtures::deleting();
    }
    let mut p = pod("edge-gateway", 50, "sts-edge");
    p.metadata.name = Some("edge-gateway-0".into());
    p.metadata.labels = Some(crate::desired::edge::pod_labels("edge"));
    crate::cluster::observed::Edge {
        cluster: e,
        pods: vec![p],
    }
}

#[test]
fn a_connected_edges_member_gets_a_role_and_loses_it_when_the_edge_is_deleted() {
    let mut o = converged();
    o.edges = vec![connected_edge(false)];
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let change = d.layout.expect("the edge's member is added");
    assert!(
        matches!(&change.stage[..], [RoleChange::Assign { id: i, capacity: None, tags, .. }]
            if *i == id(9) && tags.contains(&"cluster-uid:uid-edge".to_owned())),
        "{:?}",
        change.stage
    );
    assert!(d.remove_tombstones.is_none());
    // Its role is in the layout; the edge is deleted while its pod still runs.
    let mut o = converged();
    o.edges = vec![connected_edge(true)];
    let mut roles: Vec<_> = (0..3u8)
        .map(|n| auto_role(&format!("garage-storage-{n}"), &id(n)))
        .collect();
    roles.push(
        serde_json::json!({"id": id(9).as_str(), "zone": "default", "capacity": null,
        "tags": ["cluster-uid:uid-edge", "tier:gateway"]}),
    );
    let ids = [id(0), id(1), id(2), id(9)];
    let up: Vec<&NodeId> = ids.iter().collect();
    o.garage = read(layout(1, &roles, &[]), &up, true);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.layout.is_none(), "nothing else is staged: {:?}", d.layout);
    let retired = d
        .remove_tombstones
        .expect("the deleting edge's role is retired");
    assert!(
        matches!(&retired.stage[..], [RoleChange::Remove { id: i, .. }] if *i == id(9)),
        "{:?}",
        retired.stage
    );
}
