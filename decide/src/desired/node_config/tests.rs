#![allow(clippy::unwrap_used, clippy::expect_used)]

use shared_types::garage_node::{ExternalNodeConfig, GarageNode, NodeBacking, NodeNetworkConfig};
use shared_types::keys::tag;

use super::*;
use crate::desired::config::CONFIG_KEY;
use crate::desired::test_support::cluster;
use crate::fixtures::{manual, settings};

fn with_addr(mut gn: GarageNode, addr: &str) -> GarageNode {
    gn.spec.network = Some(NodeNetworkConfig {
        rpc_public_addr: Some(addr.into()),
    });
    gn
}

fn body(r: &ConfigRevision) -> String {
    r.config_map.data.as_ref().unwrap()[CONFIG_KEY].clone()
}

#[test]
fn a_member_with_its_own_address_mounts_its_own_revision_differing_only_there() {
    let c = cluster(3);
    let s = settings(&c);
    let shared = config::revision(&c, &s).unwrap();
    let plain = revision_for(&c, &s, &manual("manual-a", None)).unwrap();
    assert_eq!(plain.name, shared.name, "no address: the shared revision");

    let own = revision_for(
        &c,
        &s,
        &with_addr(manual("manual-a", None), "a.example:3901"),
    )
    .unwrap();
    assert!(
        own.name.starts_with("garage-config-manual-a-"),
        "{}",
        own.name
    );
    let (mine, theirs) = (body(&own), body(&shared));
    let extra: Vec<&str> = mine
        .lines()
        .filter(|l| !theirs.lines().any(|t| t == *l))
        .collect();
    assert_eq!(extra, ["rpc_public_addr = \"a.example:3901\""]);
    assert_eq!(mine.lines().count(), theirs.lines().count() + 1);
    assert_eq!(own.config_map.immutable, Some(true));
    // Its name is under the shared base, so the same pruning covers it.
    assert!(
        own.name
            .starts_with(&format!("{}-", names::config_base("garage")))
    );
}

#[test]
fn the_members_own_address_replaces_the_clusters() {
    let mut c = cluster(3);
    c.spec
        .network
        .get_or_insert_with(Default::default)
        .rpc_public_addr = Some("shared.example:3901".into());
    let s = settings(&c);
    let own = revision_for(
        &c,
        &s,
        &with_addr(manual("manual-a", None), "a.example:3901"),
    )
    .unwrap();
    let b = body(&own);
    assert!(b.contains("rpc_public_addr = \"a.example:3901\""), "{b}");
    assert!(!b.contains("shared.example"), "{b}");
}

#[test]
fn only_statefulset_members_gateways_included_have_an_address_of_their_own() {
    let mut pool = with_addr(manual("p", None), "p.example:3901");
    pool.spec.backing = Some(NodeBacking::NodeLocalPool);
    let mut external = with_addr(manual("x", None), "x.example:3901");
    external.spec.external = Some(ExternalNodeConfig {
        address: "10.0.0.1".into(),
        ..Default::default()
    });
    let mut gateway = with_addr(manual("g", None), "g.example:3901");
    gateway.spec.gateway = Some(true);
    let blank = with_addr(manual("b", None), "  ");
    let cases = [
        (
            "manual",
            with_addr(manual("m", None), " m.example:3901 "),
            Some("m.example:3901"),
        ),
        ("pool member: a layout tag instead", pool, None),
        ("external", external, None),
        ("gateway", gateway, Some("g.example:3901")),
        ("blank", blank, None),
        ("none", manual("n", None), None),
    ];
    for (name, gn, want) in cases {
        assert_eq!(
            own_rpc_public_addr(&gn, &settings(&cluster(3))).as_deref(),
            want,
            "{name}"
        );
    }
}

#[test]
fn auto_members_take_the_storage_address_with_their_ordinal() {
    let mut c = cluster(3);
    c.spec.storage.as_mut().unwrap().rpc_public_addr = Some("store-{ordinal}.example:3901".into());
    let s = settings(&c);
    assert_eq!(
        auto_rpc_public_addr(&c, 2).as_deref(),
        Some("store-2.example:3901")
    );
    let gn = crate::desired::nodes::auto_storage_node(&c, &s, 1).unwrap();
    assert_eq!(
        own_rpc_public_addr(&gn, &s).as_deref(),
        Some("store-1.example:3901")
    );
    let plain = crate::desired::nodes::auto_storage_node(&cluster(3), &s, 1).unwrap();
    assert_eq!(plain.spec.network, None);

    // Its role carries the address as the pool members' roles do, last.
    let view = crate::cluster::members::member(&gn, &[], &s, true).expect("a member");
    assert_eq!(
        view.member.role.tags.last().map(String::as_str),
        Some(format!("{}store-1.example:3901", tag::TAG_PREFIX_RPC_ADDRESS).as_str())
    );
    let revisions = own_revisions(&c, &s, [&gn, &gn, &plain]).unwrap();
    assert_eq!(revisions.len(), 1, "each own revision once");
}

#[test]
fn a_gateway_of_a_discovering_cluster_runs_without_discovery() {
    let mut c = cluster(3);
    c.spec.gateway = Some(serde_json::from_value(serde_json::json!({"replicas": 1})).unwrap());
    let discovering = |mut c: GarageCluster| {
        c.spec.discovery = Some(
            serde_json::from_value(serde_json::json!({"kubernetes": {"enabled": true}})).unwrap(),
        );
        c
    };
    let s = settings(&c);
    let gateway = crate::desired::nodes::auto_gateway_node(&c, &s, 0).unwrap();
    let storage = crate::desired::nodes::auto_storage_node(&c, &s, 0).unwrap();

    // Without discovery everything shares the cluster's revision.
    let shared = config::revision(&c, &s).unwrap();
    assert_eq!(revision_for(&c, &s, &gateway).unwrap().name, shared.name);
    assert!(
        own_revisions(&c, &s, [&gateway, &storage])
            .unwrap()
            .is_empty()
    );

    let c = discovering(c);
    let shared = config::revision(&c, &s).unwrap();
    assert!(body(&shared).contains("[kubernetes_discovery]"));
    assert_eq!(revision_for(&c, &s, &storage).unwrap().name, shared.name);
    let own = revision_for(&c, &s, &gateway).unwrap();
    assert_ne!(own.name, shared.name);
    let (mine, theirs) = (body(&own), body(&shared));
    assert!(!mine.contains("kubernetes_discovery"), "{mine}");
    assert!(
        theirs.starts_with(&mine),
        "the gateway's differs only by the discovery section:\n{mine}\n---\n{theirs}"
    );
    let revisions = own_revisions(&c, &s, [&gateway, &storage]).unwrap();
    assert_eq!(
        revisions.iter().map(|r| r.name.clone()).collect::<Vec<_>>(),
        [own.name]
    );
}
