//! Table tests of what the pool decision records about members: the identity a new member
//! is pinned to, the HostPath claims on Nodes, and the `rpc-address:` layout tags.

use super::*;

#[test]
fn without_a_record_a_new_member_is_bound_to_the_one_role_tagged_for_its_node() {
    use shared_types::keys::annotation::ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID as PIN;
    let mut w = World::new(&[("n1", Some("local")), ("n2", Some("local"))]);
    w.with_daemonset();
    w.activate("n1", "local");
    w.activate("n2", "local");
    w.pod("p1", DS_UID, "n1", false);
    w.pod("p2", DS_UID, "n2", false);
    let s = w.s();
    let role = |id: &str, node: &str| -> garage_api_types::LayoutRole {
        serde_json::from_value(json!({
            "id": id, "zone": "z", "capacity": 1u64 << 30,
            "tags": [format!("cluster:{}/{}", s.name, s.namespace), "tier:storage",
                     "node-local-pool:local", format!("kubernetes-node:{node}")],
        }))
        .unwrap()
    };
    // n1's role survived in Garage; nothing is known of n2.
    w.committed_roles = vec![role(ID_A, "n1")];
    let plan = w.plan();
    let pin_of = |plan: &PoolPlan, node: &str| {
        plan.create_members
            .iter()
            .find(|m| m.spec.kubernetes_node_name.as_deref() == Some(node))
            .map(|m| m.annotations().get(PIN).cloned())
    };
    assert_eq!(pin_of(&plan, "n1"), Some(Some(ID_A.to_owned())));
    assert_eq!(pin_of(&plan, "n2"), Some(None));
    // Two roles tagged for n1: no member for n1, and the cluster says why.
    w.committed_roles.push(role(ID_B, "n1"));
    let plan = w.plan();
    assert_eq!(pin_of(&plan, "n1"), None);
    assert_eq!(pin_of(&plan, "n2"), Some(None));
    let c = plan.condition.as_ref().unwrap();
    assert_eq!(
        (c.status, c.reason),
        (false, reason::REASON_IDENTITY_COLLISION)
    );
    assert!(c.message.contains("n1"), "{}", c.message);
}

/// The layout tags of the member of `local` on `node`, as the coordinator would stage them.
fn member_tags(w: &World, node: &str) -> Vec<String> {
    let s = w.s();
    let gn = w
        .members
        .iter()
        .find(|m| host_of(m).as_deref() == Some(node))
        .unwrap();
    crate::cluster::members::member(gn, &w.pods, &s, true)
        .unwrap()
        .member
        .role
        .tags
}

#[test]
fn a_pool_template_publishes_each_members_own_rpc_address_last() {
    let mut w = World::new(&[("n1", Some("local")), ("n2", Some("local"))]);
    w.c.spec
        .storage
        .as_mut()
        .unwrap()
        .node_local_pools
        .as_mut()
        .unwrap()[0]
        .network = Some(
        serde_json::from_value(json!({"rpcPublicAddrTemplate": "{nodeName}.s.example.net:3901"}))
            .unwrap(),
    );
    w.member("n1", Some(ID_A), true);
    w.member("n2", Some(ID_B), true);
    let n1 = member_tags(&w, "n1");
    assert_eq!(n1.last().unwrap(), "rpc-address:n1.s.example.net:3901");
    assert!(n1.contains(&"kubernetes-node:n1".to_owned()));
    assert_eq!(
        member_tags(&w, "n2").last().unwrap(),
        "rpc-address:n2.s.example.net:3901"
    );
}

#[test]
fn a_subnet_publishes_the_pod_ip_and_keeps_it_while_the_pod_is_replaced() {
    let mut w = World::new(&[("n1", Some("local"))]);
    w.c.spec.network =
        Some(serde_json::from_value(json!({"rpcPublicAddrSubnet": "10.8.0.0/16"})).unwrap());
    w.member("n1", Some(ID_A), true);
    // No pod and nothing discovered yet: no address to publish.
    assert!(
        !member_tags(&w, "n1")
            .iter()
            .any(|t| t.starts_with("rpc-address:"))
    );
    // The running pod's IP inside the subnet.
    w.pod("p1", DS_UID, "n1", false);
    let p = w.pods.last_mut().unwrap();
    p.status = Some(
        serde_json::from_value(json!({
            "phase": "Running", "podIP": "192.168.0.4",
            "podIPs": [{"ip": "192.168.0.4"}, {"ip": "10.8.3.4"}],
        }))
        .unwrap(),
    );
    assert_eq!(
        member_tags(&w, "n1").last().unwrap(),
        "rpc-address:10.8.3.4:3901"
    );
    // The pod goes: the address last discovered stays published.
    w.pods.clear();
    w.members[0].status.as_mut().unwrap().address = Some("10.8.3.4:3901".into());
    assert_eq!(
        member_tags(&w, "n1").last().unwrap(),
        "rpc-address:10.8.3.4:3901"
    );
    // A bad subnet is refused naming the field.
    w.c.spec.network =
        Some(serde_json::from_value(json!({"rpcPublicAddrSubnet": "10.8.0.0/40"})).unwrap());
    let err = Settings::from_cluster(&w.c).unwrap_err().to_string();
    assert!(err.contains("spec.network.rpcPublicAddrSubnet"), "{err}");
}

#[test]
fn every_node_a_pool_runs_on_is_claimed_with_its_paths_and_then_its_identity() {
    let mut w = World::new(&[("n1", Some("local")), ("n2", Some("local"))]);
    let s = w.s();
    let key = hostpath_claim::key(&s, "local");
    let plan = w.plan();
    // Both Nodes are claimed in the same pass that activates them (the claims are written
    // first).
    let claimed: Vec<&str> = plan.claims.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(claimed, ["n1", "n2"]);
    let claim = hostpath_claim::parse(&plan.claims[0].2).unwrap();
    assert_eq!(claim.host_paths, ["/d/local", "/m/local"]);
    assert_eq!(
        (
            claim.cluster_name.as_str(),
            claim.node_local_pool_name.as_str()
        ),
        ("garage", "local")
    );
    assert!(plan.claims.iter().all(|(_, k, _)| *k == key));
    // Once claimed, nothing more to write until the member is committed: then its node ID.
    for (node, k, v) in plan.claims.clone() {
        w.node_mut(&node)
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(k, v);
    }
    assert!(w.plan().claims.is_empty());
    w.member("n1", Some(ID_A), true);
    let plan = w.plan();
    assert_eq!(plan.claims.len(), 1);
    let claim = hostpath_claim::parse(&plan.claims[0].2).unwrap();
    assert_eq!(claim.garage_node_id.as_deref(), Some(ID_A));
}

#[test]
fn another_pools_claim_on_a_nodes_disks_keeps_this_pool_off_that_node() {
    let mut w = World::new(&[("n1", Some("local")), ("n2", Some("local"))]);
    // A pool of another cluster claimed /d/local/blocks on n1 and is gone.
    let foreign = json!({"version": 1, "clusterNamespace": "other", "clusterName": "old",
        "nodeLocalPoolName": "fast", "hostPaths": ["/d/local/blocks"]});
    w.node_mut("n1")
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(
            "garage.rajsingh.info/gc-0123456789abcdef-node-local-fedcba9876543210-hostpath-claim"
                .into(),
            foreign.to_string(),
        );
    let plan = w.plan();
    let on = |v: &[(String, String)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(on(&plan.activate), ["n2"]);
    assert!(plan.claims.iter().all(|(n, _, _)| n == "n2"));
    let c = plan.condition.as_ref().unwrap();
    assert_eq!(
        (c.status, c.reason),
        (false, reason::REASON_HOST_PATH_CONFLICT)
    );
    assert!(
        c.message.contains("n1") && c.message.contains("other/old"),
        "{}",
        c.message
    );
    // A claim on other paths does not stand in the way.
    w.node_mut("n1")
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(
            "garage.rajsingh.info/gc-0123456789abcdef-node-local-fedcba9876543210-hostpath-claim"
                .into(),
            json!({"version": 1, "clusterNamespace": "other", "clusterName": "old",
            "nodeLocalPoolName": "fast", "hostPaths": ["/d/localother"]})
            .to_string(),
        );
    assert_eq!(on(&w.plan().activate), ["n1", "n2"]);
}
