//! One test per rule of the Garage pods' NetworkPolicy.

use super::*;
use crate::desired::test_support::cluster;
use shared_types::garage_cluster::common::{
    ConnectToConfig, K2vApiConfig, NetworkConfig, WebApiConfig,
};
use shared_types::garage_cluster::v1beta2::RemoteClusterConfig;
use shared_types::garage_node::{ExternalNodeConfig, GarageNodeSpec};
use shared_types::keys::annotation;

const RELEASE: &str = "garage-operator";

fn reconciler_labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "app.kubernetes.io/name".to_owned(),
            "garage-operator".to_owned(),
        ),
        (
            "app.kubernetes.io/component".to_owned(),
            "reconciler".to_owned(),
        ),
    ])
}

fn scrapers() -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([("metrics".into(), "enabled".into())])),
        match_expressions: None,
    }
}

fn callers(metrics: bool) -> AdminCallers {
    AdminCallers::new(RELEASE, reconciler_labels(), metrics.then(scrapers)).unwrap()
}

fn render(c: &GarageCluster, callers: &AdminCallers, user_nodes: &[GarageNode]) -> NetworkPolicy {
    let s = Settings::from_cluster(c).unwrap();
    policy(c, &s, callers, members_outside(c, user_nodes)).unwrap()
}

fn ingress(p: &NetworkPolicy) -> Vec<NetworkPolicyIngressRule> {
    p.spec.clone().unwrap().ingress.unwrap()
}

fn ports_of(r: &NetworkPolicyIngressRule) -> Vec<i32> {
    r.ports
        .iter()
        .flatten()
        .map(|p| match &p.port {
            Some(IntOrString::Int(n)) => *n,
            other => panic!("a port that is not a number: {other:?}"),
        })
        .collect()
}

/// The sources allowed to `port`, one entry per rule that lists it (`None`: every source).
fn sources(p: &NetworkPolicy, port: i32) -> Vec<Option<Vec<NetworkPolicyPeer>>> {
    ingress(p)
        .into_iter()
        .filter(|r| ports_of(r).contains(&port))
        .map(|r| r.from)
        .collect()
}

fn pods_of(cluster: &str) -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        pod_selector: Some(LabelSelector {
            match_labels: Some(labels::headless_selector(cluster)),
            match_expressions: None,
        }),
        ..Default::default()
    }
}

fn reconciler_peer() -> NetworkPolicyPeer {
    NetworkPolicyPeer {
        namespace_selector: Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(
                NAMESPACE_NAME_LABEL.to_owned(),
                RELEASE.to_owned(),
            )])),
            match_expressions: None,
        }),
        pod_selector: Some(LabelSelector {
            match_labels: Some(reconciler_labels()),
            match_expressions: None,
        }),
        ip_block: None,
    }
}

fn external_node() -> GarageNode {
    GarageNode::new(
        "outside",
        GarageNodeSpec {
            external: Some(ExternalNodeConfig {
                address: "192.0.2.10".into(),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
}

fn with_bootstrap_peers(mut c: GarageCluster) -> GarageCluster {
    c.spec.network = Some(NetworkConfig {
        bootstrap_peers: Some(vec!["0123@192.0.2.20:3901".into()]),
        ..Default::default()
    });
    c
}

fn subset(selector: &BTreeMap<String, String>, pod: &BTreeMap<String, String>) -> bool {
    selector.iter().all(|(k, v)| pod.get(k) == Some(v))
}

#[test]
fn the_policy_selects_every_garage_pod_of_the_cluster_and_no_other() {
    let p = render(&cluster(3), &callers(false), &[]);
    let spec = p.spec.clone().unwrap();
    let selector = spec.pod_selector.unwrap().match_labels.unwrap();
    // (why, pod labels, selected)
    let cases = [
        (
            "a storage pod (Auto or Manual)",
            labels::storage_pod_labels("garage", "garage-storage-0"),
            true,
        ),
        (
            "a node-local pool pod",
            crate::desired::pool::pool_labels("garage", "fast"),
            true,
        ),
        (
            "another cluster's storage pod",
            labels::storage_pod_labels("other", "other-storage-0"),
            false,
        ),
        (
            "another cluster's pool pod",
            crate::desired::pool::pool_labels("other", "fast"),
            false,
        ),
    ];
    for (why, pod, selected) in cases {
        assert_eq!(subset(&selector, &pod), selected, "{why}");
    }
    assert_eq!(spec.policy_types, Some(vec!["Ingress".to_owned()]));
    assert_eq!(spec.egress, None, "outgoing connections are not restricted");
}

#[test]
fn client_ports_are_open_to_every_source() {
    let plain = cluster(3);
    let mut no_web = cluster(3);
    no_web.spec.web_api = Some(WebApiConfig {
        enabled: Some(false),
        ..Default::default()
    });
    let mut k2v = cluster(3);
    k2v.spec.k2v_api = Some(K2vApiConfig::default());
    let mut k2v_moved = cluster(3);
    k2v_moved.spec.k2v_api = Some(K2vApiConfig {
        bind_address: Some("[::]:9904".into()),
        ..Default::default()
    });
    // (why, cluster, the ports open to every source)
    let cases = [
        ("S3 and web by default", plain, vec![3900, 3902]),
        ("web turned off", no_web, vec![3900]),
        ("K2V turned on", k2v, vec![3900, 3902, 3904]),
        ("K2V on its own address", k2v_moved, vec![3900, 3902, 9904]),
    ];
    for (why, c, want) in cases {
        let p = render(&c, &callers(false), &[]);
        let open: Vec<i32> = ingress(&p)
            .iter()
            .filter(|r| r.from.is_none())
            .flat_map(ports_of)
            .collect();
        assert_eq!(open, want, "{why}");
    }
}

#[test]
fn rpc_is_reachable_only_from_the_clusters_own_pods() {
    let p = render(&cluster(3), &callers(true), &[]);
    // No namespace selector: the peers are pods of the policy's own namespace.
    assert_eq!(sources(&p, 3901), vec![Some(vec![pods_of("garage")])]);
}

#[test]
fn the_admin_api_is_reachable_only_from_the_reconciler_and_metrics_scrapers() {
    // (why, metrics scraping on, the peers of the Admin port)
    let scrape = NetworkPolicyPeer {
        namespace_selector: Some(scrapers()),
        ..Default::default()
    };
    let cases = [
        ("metrics scraping off", false, vec![reconciler_peer()]),
        ("metrics scraping on", true, vec![reconciler_peer(), scrape]),
    ];
    for (why, metrics, want) in cases {
        let p = render(&cluster(3), &callers(metrics), &[]);
        assert_eq!(sources(&p, 3903), vec![Some(want)], "{why}");
    }
}

#[test]
fn the_admin_api_is_never_open_to_every_source() {
    let mut k2v_on_admin = cluster(3);
    k2v_on_admin.spec.k2v_api = Some(K2vApiConfig {
        bind_port: Some(3903),
        ..Default::default()
    });
    let mut web_on_admin = cluster(3);
    web_on_admin.spec.web_api = Some(WebApiConfig {
        bind_port: Some(3903),
        ..Default::default()
    });
    let clusters = [
        cluster(3),
        with_bootstrap_peers(cluster(3)),
        k2v_on_admin,
        web_on_admin,
    ];
    for c in &clusters {
        for metrics in [false, true] {
            for nodes in [vec![], vec![external_node()]] {
                let p = render(c, &callers(metrics), &nodes);
                for from in sources(&p, 3903) {
                    let peers = from.expect("a rule opens the Admin port to every source");
                    assert!(!peers.is_empty(), "an empty from list allows every source");
                    for peer in peers {
                        assert!(peer.ip_block.is_none(), "{peer:?}");
                        let ns = peer.namespace_selector.as_ref();
                        assert!(
                            ns.is_some_and(|s| !selects_everything(s)),
                            "{peer:?}: every namespace"
                        );
                    }
                }
            }
        }
    }
    // The install cannot be built with selectors that would select everything.
    let everything = LabelSelector::default();
    assert!(AdminCallers::new(RELEASE, BTreeMap::new(), None).is_err());
    assert!(AdminCallers::new(" ", reconciler_labels(), None).is_err());
    assert!(AdminCallers::new(RELEASE, reconciler_labels(), Some(everything)).is_err());
}

#[test]
fn members_outside_the_cluster_open_rpc_to_every_source() {
    let mut remote = cluster(3);
    remote.spec.remote_clusters = Some(vec![RemoteClusterConfig::default()]);
    let mut connect = cluster(3);
    connect.spec.connect_to = Some(ConnectToConfig::default());
    let mut no_peers = cluster(3);
    no_peers.spec.network = Some(NetworkConfig {
        bootstrap_peers: Some(vec![]),
        ..Default::default()
    });
    let managed = GarageNode::new("manual-a", GarageNodeSpec::default());
    // (why, cluster, user-written GarageNodes, the reason RPC is open, if it is)
    let cases: Vec<(&str, GarageCluster, Vec<GarageNode>, Option<&str>)> = vec![
        ("only the cluster's pods", cluster(3), vec![], None),
        (
            "a Manual GarageNode runs in a pod of the cluster",
            cluster(3),
            vec![managed],
            None,
        ),
        ("an empty bootstrap list", no_peers, vec![], None),
        (
            "an external GarageNode",
            cluster(3),
            vec![external_node()],
            Some("a GarageNode with spec.external"),
        ),
        (
            "federated remote clusters",
            remote,
            vec![],
            Some("spec.remoteClusters"),
        ),
        (
            "a connectTo target",
            connect,
            vec![],
            Some("spec.connectTo"),
        ),
        (
            "bootstrap peers",
            with_bootstrap_peers(cluster(3)),
            vec![],
            Some("spec.network.bootstrapPeers"),
        ),
    ];
    // Settings refuses federation this version does not run; the rules are rendered from the
    // settings of the same cluster without it.
    let s = Settings::from_cluster(&cluster(3)).unwrap();
    for (why, c, nodes, want) in cases {
        let outside = members_outside(&c, &nodes);
        assert_eq!(outside, want, "{why}");
        let p = policy(&c, &s, &callers(false), outside).unwrap();
        let rpc = sources(&p, 3901);
        match want {
            Some(_) => assert_eq!(rpc, vec![None], "{why}: RPC open to every source"),
            None => assert_eq!(rpc, vec![Some(vec![pods_of("garage")])], "{why}"),
        }
        assert_eq!(
            sources(&p, 3903),
            vec![Some(vec![reconciler_peer()])],
            "{why}: the Admin API stays closed"
        );
    }
}

#[test]
fn turned_off_the_policy_is_removed() {
    let c = cluster(3);
    let s = Settings::from_cluster(&c).unwrap();
    assert_eq!(
        plan(&c, &s, None, &[], false).unwrap(),
        Plan::Remove {
            name: "garage-garage".into()
        }
    );
    match plan(&c, &s, Some(&callers(false)), &[external_node()], false).unwrap() {
        Plan::Ensure(p) => assert_eq!(sources(&p, 3901), vec![None]),
        other => panic!("turned on, the policy is ensured: {other:?}"),
    }
}

#[test]
fn connected_edge_gateways_open_the_rpc_port_and_nothing_else() {
    let c = cluster(3);
    let s = Settings::from_cluster(&c).unwrap();
    let ensured = |edges| match plan(&c, &s, Some(&callers(false)), &[], edges).unwrap() {
        Plan::Ensure(p) => *p,
        other => panic!("turned on, the policy is ensured: {other:?}"),
    };
    let (closed, open) = (ensured(false), ensured(true));
    assert_ne!(
        sources(&closed, 3901),
        vec![None],
        "without edges only the cluster's pods"
    );
    assert_eq!(
        sources(&open, 3901),
        vec![None],
        "edge pods must dial the members"
    );
    assert_eq!(
        sources(&open, 3903),
        sources(&closed, 3903),
        "the Admin API stays closed"
    );
}

#[test]
fn the_policy_is_owned_by_its_cluster_and_changes_with_its_rules() {
    let c = cluster(3);
    let p = render(&c, &callers(false), &[]);
    assert_eq!(p.metadata.name.as_deref(), Some("garage-garage"));
    assert_eq!(p.metadata.namespace.as_deref(), Some("ns"));
    let owner = &p.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("GarageCluster", "uid-1")
    );
    assert_eq!(owner.controller, Some(true));
    assert_eq!(p.metadata.labels, Some(labels::cluster_labels("garage")));
    let hash = |p: &NetworkPolicy| {
        p.metadata.annotations.clone().unwrap()[annotation::ANNOTATION_RENDERED_HASH].clone()
    };
    assert_eq!(hash(&p), hash(&render(&c, &callers(false), &[])));
    assert_ne!(hash(&p), hash(&render(&c, &callers(true), &[])));
    assert_ne!(
        hash(&p),
        hash(&render(&c, &callers(false), &[external_node()]))
    );
}
