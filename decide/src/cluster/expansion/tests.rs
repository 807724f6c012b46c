use serde_json::json;

use super::*;
use crate::cluster::members;
use crate::fixtures::{cluster, id, layout, manual, pod, role, settings};

const GI: u64 = 1 << 30;

/// Claim `name`, bound, reporting `capacity` (and a pending resize when `pending`).
fn claim(name: &str, capacity: &str, pending: bool) -> PersistentVolumeClaim {
    let conditions = if pending {
        json!([{"type": "FileSystemResizePending", "status": "True"}])
    } else {
        json!([])
    };
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"resources": {"requests": {"storage": "2Gi"}}},
        "status": {"phase": "Bound", "capacity": {"storage": capacity}, "conditions": conditions},
    }))
    .unwrap()
}

/// Manual member `m` (asks for 2Gi on a 2Gi data volume) whose role in the layout has
/// `in_layout` bytes, and the outcome of [`hold`] with `claims`.
fn held_with(in_layout: Option<u64>, claims: &[PersistentVolumeClaim]) -> (Vec<Held>, u64) {
    let c = cluster(0);
    let node = manual("m", Some(id(1)));
    let pods = [pod("m", 1, "uid-m")];
    let mut views = vec![members::member(&node, &pods, &settings(&c), false).unwrap()];
    let roles: Vec<_> = in_layout
        .map(|cap| role(&id(1), "zone-m", cap, &[]))
        .into_iter()
        .collect();
    let l = layout(1, &roles, &[]);
    let held = hold(&mut views, &[&node], Some(&l), claims);
    (held, views[0].member.role.capacity.unwrap())
}

#[test]
fn a_member_keeps_its_layout_capacity_until_its_data_claim_reports_the_size() {
    let (held, capacity) = held_with(Some(GI), &[claim("data-m-0", "1Gi", false)]);
    assert_eq!(capacity, GI, "capacity must not run ahead of the disk");
    assert_eq!(
        held,
        vec![Held {
            member: "m".into(),
            kept: GI,
            asked: 2 * GI,
            claims: vec!["data-m-0".into()],
            behind: None,
        }]
    );
    // The file system resize is not finished: still held.
    let (held, capacity) = held_with(Some(GI), &[claim("data-m-0", "2Gi", true)]);
    assert_eq!((held.len(), capacity), (1, GI));
    // A claim not seen at all proves nothing.
    let (held, capacity) = held_with(Some(GI), &[]);
    assert_eq!((held.len(), capacity), (1, GI));
}

#[test]
fn once_every_data_claim_reports_the_size_the_member_gets_it() {
    let (held, capacity) = held_with(Some(GI), &[claim("data-m-0", "2Gi", false)]);
    assert!(held.is_empty());
    assert_eq!(capacity, 2 * GI);
    // The metadata claim does not hold the data's capacity back.
    let (held, _) = held_with(
        Some(GI),
        &[
            claim("data-m-0", "2Gi", false),
            claim("metadata-m-0", "1Mi", false),
        ],
    );
    assert!(held.is_empty());
}

#[test]
fn a_new_member_or_a_smaller_ask_is_never_held() {
    // No role yet: its claims are created at the size asked.
    let (held, capacity) = held_with(None, &[]);
    assert!(held.is_empty());
    assert_eq!(capacity, 2 * GI);
    // The layout already has as much or more.
    for in_layout in [2 * GI, 3 * GI] {
        let (held, capacity) = held_with(Some(in_layout), &[]);
        assert!(held.is_empty());
        assert_eq!(capacity, 2 * GI);
    }
}

#[test]
fn nothing_is_held_without_a_layout_read() {
    let c = cluster(0);
    let node = manual("m", Some(id(1)));
    let pods = [pod("m", 1, "uid-m")];
    let mut views = vec![members::member(&node, &pods, &settings(&c), false).unwrap()];
    assert!(hold(&mut views, &[&node], None, &[]).is_empty());
}

#[test]
fn the_cluster_names_held_members_and_rolls_up_blocked_ones() {
    let mut blocked = manual("b", None);
    blocked.status = Some(
        serde_json::from_value(json!({"conditions": [{
            "type": "StorageExpansionBlocked", "status": "True", "reason": "ExpansionRefused",
            "message": "data-b-0 asks for 4Gi", "lastTransitionTime": "2026-01-01T00:00:00Z",
        }]}))
        .unwrap(),
    );
    let quiet = manual("q", None);
    let held = vec![Held {
        member: "m".into(),
        kept: GI,
        asked: 2 * GI,
        claims: vec!["data-m-0".into()],
        behind: None,
    }];
    let out = conditions(&held, &[&blocked, &quiet]);
    let types: Vec<_> = out.iter().map(|c| (c.type_, c.reason)).collect();
    assert_eq!(
        types,
        [
            (
                cc::CONDITION_STORAGE_EXPANSION_IN_PROGRESS,
                reason::REASON_CAPACITY_HELD
            ),
            (
                cc::CONDITION_STORAGE_EXPANSION_BLOCKED,
                reason::REASON_EXPANSION_REFUSED
            ),
        ]
    );
    assert!(out[0].message.contains("data-m-0"), "{}", out[0].message);
    assert!(
        out[1].message.contains("b: data-b-0 asks for 4Gi"),
        "{}",
        out[1].message
    );
    assert!(
        conditions(&[], &[&quiet]).is_empty(),
        "absent when nothing grows"
    );
}

#[test]
fn only_one_members_capacity_rises_per_pass() {
    let c = cluster(0);
    let nodes = [manual("a", Some(id(1))), manual("b", Some(id(2)))];
    let pods = [pod("a", 1, "uid-a"), pod("b", 2, "uid-b")];
    let mut views: Vec<_> = nodes
        .iter()
        .map(|n| members::member(n, &pods, &settings(&c), false).unwrap())
        .collect();
    let l = layout(
        1,
        &[
            role(&id(1), "zone-m", GI, &[]),
            role(&id(2), "zone-m", GI, &[]),
        ],
        &[],
    );
    let claims = [
        claim("data-a-0", "2Gi", false),
        claim("data-b-0", "2Gi", false),
    ];
    let held = hold(&mut views, &[&nodes[0], &nodes[1]], Some(&l), &claims);
    assert_eq!(
        views[0].member.role.capacity,
        Some(2 * GI),
        "the first rises"
    );
    assert_eq!(views[1].member.role.capacity, Some(GI), "the second waits");
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].behind.as_deref(), Some("a"));
    let message = &conditions(&held, &[])[0].message;
    assert!(
        message.contains("until the capacity of a has risen"),
        "{message}"
    );
}
