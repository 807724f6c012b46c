#![allow(clippy::unwrap_used, clippy::expect_used)]

use shared_types::common::ZoneSource;
use shared_types::garage_node::{ExternalNodeConfig, GarageNode, GarageNodeStatus, NodeBacking};

use super::*;
use crate::fixtures::{cluster, manual, settings};

const KEY: &str = "topology.kubernetes.io/zone";

fn with_zone_from(mut gn: GarageNode) -> GarageNode {
    gn.spec.zone_from = Some(ZoneSource {
        node_label: KEY.into(),
    });
    gn
}

fn published(mut gn: GarageNode, zone: &str) -> GarageNode {
    gn.status = Some(GarageNodeStatus {
        zone: Some(zone.into()),
        ..Default::default()
    });
    gn
}

fn pool_member(gn: GarageNode) -> GarageNode {
    let mut gn = gn;
    gn.spec.backing = Some(NodeBacking::NodeLocalPool);
    gn.spec.node_local_pool_name = Some("disks".into());
    gn.spec.kubernetes_node_name = Some("n1".into());
    gn
}

#[test]
fn the_zone_follows_the_hosts_label_and_falls_back_as_documented() {
    let read = |v: Option<&str>| HostZone::Read(v.map(String::from));
    let cases: Vec<(&str, GarageNode, HostZone, &str)> = vec![
        (
            "no zoneFrom: spec.zone",
            manual("a", None),
            read(Some("rack-1")),
            "zone-m",
        ),
        (
            "no zoneFrom: a published zone is not kept",
            published(manual("a", None), "rack-9"),
            HostZone::Unknown,
            "zone-m",
        ),
        (
            "label read",
            with_zone_from(manual("a", None)),
            read(Some("rack-1")),
            "rack-1",
        ),
        (
            "label absent: spec.zone, not the last published",
            published(with_zone_from(manual("a", None)), "rack-9"),
            read(None),
            "zone-m",
        ),
        (
            "label empty: spec.zone",
            with_zone_from(manual("a", None)),
            read(Some("")),
            "zone-m",
        ),
        (
            "host unknown: the last published zone",
            published(with_zone_from(manual("a", None)), "rack-9"),
            HostZone::Unknown,
            "rack-9",
        ),
        (
            "host unknown, nothing published: spec.zone",
            with_zone_from(manual("a", None)),
            HostZone::Unknown,
            "zone-m",
        ),
        (
            "not read in this pass: the last published zone",
            published(with_zone_from(manual("a", None)), "rack-9"),
            HostZone::NotRead,
            "rack-9",
        ),
    ];
    let s = settings(&cluster(3));
    for (name, gn, host, want) in cases {
        assert_eq!(resolve(&gn, Some(&s), &host), want, "{name}");
    }
    // Without its parent's settings a pool member cannot know the cluster's zoneFrom: its
    // zone stays.
    let member = published(pool_member(manual("p", None)), "rack-9");
    assert_eq!(resolve(&member, None, &HostZone::NotRead), "rack-9");
}

#[test]
fn only_members_with_a_kubernetes_node_take_a_label() {
    let mut with_cluster_zone_from = settings(&cluster(3));
    with_cluster_zone_from.zone_from = Some("example.com/rack".into());
    let s = settings(&cluster(3));
    let mut external = with_zone_from(manual("x", None));
    external.spec.external = Some(ExternalNodeConfig {
        address: "10.0.0.1".into(),
        ..Default::default()
    });
    let mut gateway = with_zone_from(manual("g", None));
    gateway.spec.gateway = Some(true);
    let cases: Vec<(&str, GarageNode, &Settings, Option<&str>)> = vec![
        (
            "own zoneFrom",
            with_zone_from(manual("a", None)),
            &s,
            Some(KEY),
        ),
        ("none", manual("a", None), &with_cluster_zone_from, None),
        ("external", external, &s, None),
        ("gateway", gateway, &s, None),
        (
            "pool member: the cluster's",
            pool_member(manual("p", None)),
            &with_cluster_zone_from,
            Some("example.com/rack"),
        ),
        (
            "pool member: its own first",
            pool_member(with_zone_from(manual("p", None))),
            &with_cluster_zone_from,
            Some(KEY),
        ),
        (
            "pool member, cluster without",
            pool_member(manual("p", None)),
            &s,
            None,
        ),
    ];
    for (name, gn, s, want) in cases {
        assert_eq!(label_key(&gn, Some(s)), want, "{name}");
    }
}

#[test]
fn the_layout_takes_the_published_zone_only_under_zone_from() {
    let s = settings(&cluster(3));
    let cases = [
        ("plain", published(manual("a", None), "rack-9"), "zone-m"),
        (
            "zoneFrom",
            published(with_zone_from(manual("a", None)), "rack-9"),
            "rack-9",
        ),
        (
            "zoneFrom, nothing yet",
            with_zone_from(manual("a", None)),
            "zone-m",
        ),
        (
            "zoneFrom, empty",
            published(with_zone_from(manual("a", None)), ""),
            "zone-m",
        ),
    ];
    for (name, gn, want) in cases {
        assert_eq!(layout_zone(&gn, &s), want, "{name}");
    }
}

#[test]
fn a_node_the_install_may_not_read_is_reported_naming_the_field() {
    for host in [
        HostZone::NotRead,
        HostZone::Unknown,
        HostZone::Read(Some("rack-1".into())),
    ] {
        assert!(refusal(&host).is_none(), "{host:?}");
    }
    let e = refusal(&HostZone::Forbidden("nodes \"n1\" is forbidden".into()))
        .expect("refused")
        .to_string();
    assert!(e.starts_with("spec.zoneFrom: "), "{e}");
    assert!(e.contains("set spec.zone"), "{e}");
    // The zone stays the one last published meanwhile.
    let gn = published(with_zone_from(manual("a", None)), "rack-9");
    let s = settings(&cluster(3));
    assert_eq!(
        resolve(&gn, Some(&s), &HostZone::Forbidden(String::new())),
        "rack-9"
    );
}

#[test]
fn generated_members_carry_the_clusters_zone_from_and_their_role_the_published_zone() {
    let mut c = cluster(3);
    c.spec.zone_from = Some(ZoneSource {
        node_label: "example.com/rack".into(),
    });
    let s = settings(&c);
    assert_eq!(s.zone_from.as_deref(), Some("example.com/rack"));
    let gn = crate::desired::nodes::auto_storage_node(&c, &s, 0).unwrap();
    assert_eq!(gn.spec.zone_from, c.spec.zone_from);
    let view = crate::cluster::members::member(&published(gn.clone(), "rack-b"), &[], &s, true)
        .expect("a member");
    assert_eq!(view.member.role.zone, "rack-b");
    let plain = settings(&cluster(3));
    let gn = crate::desired::nodes::auto_storage_node(&cluster(3), &plain, 0).unwrap();
    assert_eq!(gn.spec.zone_from, None);
    let view = crate::cluster::members::member(&published(gn, "rack-b"), &[], &plain, true)
        .expect("a member");
    assert_eq!(view.member.role.zone, plain.zone);
}
