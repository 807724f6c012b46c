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
