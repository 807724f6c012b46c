//! Table tests of stale gateway roles.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;
use shared_types::garage_cluster::common::LayoutManagementConfig;
use shared_types::garage_cluster::v1beta2::{GarageClusterStatus, GatewaySpec};

use super::*;
use crate::cluster::observed::GarageView;
use crate::fixtures::{cluster, id, layout, manual, observed_cluster, settled};

/// A unified cluster whose layout holds the gateway role of node 9 and, when `claimed`, a
/// GarageNode that records it; Garage last saw node 9 `ago` seconds back (`None`: up).
fn world(claimed: bool, ago: Option<u64>, auto_apply: Option<bool>) -> (Observed, Settings) {
    let mut c = cluster(3);
    c.spec.gateway = Some(GatewaySpec::default());
    c.spec.layout_management = Some(LayoutManagementConfig {
        auto_apply,
        ..Default::default()
    });
    let s = Settings::from_cluster(&c).unwrap();
    let tags = json!([format!("cluster-uid:{}", s.uid), "tier:gateway"]);
    let read = GarageRead {
        status: serde_json::from_value(json!({"layoutVersion": 4, "nodes": [
            {"id": id(9).as_str(), "isUp": ago.is_none(), "draining": false, "lastSeenSecsAgo": ago},
        ]}))
        .unwrap(),
        layout: layout(4, &[json!({"id": id(9).as_str(), "zone": s.zone, "capacity": null, "tags": tags})], &[]),
        history: settled(4),
        health: None,
        every_view_healthy: true,
        build: None,
        worker_variables: Default::default(),
    };
    let mut o = observed_cluster(c, GarageView::Read(Box::new(read)));
    if claimed {
        let mut gw = manual("gw", Some(id(9)));
        gw.spec.gateway = Some(true);
        o.user_nodes.push(gw);
    }
    (o, s)
}

fn read(o: &Observed) -> &GarageRead {
    match &o.garage {
        GarageView::Read(r) => r,
        GarageView::Unavailable(_) => unreachable!(),
    }
}

#[test]
fn only_unclaimed_gateway_roles_gone_for_ten_minutes_are_stale() {
    for (claimed, ago, stale) in [
        (false, Some(600), true),
        (false, Some(599), false),
        (false, None, false),
        (true, Some(3600), false),
    ] {
        let (o, s) = world(claimed, ago, None);
        let t = decide(&o, &s, Some(read(&o)), false);
        let want: Vec<String> = if stale {
            vec![id(9).to_string()]
        } else {
            vec![]
        };
        assert_eq!(t.pending, Some(want), "claimed {claimed}, seen {ago:?} ago");
        assert_eq!(t.condition.is_some(), stale);
        assert_eq!(t.remove, None, "autoApply is off");
    }
}

#[test]
fn auto_apply_removes_only_a_list_recorded_before() {
    let (mut o, s) = world(false, Some(900), Some(true));
    let t = decide(&o, &s, Some(read(&o)), false);
    assert_eq!(t.pending, Some(vec![id(9).to_string()]));
    assert_eq!(t.remove, None, "the list is recorded first");
    assert_eq!(t.condition, None);
    let mut c = (*o.cluster).clone();
    c.status = Some(GarageClusterStatus {
        pending_gateway_tombstones: Some(vec![id(9).to_string()]),
        ..Default::default()
    });
    o.cluster = std::sync::Arc::new(c);
    let t = decide(&o, &s, Some(read(&o)), false);
    let change = t.remove.expect("a removal");
    assert_eq!(change.intended, vec![RoleChange::remove(id(9))]);
    assert_eq!(change.version, 5);
    // Not while another writer acts, nor over a staged change.
    assert_eq!(decide(&o, &s, Some(read(&o)), true).remove, None);
    let mut staged = read(&o).clone();
    staged.layout.staged_role_changes =
        serde_json::from_value(json!([{"id": id(7).as_str(), "remove": true}])).unwrap();
    assert_eq!(decide(&o, &s, Some(&staged), false).remove, None);
}

#[test]
fn nothing_is_judged_without_a_gateway_tier_or_with_an_unsettled_history() {
    let (mut o, s) = world(false, Some(900), Some(true));
    let mut no_tier = s.clone();
    no_tier.gateway_tier = false;
    assert_eq!(
        decide(&o, &no_tier, Some(read(&o)), false),
        Tombstones::default()
    );
    if let GarageView::Read(r) = &mut o.garage {
        r.history = crate::fixtures::unsettled(4);
    }
    assert_eq!(decide(&o, &s, Some(read(&o)), false), Tombstones::default());
}

#[test]
fn a_listed_role_stays_reported_while_nothing_can_be_judged() {
    let (mut o, s) = world(false, Some(900), None);
    let mut c = (*o.cluster).clone();
    c.status = Some(GarageClusterStatus {
        pending_gateway_tombstones: Some(vec![id(9).to_string()]),
        ..Default::default()
    });
    o.cluster = std::sync::Arc::new(c);
    let t = decide(&o, &s, None, false);
    assert_eq!(t.pending, None, "the list is left as it is");
    assert!(
        t.condition.is_some_and(|c| c.status),
        "and so is its condition"
    );
}
