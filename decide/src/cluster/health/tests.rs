use super::*;
use serde_json::json;

fn id(c: char) -> String {
    c.to_string().repeat(64)
}

/// One node: id character, up, seconds since last seen, role (with its capacity), draining.
type Node = (char, bool, Option<u64>, Option<Option<u64>>, bool);

/// A cluster status with one entry per node.
fn status(nodes: &[Node]) -> ClusterStatus {
    let nodes: Vec<_> = nodes
        .iter()
        .map(|(c, up, seen, role, draining)| {
            json!({
                "id": id(*c),
                "garageVersion": if *up { Some(format!("v2.5.{c}")) } else { None },
                "isUp": up,
                "lastSeenSecsAgo": seen,
                "role": role.map(|cap| json!({"zone": "z", "tags": [], "capacity": cap})),
                "draining": draining,
            })
        })
        .collect();
    serde_json::from_value(json!({"layoutVersion": 3, "nodes": nodes})).unwrap()
}

fn health(partitions_quorum: u64) -> ClusterHealth {
    serde_json::from_value(json!({
        "status": "degraded", "knownNodes": 3, "connectedNodes": 2, "storageNodes": 3,
        "storageNodesUp": 2, "partitions": 256, "partitionsQuorum": partitions_quorum,
        "partitionsAllOk": 0,
    }))
    .unwrap()
}

#[test]
fn only_storage_peers_down_past_the_threshold_are_unreachable() {
    let st = status(&[
        ('a', true, None, Some(Some(10)), false),
        // down 9 min 59 s: a pod being replaced
        ('b', false, Some(599), Some(Some(10)), false),
        // down 12 min 20 s, holds a storage role
        ('c', false, Some(740), Some(Some(10)), false),
        // a gateway role, a roleless stray: not storage
        ('d', false, Some(4000), Some(None), false),
        ('e', false, Some(4000), None, false),
        // draining a role of an older version, down 1 h 5 min
        ('f', false, Some(3900), None, true),
        // storage role, never seen since the answering node started
        ('9', false, None, Some(Some(10)), false),
    ]);
    assert_eq!(
        unreachable_peers(&st),
        [
            "cccccccccccccccc (down 12m0s)",
            "ffffffffffffffff (down 1h5m0s)",
            "9999999999999999 (never seen)",
        ]
    );
}

#[test]
fn quorum_and_peer_conditions_follow_garage() {
    let kinds = |h: Option<&ClusterHealth>, peers: &[String]| -> Vec<(&str, bool, &str)> {
        conditions(h, peers, &[])
            .into_iter()
            .map(|d| (d.type_, d.status, d.reason))
            .collect()
    };
    assert!(
        kinds(None, &[]).is_empty(),
        "no health read: nothing changes"
    );
    assert_eq!(
        kinds(Some(&health(256)), &[]),
        [
            ("QuorumAtRisk", false, "AllPartitionsQuorate"),
            ("PeerUnreachable", false, "AllReachable"),
        ]
    );
    let down = ["cccccccccccccccc (down 12m0s)".to_owned()];
    assert_eq!(
        kinds(Some(&health(200)), &down),
        [
            ("QuorumAtRisk", true, "PartitionsBelowQuorum"),
            ("PeerUnreachable", true, "SustainedUnreachable"),
        ]
    );
    let messages: Vec<String> = conditions(Some(&health(200)), &down, &[])
        .into_iter()
        .map(|d| d.message)
        .collect();
    assert!(
        messages[0].starts_with("56/256 partitions lack a write quorum (2/3"),
        "{messages:?}"
    );
    assert!(
        messages[1].contains("cccccccccccccccc (down 12m0s)"),
        "{messages:?}"
    );
}

#[test]
fn the_cluster_id_stays_while_its_node_is_known() {
    let st = status(&[
        ('c', true, None, None, false),
        ('b', true, None, None, false),
    ]);
    assert_eq!(cluster_id(None, &st), Some(id('b')));
    assert_eq!(cluster_id(Some(&id('c')), &st), Some(id('c')));
    assert_eq!(
        cluster_id(Some(&id('a')), &st),
        Some(id('b')),
        "a node gone"
    );
    assert_eq!(cluster_id(Some(&id('a')), &status(&[])), None);
}

#[test]
fn the_build_is_asked_for_only_when_unknown_or_no_longer_running() {
    let up = status(&[
        ('1', false, Some(5), None, false),
        ('2', true, None, None, false),
    ]);
    let recorded = |version: &str, rust: Option<&str>| BuildInfo {
        version: Some(version.into()),
        rust_version: rust.map(Into::into),
        features: None,
    };
    assert!(build_unknown(None, &up));
    assert!(
        build_unknown(Some(&recorded("v2.5.2", None)), &up),
        "incomplete"
    );
    assert!(!build_unknown(Some(&recorded("v2.5.2", Some("1.9"))), &up));
    assert!(
        build_unknown(Some(&recorded("v2.4.0", Some("1.9"))), &up),
        "upgraded"
    );
    let none_up = status(&[('1', false, Some(5), None, false)]);
    assert!(!build_unknown(
        Some(&recorded("v2.4.0", Some("1.9"))),
        &none_up
    ));
    let info: NodeInfo = serde_json::from_value(json!({
        "nodeId": id('2'), "garageVersion": "v2.5.2", "garageFeatures": ["k2v", "lmdb"],
        "rustVersion": "1.91.0", "dbEngine": "LMDB",
    }))
    .unwrap();
    let built = build_info(Some(&recorded("v2.4.0", Some("1.9"))), Some(&info)).unwrap();
    assert_eq!(built.version.as_deref(), Some("v2.5.2"));
    assert_eq!(built.rust_version.as_deref(), Some("1.91.0"));
    assert_eq!(built.features, Some(vec!["k2v".into(), "lmdb".into()]));
    let kept = recorded("v2.5.2", Some("1.9"));
    assert_eq!(build_info(Some(&kept), None), Some(kept));
}

#[test]
fn endpoints_name_the_services_and_ports_in_use() {
    use shared_types::garage_cluster::common::{K2vApiConfig, WebApiConfig};
    let mut c = crate::desired::test_support::cluster(3);
    let s = Settings::from_cluster(&c).unwrap();
    let e = endpoints(&s);
    assert_eq!(e.s3.as_deref(), Some("garage.ns.svc.cluster.local:3900"));
    assert_eq!(e.web.as_deref(), Some("garage.ns.svc.cluster.local:3902"));
    assert_eq!(
        e.admin.as_deref(),
        Some("garage-admin.ns.svc.cluster.local:3903")
    );
    assert_eq!(e.metrics, e.admin);
    assert_eq!(
        e.rpc.as_deref(),
        Some("garage-headless.ns.svc.cluster.local:3901")
    );
    assert_eq!(e.k2v, None);
    c.spec.k2v_api = Some(K2vApiConfig::default());
    c.spec.web_api = Some(WebApiConfig {
        enabled: Some(false),
        ..Default::default()
    });
    let e = endpoints(&Settings::from_cluster(&c).unwrap());
    assert_eq!(e.k2v.as_deref(), Some("garage.ns.svc.cluster.local:3904"));
    assert_eq!(e.web, None);
}

#[test]
fn without_a_reading_the_published_health_conditions_are_stated_again_unchanged() {
    let published: Vec<Condition> = crate::conditions::merge(
        None,
        &conditions(Some(&health(200)), &["x (never seen)".to_owned()], &[]),
        &[],
        Some(1),
    );
    let again = conditions(None, &[], &published);
    assert_eq!(
        again,
        conditions(Some(&health(200)), &["x (never seen)".to_owned()], &[])
    );
}
