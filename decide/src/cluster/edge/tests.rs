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
            Err("spec.connectTo without clusterRef"),
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
    // Only the first answered, with a new identity; the others keep theirs.
    assert_eq!(
        ids(recorded_nodes(
            "edge",
            &previous,
            vec![node("edge-gateway-0", 7)],
            Some(3)
        )),
        [
            pair("edge-gateway-0", 7),
            pair("edge-gateway-1", 2),
            pair("edge-gateway-2", 3)
        ]
    );
    // The set runs two: the third's record goes with its pod.
    assert_eq!(
        ids(recorded_nodes("edge", &previous, vec![], Some(2))),
        [pair("edge-gateway-0", 1), pair("edge-gateway-1", 2)]
    );
    // Nothing known of the set (a blocked pass): every record stays.
    assert_eq!(
        ids(recorded_nodes("edge", &previous, vec![], None)).len(),
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
