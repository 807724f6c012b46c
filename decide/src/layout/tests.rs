use serde_json::{Value, json};

use super::*;

fn id(n: u8) -> NodeId {
    format!("{n:02x}{}", "0".repeat(62)).parse().unwrap()
}

fn role(n: u8) -> DesiredRole {
    DesiredRole {
        zone: "z".into(),
        capacity: Some(1 << 30),
        tags: vec!["cluster:g/ns".into(), format!("g-storage-{n}-0")],
    }
}

fn member(n: u8, known: bool) -> Member {
    Member {
        name: format!("g-storage-{n}"),
        node_id: known.then(|| id(n)),
        role: role(n),
    }
}

fn role_json(n: u8) -> Value {
    json!({"id": id(n).as_str(), "zone": "z", "capacity": 1u64 << 30, "tags": role(n).tags})
}

fn layout(version: u64, roles: &[Value], staged: &[Value]) -> ClusterLayout {
    serde_json::from_value(json!({
        "version": version, "roles": roles, "parameters": {"zoneRedundancy": "maximum"},
        "partitionSize": 0, "stagedRoleChanges": staged, "stagedParameters": null
    }))
    .unwrap()
}

fn settled(version: u64) -> LayoutHistory {
    serde_json::from_value(json!({
        "currentVersion": version, "minAck": version,
        "versions": [{"version": version, "status": "Current", "storageNodes": 3, "gatewayNodes": 0}]
    }))
    .unwrap()
}

fn draining(version: u64) -> LayoutHistory {
    serde_json::from_value(json!({
        "currentVersion": version, "minAck": version - 1,
        "versions": [{"version": version, "status": "Current", "storageNodes": 4, "gatewayNodes": 0},
                     {"version": version - 1, "status": "Draining", "storageNodes": 3, "gatewayNodes": 0}],
        "updateTrackers": {id(0).as_str(): {"ack": version, "sync": version - 1, "syncAck": version - 1}}
    }))
    .unwrap()
}

fn plan(members: &[Member], l: &ClusterLayout, h: &LayoutHistory) -> Plan {
    plan_with(members, l, h, None)
}

fn plan_with(
    members: &[Member],
    l: &ClusterLayout,
    h: &LayoutHistory,
    zone_redundancy: Option<ZoneRedundancy>,
) -> Plan {
    plan_layout(&Observed {
        replication_factor: 3,
        members,
        layout: l,
        history: h,
        zone_redundancy,
        frozen: &[],
    })
}

fn changes(ns: &[u8]) -> Vec<RoleChange> {
    ns.iter()
        .map(|n| RoleChange::storage(id(*n), "z", 1 << 30, role(*n).tags))
        .collect()
}

#[test]
fn bootstrap_waits_for_replication_factor_members() {
    let members = [member(0, true), member(1, true), member(2, false)];
    let p = plan(&members, &layout(0, &[], &[]), &settled(0));
    assert!(
        matches!(
            p,
            Plan::Hold {
                reason: HoldReason::WaitingForMembers,
                ..
            }
        ),
        "{p:?}"
    );
}

#[test]
fn bootstrap_adds_every_known_member_in_one_version() {
    let members = [member(0, true), member(1, true), member(2, true)];
    let p = plan(&members, &layout(0, &[], &[]), &settled(0));
    assert_eq!(
        p,
        Plan::Apply {
            stage: changes(&[0, 1, 2]),
            intended: changes(&[0, 1, 2]),
            apply_version: 1,
            bootstrap: true,
            parameters: None,
        }
    );
}

#[test]
fn an_interrupted_bootstrap_resumes_with_its_own_staged_roles() {
    let members = [member(0, true), member(1, true), member(2, true)];
    let staged = [role_json(0), role_json(1)];
    let p = plan(&members, &layout(0, &[], &staged), &settled(0));
    assert_eq!(
        p,
        Plan::Apply {
            stage: changes(&[2]),
            intended: changes(&[0, 1, 2]),
            apply_version: 1,
            bootstrap: true,
            parameters: None,
        }
    );
    let all = [role_json(0), role_json(1), role_json(2)];
    let p = plan(&members, &layout(0, &[], &all), &settled(0));
    assert!(
        matches!(&p, Plan::Apply { stage, intended, .. } if stage.is_empty() && intended.len() == 3)
    );
}

#[test]
fn converged_layouts_are_left_alone() {
    let members = [member(0, true), member(1, true), member(2, true)];
    let l = layout(1, &[role_json(0), role_json(1), role_json(2)], &[]);
    assert_eq!(plan(&members, &l, &settled(1)), Plan::Converged);
    // Unsettled history does not matter when there is nothing to do.
    assert_eq!(plan(&members, &l, &draining(2)), Plan::Converged);
}

#[test]
fn scale_up_adds_one_role_per_version() {
    let members = [
        member(0, true),
        member(1, true),
        member(2, true),
        member(3, true),
        member(4, true),
    ];
    let l = layout(1, &[role_json(0), role_json(1), role_json(2)], &[]);
    assert_eq!(
        plan(&members, &l, &settled(1)),
        Plan::Apply {
            stage: changes(&[3]),
            intended: changes(&[3]),
            apply_version: 2,
            bootstrap: false,
            parameters: None,
        }
    );
}

#[test]
fn unsettled_history_blocks_every_mutation() {
    let members = [
        member(0, true),
        member(1, true),
        member(2, true),
        member(3, true),
    ];
    let l = layout(2, &[role_json(0), role_json(1), role_json(2)], &[]);
    let p = plan(&members, &l, &draining(2));
    assert!(
        matches!(
            p,
            Plan::Hold {
                reason: HoldReason::HistoryNotSettled,
                ..
            }
        ),
        "{p:?}"
    );
}

#[test]
fn foreign_staged_changes_block_everything() {
    let members = [
        member(0, true),
        member(1, true),
        member(2, true),
        member(3, true),
    ];
    let roles = [role_json(0), role_json(1), role_json(2)];
    let removal = json!({"id": id(1).as_str(), "remove": true});
    let unknown = json!({"id": id(9).as_str(), "zone": "z", "capacity": 5, "tags": []});
    let mut drifted = role_json(3);
    drifted["zone"] = json!("elsewhere");
    for staged in [removal, unknown, drifted] {
        let p = plan(
            &members,
            &layout(1, &roles, std::slice::from_ref(&staged)),
            &settled(1),
        );
        assert!(
            matches!(
                p,
                Plan::Hold {
                    reason: HoldReason::ForeignStagedChanges,
                    ..
                }
            ),
            "{staged}: {p:?}"
        );
    }
    let mut l = layout(1, &roles, &[]);
    l.staged_parameters = Some(garage_api_types::LayoutParameters {
        zone_redundancy: garage_api_types::ZoneRedundancy::AtLeast(1),
    });
    assert!(matches!(
        plan(&members, &l, &settled(1)),
        Plan::Hold {
            reason: HoldReason::ForeignStagedChanges,
            ..
        }
    ));
}

#[test]
fn roles_of_members_no_longer_wanted_are_never_removed() {
    // Scale-down: member 3 is gone from the wanted list but keeps its role.
    let members = [member(0, true), member(1, true), member(2, true)];
    let l = layout(
        2,
        &[role_json(0), role_json(1), role_json(2), role_json(3)],
        &[],
    );
    assert_eq!(plan(&members, &l, &settled(2)), Plan::Converged);
}

#[test]
fn drifted_roles_are_rewritten_one_at_a_time() {
    let mut members = vec![member(0, true), member(1, true), member(2, true)];
    members[1].role.capacity = Some(2 << 30);
    members[2].role.zone = "y".into();
    let l = layout(1, &[role_json(0), role_json(1), role_json(2)], &[]);
    let p = plan(&members, &l, &settled(1));
    let Plan::Apply {
        stage, bootstrap, ..
    } = p
    else {
        panic!("{p:?}")
    };
    assert!(!bootstrap);
    assert_eq!(
        stage,
        vec![RoleChange::storage(id(1), "z", 2 << 30, role(1).tags)]
    );
}

#[test]
fn identity_collisions_are_refused() {
    let mut members = vec![member(0, true), member(1, true), member(2, true)];
    members[2].node_id = Some(id(1));
    let p = plan(&members, &layout(0, &[], &[]), &settled(0));
    assert!(matches!(
        p,
        Plan::Hold {
            reason: HoldReason::IdentityCollision,
            ..
        }
    ));
}

#[test]
fn tag_order_does_not_count_as_drift() {
    let members = [member(0, true), member(1, true), member(2, true)];
    let mut r1 = role_json(1);
    r1["tags"] = json!([format!("g-storage-1-0"), "cluster:g/ns"]);
    let l = layout(1, &[role_json(0), r1, role_json(2)], &[]);
    assert_eq!(plan(&members, &l, &settled(1)), Plan::Converged);
}

#[test]
fn verification_after_staging_is_exact() {
    let intended = changes(&[0, 1]);
    assert!(
        verify_staged(
            &layout(0, &[], &[role_json(0), role_json(1)]),
            &intended,
            None
        )
        .is_ok()
    );
    assert!(verify_staged(&layout(0, &[], &[role_json(0)]), &intended, None).is_err());
    assert!(
        verify_staged(
            &layout(0, &[], &[role_json(0), role_json(1), role_json(2)]),
            &intended,
            None
        )
        .is_err()
    );
}

fn with_staged_parameters(mut l: ClusterLayout, z: ZoneRedundancy) -> ClusterLayout {
    l.staged_parameters = Some(LayoutParameters { zone_redundancy: z });
    l
}

#[test]
fn a_zone_redundancy_change_is_staged_alone_once_roles_are_in_place_and_the_history_settled() {
    let members = [member(0, true), member(1, true), member(2, true)];
    let l = layout(4, &[role_json(0), role_json(1), role_json(2)], &[]);
    let at_least = ZoneRedundancy::AtLeast(2);
    // Unset, or what the layout already has: nothing to do.
    assert_eq!(plan_with(&members, &l, &settled(4), None), Plan::Converged);
    assert_eq!(
        plan_with(&members, &l, &settled(4), Some(ZoneRedundancy::Maximum)),
        Plan::Converged
    );
    assert_eq!(
        plan_with(&members, &l, &settled(4), Some(at_least)),
        Plan::Apply {
            stage: vec![],
            intended: vec![],
            apply_version: 5,
            bootstrap: false,
            parameters: Some(LayoutParameters {
                zone_redundancy: at_least
            }),
        }
    );
    assert!(matches!(
        plan_with(&members, &l, &draining(4), Some(at_least)),
        Plan::Hold {
            reason: HoldReason::HistoryNotSettled,
            ..
        }
    ));
    // Staged by this operator in an earlier pass: adopted. Anything else: someone else's.
    let staged = with_staged_parameters(l.clone(), at_least);
    assert!(matches!(
        plan_with(&members, &staged, &settled(4), Some(at_least)),
        Plan::Apply { .. }
    ));
    let foreign = with_staged_parameters(l, ZoneRedundancy::AtLeast(3));
    assert!(matches!(
        plan_with(&members, &foreign, &settled(4), Some(at_least)),
        Plan::Hold {
            reason: HoldReason::ForeignStagedChanges,
            ..
        }
    ));
}

#[test]
fn verification_covers_the_parameters() {
    let wanted = LayoutParameters {
        zone_redundancy: ZoneRedundancy::AtLeast(2),
    };
    let l = layout(4, &[role_json(0)], &[]);
    let staged = with_staged_parameters(l.clone(), ZoneRedundancy::AtLeast(2));
    assert!(verify_staged(&staged, &[], Some(&wanted)).is_ok());
    assert!(verify_staged(&l, &[], Some(&wanted)).is_err(), "not staged");
    assert!(verify_staged(&staged, &[], None).is_err(), "not ours");
    let other = with_staged_parameters(l, ZoneRedundancy::AtLeast(3));
    assert!(verify_staged(&other, &[], Some(&wanted)).is_err());
}

/// A layout of `n` committed storage roles of nodes 0..n (node IDs by two bytes).
fn full_layout(n: u16) -> (ClusterLayout, Vec<Member>) {
    let wide = |i: u16| -> NodeId { format!("{i:04x}{}", "0".repeat(60)).parse().unwrap() };
    let roles: Vec<Value> = (0..n)
        .map(|i| json!({"id": wide(i).as_str(), "zone": "z", "capacity": 1u64 << 30, "tags": []}))
        .collect();
    let members = (0..=n)
        .map(|i| Member {
            name: format!("m-{i}"),
            node_id: Some(wide(i)),
            role: DesiredRole {
                zone: "z".into(),
                capacity: Some(1 << 30),
                tags: vec![],
            },
        })
        .collect();
    (layout(1, &roles, &[]), members)
}

#[test]
fn no_role_is_added_past_garages_limit_of_256() {
    let (full, members) = full_layout(256);
    let p = plan(&members, &full, &settled(1));
    assert!(
        matches!(&p, Plan::Hold { reason: HoldReason::RoleLimit, message } if message.contains("256")),
        "{p:?}"
    );
    // One below the limit, the 256th role is still added.
    let (room, members) = full_layout(255);
    assert!(matches!(
        plan(&members, &room, &settled(1)),
        Plan::Apply { .. }
    ));
}

#[test]
fn a_member_with_a_role_is_still_corrected_at_the_limit() {
    let (full, mut members) = full_layout(256);
    members.pop();
    members[3].role.capacity = Some(2 << 30);
    assert!(matches!(
        plan(&members, &full, &settled(1)),
        Plan::Apply { stage, .. } if stage.len() == 1
    ));
}

#[test]
fn a_frozen_member_is_never_assigned_but_still_counts_in_the_collision_check() {
    let members = [
        member(0, true),
        member(1, true),
        member(2, true),
        member(3, true),
    ];
    let l = layout(1, &[role_json(0), role_json(1), role_json(2)], &[]);
    let frozen = vec!["g-storage-3".to_owned()];
    let o = Observed {
        replication_factor: 3,
        members: &members,
        layout: &l,
        history: &settled(1),
        zone_redundancy: None,
        frozen: &frozen,
    };
    assert_eq!(plan_layout(&o), Plan::Converged, "member 3 is not added");
    // A frozen member reporting another member's identity still holds every change.
    let mut twin = member(3, true);
    twin.node_id = Some(id(1));
    let members = [member(0, true), member(1, true), member(2, true), twin];
    let o = Observed {
        members: &members,
        ..o
    };
    assert!(matches!(
        plan_layout(&o),
        Plan::Hold {
            reason: HoldReason::IdentityCollision,
            ..
        }
    ));
}

fn gateway(n: u8) -> Member {
    Member {
        name: format!("g-gateway-{n}"),
        node_id: Some(id(100 + n)),
        role: DesiredRole {
            zone: "z".into(),
            capacity: None,
            tags: vec!["cluster:g/ns".into(), "tier:gateway".into()],
        },
    }
}

#[test]
fn gateways_do_not_count_toward_the_first_layout() {
    let members = [member(0, true), member(1, true), gateway(0), gateway(1)];
    let p = plan(&members, &layout(0, &[], &[]), &settled(0));
    assert!(
        matches!(
            &p,
            Plan::Hold {
                reason: HoldReason::WaitingForMembers,
                message,
            } if message.starts_with("2 of 3 storage members")
        ),
        "{p:?}"
    );
}

#[test]
fn gateways_join_the_first_layout_without_capacity() {
    let members = [
        member(0, true),
        member(1, true),
        member(2, true),
        gateway(0),
    ];
    let Plan::Apply {
        stage, bootstrap, ..
    } = plan(&members, &layout(0, &[], &[]), &settled(0))
    else {
        panic!("expected an apply");
    };
    assert!(bootstrap);
    assert_eq!(stage.len(), 4);
    assert_eq!(
        stage[3],
        RoleChange::gateway(id(100), "z", gateway(0).role.tags)
    );
}

#[test]
fn a_gateway_role_with_capacity_is_corrected_to_none() {
    let members = [
        member(0, true),
        member(1, true),
        member(2, true),
        gateway(0),
    ];
    let wrong = json!({"id": id(100).as_str(), "zone": "z", "capacity": 1u64 << 30, "tags": gateway(0).role.tags});
    let roles = [role_json(0), role_json(1), role_json(2), wrong];
    let Plan::Apply { stage, .. } = plan(&members, &layout(1, &roles, &[]), &settled(1)) else {
        panic!("expected an apply");
    };
    assert_eq!(
        stage,
        vec![RoleChange::gateway(id(100), "z", gateway(0).role.tags)]
    );
    // The gateway's committed capacity-less role is what it wants: nothing to do.
    let right = json!({"id": id(100).as_str(), "zone": "z", "capacity": null, "tags": gateway(0).role.tags});
    let roles = [role_json(0), role_json(1), role_json(2), right];
    assert_eq!(
        plan(&members, &layout(2, &roles, &[]), &settled(2)),
        Plan::Converged
    );
}
