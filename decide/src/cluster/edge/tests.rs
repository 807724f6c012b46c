//! Table tests of the edge gateway's own pass: which storage cluster it joins, the RPC
//! secrets it names, its status, and which of its roles the storage cluster retires.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use shared_types::common::ClusterPhase;
use shared_types::conditions::reason;

use super::*;
use crate::cluster::observed::{Edge, GarageRead, GarageView};
use crate::fixtures::{self, id};
use shared_types::garage_cluster::v1beta2::NodeStatus;

fn edge(connect_to: Value) -> GarageCluster {
    serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2",
        "kind": "GarageCluster",
        "metadata": {"name": "edge", "namespace": "ns", "uid": "uid-e", "generation": 1},
        "spec": {"gateway": {"replicas": 2}, "connectTo": connect_to},
    }))
    .unwrap()
}

#[test]
fn an_edge_joins_the_sibling_it_names_and_nothing_else() {
    let cases: &[(Value, Result<&str, &str>)] = &[
        (json!({"clusterRef": {"name": "garage"}}), Ok("garage")),
        (
            json!({"clusterRef": {"name": "garage", "namespace": "ns"}}),
            Ok("garage"),
        ),
        (
            json!({"adminApiEndpoint": "http://x:3903"}),
            Err("spec.connectTo.clusterRef: absent"),
        ),
        (
            json!({"clusterRef": {"name": "garage", "namespace": "other"}}),
            Err("spec.connectTo.clusterRef"),
        ),
        (
            json!({"clusterRef": {"name": "edge"}}),
            Err("spec.connectTo.clusterRef.name"),
        ),
        (
            json!({"clusterRef": {"name": "garage"}, "adminApiEndpoint": "http://x:3903"}),
            Err("spec.connectTo.adminApiEndpoint"),
        ),
        (
            json!({"clusterRef": {"name": "garage"}, "adminTokenSecretRef": {"name": "t", "key": "k"}}),
            Err("spec.connectTo.adminTokenSecretRef"),
        ),
    ];
    for (connect_to, expected) in cases {
        let got = storage_cluster(&edge(connect_to.clone()));
        match (expected, got) {
            (Ok(name), Ok(got)) => assert_eq!(got, *name, "{connect_to}"),
            (Err(field), Err(e)) => {
                assert!(e.to_string().contains(field), "{connect_to}: {e}")
            }
            (want, got) => panic!("{connect_to}: wanted {want:?}, got {got:?}"),
        }
    }
}

#[test]
fn an_edge_of_another_factor_or_mode_is_refused_naming_the_field() {
    let c = edge(json!({"clusterRef": {"name": "garage"}}));
    let s = Settings::from_edge(&c).unwrap();
    let mut storage = s.clone();
    assert!(mismatch(&s, &storage).is_none());
    storage.replication_factor = 1;
    let e = mismatch(&s, &storage).unwrap().to_string();
    assert!(
        e.contains("spec.replication.factor") && e.contains("(1)"),
        "{e}"
    );
    let mut storage = s.clone();
    storage.consistency_mode = "dangerous";
    let e = mismatch(&s, &storage).unwrap().to_string();
    assert!(e.contains("spec.replication.consistencyMode"), "{e}");
}

#[test]
fn the_rpc_secrets_an_edge_names_are_each_checked_against_the_storage_clusters() {
    let mut c =
        edge(json!({"clusterRef": {"name": "garage"}, "rpcSecretRef": {"name": "b", "key": ""}}));
    c.spec.network =
        Some(serde_json::from_value(json!({"rpcSecretRef": {"name": "a", "key": "k"}})).unwrap());
    let named = named_rpc_secrets(&c);
    let fields: Vec<_> = named
        .iter()
        .map(|(f, s)| (*f, s.name.as_str(), s.key.as_str()))
        .collect();
    assert_eq!(
        fields,
        [
            ("spec.network.rpcSecretRef", "a", "k"),
            ("spec.connectTo.rpcSecretRef", "b", "rpc-secret"),
        ]
    );
    let source = &named[0].1;
    let secret = "ab".repeat(32);
    let other = "cd".repeat(32);
    let upper = secret.to_ascii_uppercase() + "\n";
    let cases: &[(Option<&str>, Option<&str>, Option<&str>)] = &[
        (Some(&secret), Some(&secret), None),
        // The same 32 bytes written another way are the same secret.
        (Some(&upper), Some(&secret), None),
        (
            None,
            Some(&secret),
            Some(reason::REASON_WAITING_FOR_DEPENDENCY),
        ),
        (
            Some(" "),
            Some(&secret),
            Some(reason::REASON_WAITING_FOR_DEPENDENCY),
        ),
        (
            Some(&secret),
            None,
            Some(reason::REASON_WAITING_FOR_DEPENDENCY),
        ),
        (
            Some(&other),
            Some(&secret),
            Some(reason::REASON_VALIDATION_FAILED),
        ),
        (
            Some("short"),
            Some(&secret),
            Some(reason::REASON_VALIDATION_FAILED),
        ),
    ];
    for (named, storage, expected) in cases {
        let got = rpc_disagreement("spec.network.rpcSecretRef", source, *named, *storage);
        assert_eq!(
            got.as_ref().map(|g| g.0),
            *expected,
            "{named:?} vs {storage:?}"
        );
        if let Some((_, message)) = got {
            assert!(
                message.contains("Secret a (key k)") || storage.is_none(),
                "{message}"
            );
            for value in [&secret, &other] {
                assert!(
                    !message.contains(value.as_str()),
                    "a value is echoed: {message}"
                );
            }
        }
    }
}

#[test]
fn an_edges_status_says_running_only_with_every_gateway_ready_and_nothing_blocking() {
    let (resync, short) = (Duration::from_secs(300), Duration::from_secs(2));
    let facts = |wanted, ready, blocked: Option<(&'static str, String)>| Facts {
        wanted,
        ready,
        held: wanted,
        blocked,
        nodes: vec![],
        connected: None,
        degraded: None,
    };
    let cases = [
        (facts(2, 2, None), ClusterPhase::Running, true, resync),
        (facts(2, 1, None), ClusterPhase::Creating, false, short),
        (
            facts(2, 2, Some((reason::REASON_VALIDATION_FAILED, "x".into()))),
            ClusterPhase::Pending,
            false,
            short,
        ),
    ];
    let mut waiting = facts(1, 1, None);
    waiting.held = 3;
    let (_, conditions, _) = status("edge", &waiting, resync, short);
    assert!(
        conditions[0].message.contains("2 scaled away keep running"),
        "{}",
        conditions[0].message
    );
    for (f, phase, ready, requeue) in cases {
        let (status, conditions, after) = status("edge", &f, resync, short);
        assert_eq!(status.phase, Some(phase));
        assert_eq!(fixtures::ready_of(&conditions).0, ready);
        assert_eq!(after, requeue);
        assert_eq!(status.scale_replicas, Some(2));
        assert!(status.scale_selector.unwrap().contains("edge"));
    }
}

fn gateway_role(n: u8, uid: &str) -> Value {
    json!({"id": id(n).as_str(), "zone": "default", "capacity": null,
           "tags": [format!("cluster-uid:{uid}"), "tier:gateway"]})
}

fn edge_pod(name: &str) -> Pod {
    let mut p = fixtures::pod(name, 9, "set");
    p.metadata.name = Some(name.into());
    p
}

fn recorded(mut c: GarageCluster, nodes: &[(&str, u8)]) -> GarageCluster {
    let nodes = nodes
        .iter()
        .map(|(pod, n)| json!({"podName": pod, "nodeId": id(*n).as_str()}))
        .collect::<Vec<_>>();
    c.status = Some(serde_json::from_value(json!({"nodes": nodes})).unwrap());
    c
}

fn read(roles: &[Value], staged: &[Value], settled: bool) -> GarageRead {
    let history = if settled {
        fixtures::settled(4)
    } else {
        fixtures::unsettled(4)
    };
    GarageRead {
        status: fixtures::status(4, &[]),
        layout: fixtures::layout(4, roles, staged),
        history,
        health: None,
        every_view_healthy: true,
        build: None,
        worker_variables: Default::default(),
    }
}

fn removed(change: Option<crate::cluster::decision::LayoutChange>) -> Vec<String> {
    change
        .map(|c| {
            c.stage
                .iter()
                .map(|r| match r {
                    garage_api_types::RoleChange::Remove { id, .. } => id.to_string(),
                    other => panic!("an edge's role is only ever removed: {other:?}"),
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn only_roles_no_running_member_holds_are_retired_and_only_when_the_layout_is_quiet() {
    let e = edge(json!({"clusterRef": {"name": "garage"}}));
    let roles = [
        gateway_role(1, "uid-e"),
        gateway_role(2, "uid-e"),
        gateway_role(3, "other"),
    ];
    let with = |cluster: GarageCluster, pods: Vec<Pod>| {
        let mut o = fixtures::observed_cluster(e.clone(), GarageView::Unavailable("x".into()));
        o.edges = vec![Edge { cluster, pods }];
        o
    };
    let one = || vec![edge_pod("edge-gateway-0")];
    // Every running pod recorded: the role none of them proved goes, another edge's stays.
    let o = with(recorded(e.clone(), &[("edge-gateway-0", 1)]), one());
    assert_eq!(
        removed(retire(&o, Some(&read(&roles, &[], true)), false)),
        [id(2).to_string()]
    );
    // No member running: nothing proves which identities are current.
    let o = with(recorded(e.clone(), &[]), vec![]);
    assert!(retire(&o, Some(&read(&roles, &[], true)), false).is_none());
    // A running pod not recorded yet: nothing is known to be stale.
    let o = with(recorded(e.clone(), &[]), one());
    assert!(retire(&o, Some(&read(&roles, &[], true)), false).is_none());
    // A deleting edge loses every role of its own.
    let mut gone = recorded(e.clone(), &[("edge-gateway-0", 1)]);
    gone.metadata.deletion_timestamp = fixtures::deleting();
    let o = with(gone, one());
    assert_eq!(
        removed(retire(&o, Some(&read(&roles, &[], true)), false)),
        [id(1).to_string(), id(2).to_string()]
    );
    // Never beside other layout work, staged changes or an unsettled history.
    assert!(retire(&o, Some(&read(&roles, &[], true)), true).is_none());
    assert!(retire(&o, Some(&read(&roles, &[], false)), false).is_none());
    let staged = [json!({"id": id(7).as_str(), "remove": true})];
    assert!(retire(&o, Some(&read(&roles, &staged, true)), false).is_none());
    assert!(retire(&o, None, false).is_none());
    // A storage role is never an edge's, whatever its tags.
    let storage_role = json!({"id": id(5).as_str(), "zone": "default", "capacity": 100,
        "tags": ["cluster-uid:uid-e", "tier:gateway"]});
    let o = with(gone_edge(&e), vec![]);
    assert!(removed(retire(&o, Some(&read(&[storage_role], &[], true)), false)).is_empty());
}

fn gone_edge(e: &GarageCluster) -> GarageCluster {
    let mut c = e.clone();
    c.metadata.deletion_timestamp = fixtures::deleting();
    c
}

#[test]
fn an_edge_holds_roles_while_one_carries_its_uid() {
    let layout = fixtures::layout(2, &[gateway_role(1, "uid-e")], &[]);
    assert!(holds_roles(&layout.roles, "uid-e"));
    assert!(!holds_roles(&layout.roles, "uid-x"));
}

fn node(pod: &str, n: u8) -> shared_types::garage_cluster::v1beta2::NodeStatus {
    serde_json::from_value(json!({"podName": pod, "nodeId": id(n).as_str()})).unwrap()
}

#[test]
fn a_member_scaled_away_stops_only_once_its_role_is_gone_and_settled() {
    let pods: Vec<String> = (0..3).map(|i| format!("edge-gateway-{i}")).collect();
    let recorded = [
        node("edge-gateway-0", 1),
        node("edge-gateway-1", 2),
        node("edge-gateway-2", 3),
    ];
    let layout = |ns: &[u8]| {
        fixtures::layout(
            5,
            &ns.iter()
                .map(|n| gateway_role(*n, "uid-e"))
                .collect::<Vec<_>>(),
            &[],
        )
    };
    let all = layout(&[1, 2, 3]);
    let first = layout(&[1]);
    let second_left = layout(&[1, 3]);
    type Layout<'a> = Option<(&'a [garage_api_types::LayoutRole], bool)>;
    let cases: &[(u32, &[NodeStatus], Layout<'_>, u32)] = &[
        // Nothing scaled away.
        (3, &recorded, Some((&all.roles, true)), 3),
        // Both roles still there: both pods run.
        (1, &recorded, Some((&all.roles, true)), 3),
        // The last ordinal's role is retired but the second's is not: the set keeps both.
        (1, &recorded, Some((&second_left.roles, true)), 3),
        // Both retired, history still moving: nobody stops yet.
        (1, &recorded, Some((&first.roles, false)), 3),
        // Both retired and settled: the set shrinks.
        (1, &recorded, Some((&first.roles, true)), 1),
        // No layout read: nobody stops.
        (1, &recorded, None, 3),
        // A pod with no recorded identity proves nothing: it keeps running.
        (1, &recorded[..2], Some((&first.roles, true)), 3),
        // Scaling up is never held back.
        (4, &recorded, None, 4),
    ];
    for (wanted, recorded, layout, expected) in cases {
        assert_eq!(
            held_replicas("edge", *wanted, &pods, recorded, *layout),
            *expected,
            "wanted {wanted}, recorded {}",
            recorded.len()
        );
    }
    assert_eq!(ordinal("edge", "edge-gateway-12"), Some(12));
    assert_eq!(ordinal("edge", "edge-other-gateway-1"), None);
    assert_eq!(ordinal("edge", "edge-gateway-x"), None);
}

#[test]
fn a_member_that_did_not_answer_keeps_its_recorded_identity_while_its_pod_may_run() {
    let previous = [
        node("edge-gateway-0", 1),
        node("edge-gateway-1", 2),
        node("edge-gateway-2", 3),
    ];
    let ids = |v: Vec<NodeStatus>| -> Vec<(String, String)> {
        v.into_iter()
            .map(|n| (n.pod_name.unwrap(), n.node_id.unwrap()))
            .collect()
    };
    let pair = |pod: &str, n: u8| (pod.to_owned(), id(n).to_string());
    let pods = |n: usize| -> Vec<String> { (0..n).map(|i| format!("edge-gateway-{i}")).collect() };
    let role = |n: u8| -> garage_api_types::LayoutRole {
        serde_json::from_value(gateway_role(n, "uid-e")).unwrap()
    };
    let none: Vec<garage_api_types::LayoutRole> = Vec::new();
    // Only the first answered, with a new identity; the others keep theirs.
    assert_eq!(
        ids(recorded_nodes(
            &previous,
            vec![node("edge-gateway-0", 7)],
            &pods(3),
            Some(&none)
        )),
        [
            pair("edge-gateway-0", 7),
            pair("edge-gateway-1", 2),
            pair("edge-gateway-2", 3)
        ]
    );
    // The third pod is gone and its role is out of the layout: its record goes with it.
    assert_eq!(
        ids(recorded_nodes(&previous, vec![], &pods(2), Some(&none))),
        [pair("edge-gateway-0", 1), pair("edge-gateway-1", 2)]
    );
    // A pod deleted to be made again (a rolling update, an eviction) while its role is in the
    // layout keeps its record: its role is not stale, and it is not removed while it is away.
    let roles = [role(1), role(2), role(3)];
    let away = recorded_nodes(&previous, vec![], &pods(1), Some(&roles));
    assert_eq!(ids(away.clone()).len(), 3);
    // Nor without a readable layout.
    assert_eq!(ids(recorded_nodes(&previous, vec![], &[], None)).len(), 3);
    // A member scaled away keeps its record while its pod stops, so that the set is not
    // grown back for a member it no longer knows.
    let recorded = recorded_nodes(&previous, vec![], &pods(3), Some(&none));
    assert_eq!(
        held_replicas("edge", 2, &pods(3), &recorded, Some((&none, true))),
        2
    );
    // A member scaled away whose pod is away for a moment, its role still held, is kept: the
    // set is not shrunk before its role is out of a settled layout.
    assert_eq!(
        held_replicas("edge", 2, &pods(2), &away, Some((&roles, true))),
        3
    );
}

#[test]
fn the_role_of_a_member_scaled_away_is_retired_while_its_pod_still_runs() {
    let mut e = edge(json!({"clusterRef": {"name": "garage"}}));
    e.spec.gateway.as_mut().unwrap().replicas = Some(1);
    let e = recorded(e, &[("edge-gateway-0", 1), ("edge-gateway-1", 2)]);
    let mut o = fixtures::observed_cluster(e.clone(), GarageView::Unavailable("x".into()));
    o.edges = vec![Edge {
        cluster: e,
        pods: vec![edge_pod("edge-gateway-0"), edge_pod("edge-gateway-1")],
    }];
    let roles = [gateway_role(1, "uid-e"), gateway_role(2, "uid-e")];
    assert_eq!(
        removed(retire(&o, Some(&read(&roles, &[], true)), false)),
        [id(2).to_string()]
    );
    // Settings that cannot be read scale nobody away.
    let mut broken = o.edges[0].cluster.clone();
    broken.spec.gateway.as_mut().unwrap().replicas = Some(-1);
    let mut unreadable =
        fixtures::observed_cluster(broken.clone(), GarageView::Unavailable("x".into()));
    unreadable.edges = vec![Edge {
        cluster: broken,
        pods: vec![edge_pod("edge-gateway-0"), edge_pod("edge-gateway-1")],
    }];
    assert!(retire(&unreadable, Some(&read(&roles, &[], true)), false).is_none());
    // The member scaled away wants no role back meanwhile.
    let views = crate::cluster::members::edge_members(&o.edges[0]);
    let names: Vec<_> = views.iter().map(|v| v.member.name.as_str()).collect();
    assert_eq!(names, ["edge-gateway-0"]);
}

#[test]
fn an_edge_without_a_cluster_ref_joins_the_admin_endpoint_it_names_with_the_rpc_secret_it_names() {
    let token = json!({"name": "t", "key": "admin-token"});
    let rpc = json!({"name": "r", "key": "rpc-secret"});
    /// The URL and RPC Secret joined, or what the refusal names.
    type Joined = Result<(&'static str, &'static str), &'static str>;
    let cases: &[(Value, Joined)] = &[
        (
            json!({"adminApiEndpoint": "http://x:3903/", "adminTokenSecretRef": token, "rpcSecretRef": rpc}),
            Ok(("http://x:3903", "r")),
        ),
        (
            json!({"clusterRef": {"name": "garage"}}),
            Err("joins the cluster"),
        ),
        (
            json!({"adminApiEndpoint": "http://x:3903", "rpcSecretRef": rpc}),
            Err("spec.connectTo.adminTokenSecretRef"),
        ),
        (
            json!({"adminApiEndpoint": "http://x:3903", "adminTokenSecretRef": token}),
            Err("spec.connectTo.rpcSecretRef"),
        ),
        (
            json!({"adminApiEndpoint": "ftp://x", "adminTokenSecretRef": token, "rpcSecretRef": rpc}),
            Err("spec.connectTo.adminApiEndpoint"),
        ),
        (
            json!({"rpcSecretRef": rpc}),
            Err("spec.connectTo: an edge gateway needs"),
        ),
    ];
    for (connect_to, expected) in cases {
        let got = joins(&edge(connect_to.clone()));
        match (expected, got) {
            (Ok((url, secret)), Ok(Joins::Remote { url: u, token, rpc })) => {
                assert_eq!(
                    (u.as_str(), rpc.name.as_str()),
                    (*url, *secret),
                    "{connect_to}"
                );
                assert_eq!(token.name, "t");
            }
            (Err("joins the cluster"), Ok(Joins::Cluster(name))) => assert_eq!(name, "garage"),
            (Err(field), Err(e)) => {
                assert!(e.to_string().contains(field), "{connect_to}: {e}")
            }
            (want, got) => panic!("{connect_to}: wanted {want:?}, got {got:?}"),
        }
    }
    // The RPC secret of spec.network comes first, as for a sibling's edge.
    let mut c = edge(
        json!({"adminApiEndpoint": "http://x:3903", "adminTokenSecretRef": token, "rpcSecretRef": rpc}),
    );
    c.spec.network =
        serde_json::from_value(json!({"rpcSecretRef": {"name": "n", "key": "k"}})).unwrap();
    let Ok(Joins::Remote { rpc, .. }) = joins(&c) else {
        panic!("a remote edge")
    };
    assert_eq!((rpc.name.as_str(), rpc.key.as_str()), ("n", "k"));
}

fn assigned(change: &crate::cluster::decision::LayoutChange) -> Vec<(String, Vec<String>)> {
    change
        .stage
        .iter()
        .filter_map(|r| match r {
            garage_api_types::RoleChange::Assign {
                id, capacity, tags, ..
            } => {
                assert!(capacity.is_none(), "an edge's role stores nothing");
                Some((id.to_string(), tags.clone()))
            }
            garage_api_types::RoleChange::Remove { .. } => None,
        })
        .collect()
}

#[test]
fn a_remote_edge_writes_its_members_roles_and_retires_its_own_stale_ones_once_settled() {
    let e = edge(json!({"adminApiEndpoint": "http://x:3903"}));
    let running = Edge {
        cluster: recorded(e.clone(), &[("edge-gateway-0", 1)]),
        pods: vec![edge_pod("edge-gateway-0"), edge_pod("edge-gateway-1")],
    };
    // A recorded member without its role gets a capacity-less one; the pod not recorded yet
    // waits for its identity.
    let empty = fixtures::layout(4, &[], &[]);
    let change = remote_change(&running, &empty, true).expect("the member's role");
    assert_eq!(change.version, 5);
    let wanted = assigned(&change);
    assert_eq!(wanted.len(), 1);
    assert_eq!(wanted[0].0, id(1).to_string());
    assert!(wanted[0].1.contains(&"cluster-uid:uid-e".to_owned()));
    assert!(wanted[0].1.contains(&"tier:gateway".to_owned()));
    // Once it holds exactly that role there is nothing to write.
    let role =
        json!({"id": id(1).as_str(), "zone": "default", "capacity": null, "tags": wanted[0].1});
    let held = fixtures::layout(5, std::slice::from_ref(&role), &[]);
    assert!(remote_change(&running, &held, true).is_none());
    // Another zone is written again.
    let mut moved = role.clone();
    moved["zone"] = json!("elsewhere");
    let elsewhere = fixtures::layout(5, &[moved], &[]);
    assert_eq!(
        assigned(&remote_change(&running, &elsewhere, true).unwrap()).len(),
        1
    );
    // Nothing beside staged changes: another writer is at work.
    let staged = [json!({"id": id(7).as_str(), "remove": true})];
    assert!(remote_change(&running, &fixtures::layout(4, &[], &staged), true).is_none());
    // A stale role of its own goes once the history is settled; another edge's stays.
    let all_recorded = Edge {
        cluster: recorded(e.clone(), &[("edge-gateway-0", 1), ("edge-gateway-1", 3)]),
        pods: running.pods.clone(),
    };
    let both = assigned(&remote_change(&all_recorded, &empty, true).unwrap());
    let mut with_stale = vec![
        role.clone(),
        gateway_role(2, "uid-e"),
        gateway_role(6, "other"),
    ];
    let mut third = role.clone();
    third["id"] = json!(id(3).as_str());
    third["tags"] = json!(both[1].1);
    with_stale.push(third);
    let layout = fixtures::layout(5, &with_stale, &[]);
    assert_eq!(
        removed_only(&remote_change(&all_recorded, &layout, true).unwrap()),
        [id(2).to_string()]
    );
    assert!(remote_change(&all_recorded, &layout, false).is_none());
    // Scaled to one: the second member's role goes while its pod still runs.
    let mut one = all_recorded.clone();
    one.cluster.spec.gateway.as_mut().unwrap().replicas = Some(1);
    let layout = fixtures::layout(5, &[role.clone(), with_stale[3].clone()], &[]);
    assert_eq!(
        removed_only(&remote_change(&one, &layout, true).unwrap()),
        [id(3).to_string()]
    );
    // Deleting: every role of its own goes, and none is written.
    let mut gone = all_recorded.clone();
    gone.cluster = gone_edge(&gone.cluster);
    let change = remote_change(&gone, &layout, true).unwrap();
    assert!(assigned(&change).is_empty());
    assert_eq!(
        removed_only(&change),
        [id(1).to_string(), id(3).to_string()]
    );
}

fn removed_only(change: &crate::cluster::decision::LayoutChange) -> Vec<String> {
    change
        .stage
        .iter()
        .filter_map(|r| match r {
            garage_api_types::RoleChange::Remove { id, .. } => Some(id.to_string()),
            garage_api_types::RoleChange::Assign { .. } => None,
        })
        .collect()
}

#[test]
fn gateway_connected_says_which_members_the_storage_cluster_does_not_see() {
    let nodes = [node("edge-gateway-0", 1), node("edge-gateway-1", 2)];
    assert!(connection(&[], Some(&fixtures::status(4, &[]))).is_none());
    let cases = [
        (
            vec![id(1), id(2), id(5)],
            true,
            reason::REASON_GATEWAY_CONNECTED,
            "",
        ),
        (
            vec![id(1)],
            false,
            reason::REASON_PARTIALLY_CONNECTED,
            "edge-gateway-1",
        ),
        (
            vec![id(5)],
            false,
            reason::REASON_NODES_OFFLINE,
            "edge-gateway-0, edge-gateway-1",
        ),
    ];
    for (up, status, why, names) in cases {
        let up: Vec<&garage_api_types::NodeId> = up.iter().collect();
        let c = connection(&nodes, Some(&fixtures::status(4, &up))).unwrap();
        assert_eq!((c.status, c.reason), (status, why), "{}", c.message);
        assert!(c.message.contains(names), "{}", c.message);
    }
    let unknown = connection(&nodes, None).unwrap();
    assert_eq!(
        (unknown.status, unknown.reason),
        (false, reason::REASON_ADMIN_UNREACHABLE)
    );
    // It is published beside Ready.
    let f = Facts {
        wanted: 2,
        ready: 2,
        held: 2,
        blocked: None,
        nodes: nodes.to_vec(),
        connected: Some(unknown),
        degraded: None,
    };
    let (resync, short) = (Duration::from_secs(300), Duration::from_secs(2));
    let (_, conditions, after) = status("edge", &f, resync, short);
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == cluster::CONDITION_GATEWAY_CONNECTED)
    );
    // Ready, but not seen connected: looked at again soon.
    assert_eq!(after, short);
    let seen = Facts {
        connected: connection(&nodes, Some(&fixtures::status(4, &[&id(1), &id(2)]))),
        ..f
    };
    assert_eq!(status("edge", &seen, resync, short).2, resync);
}

#[test]
fn a_remote_edge_never_rewrites_a_role_it_did_not_write() {
    let e = edge(json!({"adminApiEndpoint": "http://x:3903"}));
    let running = Edge {
        cluster: recorded(e.clone(), &[("edge-gateway-0", 1)]),
        pods: vec![edge_pod("edge-gateway-0")],
    };
    let storage =
        json!({"id": id(1).as_str(), "zone": "z", "capacity": 100, "tags": ["cluster-uid:uid-e"]});
    let other = gateway_role(1, "other");
    for role in [storage, other] {
        let layout = fixtures::layout(4, std::slice::from_ref(&role), &[]);
        assert!(remote_change(&running, &layout, true).is_none(), "{role}");
    }
}

#[test]
fn gateway_layout_degraded_names_the_members_without_a_role_and_staged_changes() {
    let nodes = [node("edge-gateway-0", 1), node("edge-gateway-1", 2)];
    let held = [gateway_role(1, "uid-e"), gateway_role(2, "uid-e")];
    let layout = fixtures::layout(4, &held, &[]);
    let c = layout_degraded("edge", 2, &nodes, Some(&layout)).unwrap();
    assert_eq!(
        (c.status, c.reason),
        (false, reason::REASON_GATEWAY_ROLES_PRESENT)
    );
    let layout = fixtures::layout(4, &held[..1], &[]);
    let c = layout_degraded("edge", 2, &nodes, Some(&layout)).unwrap();
    assert_eq!(
        (c.status, c.reason),
        (true, reason::REASON_GATEWAY_ROLE_MISSING)
    );
    assert!(
        c.message.contains("edge-gateway-1") && !c.message.contains("staged"),
        "{}",
        c.message
    );
    let staged = [json!({"id": id(7).as_str(), "remove": true})];
    let layout = fixtures::layout(4, &held[..1], &staged);
    let c = layout_degraded("edge", 2, &nodes, Some(&layout)).unwrap();
    assert!(c.message.contains("staged"), "{}", c.message);
    // A member scaled away is not missing its role; nothing read, nothing judged.
    let layout = fixtures::layout(4, &held[..1], &[]);
    let c = layout_degraded("edge", 1, &nodes, Some(&layout)).unwrap();
    assert!(!c.status);
    assert!(layout_degraded("edge", 2, &nodes, None).is_none());
    assert!(layout_degraded("edge", 2, &[], Some(&layout)).is_none());
}
