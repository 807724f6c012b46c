//! Table tests of the free-space assessment and of the holds it puts on new drains and new
//! storage rollouts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use shared_types::garage_cluster::common::StorageDrainStatus;

use super::*;
use crate::fixtures::id;
use crate::layout::{DesiredRole, Member};

const GIB: u64 = 1 << 30;

fn view(name: &str, node: Option<u8>) -> MemberView {
    MemberView {
        edge: None,
        member: Member {
            name: name.into(),
            node_id: node.map(id),
            role: DesiredRole {
                zone: "z".into(),
                capacity: Some(GIB),
                tags: vec![],
            },
        },
        rpc_address: None,
        advertised: None,
        external: false,
        ready: true,
        generated: true,
        started_at: None,
        pod_name: None,
        mark: None,
        pool: None,
        suspended: false,
    }
}

/// A partition's `(available, total)`, when Garage reports it.
type Space = Option<(u64, u64)>;

/// `GetClusterStatus` where node `n` reports `(data, metadata)`.
fn status(nodes: &[(u8, Space, Space)]) -> ClusterStatus {
    let space = |s: Space| {
        s.map(|(available, total)| serde_json::json!({"available": available, "total": total}))
    };
    let nodes: Vec<serde_json::Value> = nodes
        .iter()
        .map(|(n, data, meta)| {
            serde_json::json!({
                "id": id(*n).as_str(), "isUp": true, "draining": false,
                "dataPartition": space(*data), "metadataPartition": space(*meta),
            })
        })
        .collect();
    serde_json::from_value(serde_json::json!({"layoutVersion": 1, "nodes": nodes})).unwrap()
}

fn previous(status: &str, message: &str) -> Condition {
    Condition {
        type_: cc::CONDITION_STORAGE_CAPACITY_LOW.into(),
        status: status.into(),
        reason: reason::REASON_STORAGE_CAPACITY_LOW.into(),
        message: message.into(),
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
        observed_generation: Some(1),
    }
}

#[test]
fn partitions_below_the_threshold_are_low_and_nothing_else() {
    // (data, metadata, percent, partitions expected low)
    let cases: [(Space, Space, u8, &[Partition]); 12] = [
        (Some((50, 100)), Some((50, 100)), 10, &[]),
        (Some((9, 100)), Some((50, 100)), 10, &[Partition::Data]),
        (Some((50, 100)), Some((9, 100)), 10, &[Partition::Metadata]),
        (
            Some((1, 100)),
            Some((1, 100)),
            10,
            &[Partition::Data, Partition::Metadata],
        ),
        // Exactly at the threshold is not below it.
        (Some((10, 100)), Some((10, 100)), 10, &[]),
        // A partition reporting no size cannot be judged (and is never divided by).
        (Some((0, 0)), Some((0, 0)), 10, &[]),
        // Not reported (an older Garage): nothing to say.
        (None, None, 10, &[]),
        // 0 turns the check off, even for a full disk.
        (Some((0, 100)), Some((0, 100)), 0, &[]),
        // 100 calls anything not entirely free low.
        (Some((99, 100)), Some((100, 100)), 100, &[Partition::Data]),
        // Sizes near u64::MAX do not overflow.
        (
            Some((u64::MAX / 20, u64::MAX)),
            Some((u64::MAX, u64::MAX)),
            10,
            &[Partition::Data],
        ),
        // Garage reporting more available than total is not low.
        (Some((200, 100)), None, 10, &[]),
        // Real sizes: 9.9 GiB of 100 GiB.
        (
            Some((99 * GIB / 10, 100 * GIB)),
            None,
            10,
            &[Partition::Data],
        ),
    ];
    for (data, meta, percent, expected) in cases {
        let got = low_partitions(&[view("m", Some(1))], &status(&[(1, data, meta)]), percent);
        let partitions: Vec<Partition> = got.iter().map(|l| l.partition).collect();
        assert_eq!(partitions, expected, "{data:?} {meta:?} at {percent}%");
    }
}

#[test]
fn only_members_garage_reports_for_are_judged_in_name_order() {
    let views = [
        view("b", Some(2)),
        view("unknown-id", None),
        view("not-reported", Some(9)),
        view("a", Some(1)),
    ];
    let st = status(&[(1, Some((1, 100)), None), (2, None, Some((1, 100)))]);
    let got = low_partitions(&views, &st, 10);
    assert_eq!(
        got,
        [
            LowPartition {
                member: "a".into(),
                partition: Partition::Data,
                available: 1,
                total: 100
            },
            LowPartition {
                member: "b".into(),
                partition: Partition::Metadata,
                available: 1,
                total: 100
            },
        ]
    );
}

#[test]
fn a_low_member_is_reported_by_name_disk_size_and_percentage() {
    let views = [
        view("garage-storage-0", Some(0)),
        view("garage-storage-1", Some(1)),
    ];
    let st = status(&[
        (0, Some((50 * GIB, 100 * GIB)), Some((5 * GIB, 10 * GIB))),
        (
            1,
            Some((9 * GIB + GIB / 2, 100 * GIB)),
            Some((512 << 20, 10 * GIB)),
        ),
    ]);
    let a = assess(&views, Some(&st), None, 10);
    let c = a.condition.unwrap();
    assert_eq!(
        (c.type_, c.status, c.reason),
        (
            cc::CONDITION_STORAGE_CAPACITY_LOW,
            true,
            reason::REASON_STORAGE_CAPACITY_LOW
        )
    );
    assert_eq!(
        c.message,
        "garage-storage-1: data partition 9.5 GiB free of 100.0 GiB (9.5%); garage-storage-1: metadata partition 512.0 MiB free of 10.0 GiB (5.0%). Below 10% free, new drains and storage rollouts wait until space is added or freed"
    );
    assert_eq!(
        a.hold.as_deref(),
        Some("garage-storage-1 is low on disk space (StorageCapacityLow)")
    );
    let note = a.note.unwrap();
    assert!(note.warning);
    assert_eq!(note.reason, reason::REASON_STORAGE_CAPACITY_LOW);
    assert_eq!(note.message, c.message);
}

#[test]
fn many_low_partitions_are_counted_past_the_first_few() {
    let views: Vec<MemberView> = (0..10u8).map(|n| view(&format!("m{n}"), Some(n))).collect();
    let st = status(
        &(0..10u8)
            .map(|n| (n, Some((1, 100)), None))
            .collect::<Vec<_>>(),
    );
    let a = assess(&views, Some(&st), None, 10);
    let message = a.condition.unwrap().message;
    assert!(message.contains("m7: data"), "{message}");
    assert!(!message.contains("m8: data"), "{message}");
    assert!(message.contains("; 2 more. Below 10% free"), "{message}");
    assert!(
        a.hold
            .unwrap()
            .starts_with("m0, m1, m2, m3, m4, m5, m6, m7, m8, m9 are low"),
        "every low member holds, named or not"
    );
}

#[test]
fn the_condition_follows_what_garage_reported_and_what_was_reported_before() {
    let views = [view("m", Some(1))];
    let low = status(&[(1, Some((1, 100)), None)]);
    let fine = status(&[(1, Some((90, 100)), None)]);
    let was_low = previous(
        "True",
        "m: data partition 1 B free of 100 B (1.0%). earlier",
    );
    let was_fine = previous("False", "");
    // (status read, previous condition, expected (status, reason) or absent, holds, Event)
    type Case<'a> = (
        Option<&'a ClusterStatus>,
        Option<&'a Condition>,
        Option<(bool, &'static str)>,
        bool,
        bool,
    );
    let cases: [Case; 9] = [
        (
            Some(&fine),
            None,
            Some((false, reason::REASON_STORAGE_CAPACITY_SUFFICIENT)),
            false,
            false,
        ),
        (
            Some(&fine),
            Some(&was_low),
            Some((false, reason::REASON_STORAGE_CAPACITY_SUFFICIENT)),
            false,
            false,
        ),
        // The Event is sent on the way into the shortage only.
        (
            Some(&low),
            None,
            Some((true, reason::REASON_STORAGE_CAPACITY_LOW)),
            true,
            true,
        ),
        (
            Some(&low),
            Some(&was_fine),
            Some((true, reason::REASON_STORAGE_CAPACITY_LOW)),
            true,
            true,
        ),
        (
            Some(&low),
            Some(&was_low),
            Some((true, reason::REASON_STORAGE_CAPACITY_LOW)),
            true,
            false,
        ),
        // Garage unreadable: a known shortage stands (and holds), nothing else is claimed.
        (
            None,
            Some(&was_low),
            Some((true, reason::REASON_STORAGE_CAPACITY_LOW)),
            true,
            false,
        ),
        (None, Some(&was_fine), None, false, false),
        (None, None, None, false, false),
        // Members Garage reports no space for are not called fine or low: nothing is low.
        (
            Some(&status(&[(1, None, None)])),
            None,
            Some((false, reason::REASON_STORAGE_CAPACITY_SUFFICIENT)),
            false,
            false,
        ),
    ];
    for (i, (read, before, condition, holds, event)) in cases.into_iter().enumerate() {
        let a = assess(&views, read, before, 10);
        assert_eq!(
            a.condition.as_ref().map(|c| (c.status, c.reason)),
            condition,
            "case {i}"
        );
        assert_eq!(a.hold.is_some(), holds, "case {i}: {:?}", a.hold);
        assert_eq!(a.note.is_some(), event, "case {i}: {:?}", a.note);
    }
    // The kept shortage is the last reading, word for word, so its status is not rewritten.
    let kept = assess(&views, None, Some(&was_low), 10).condition.unwrap();
    assert_eq!(kept.message, was_low.message);
}

#[test]
fn the_sufficient_message_names_the_threshold_or_says_the_check_is_off() {
    let views = [view("m", Some(1))];
    let st = status(&[(1, Some((0, 100)), None)]);
    let off = assess(&views, Some(&st), None, 0).condition.unwrap();
    assert_eq!(
        (off.status, off.message.as_str()),
        (false, "the free-space check is off (threshold 0%)")
    );
    let st = status(&[(1, Some((50, 100)), None)]);
    let on = assess(&views, Some(&st), None, 15).condition.unwrap();
    assert!(on.message.contains("at least 15% free"), "{}", on.message);
}

#[test]
fn sizes_and_percentages_are_rounded_down_to_a_tenth() {
    let cases: [(u64, &str); 7] = [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (GIB - 1, "1023.9 MiB"),
        (5 * GIB + GIB / 4, "5.2 GiB"),
        (u64::MAX, "15.9 EiB"),
    ];
    for (n, expected) in cases {
        assert_eq!(human_bytes(n), expected, "{n}");
    }
    let cases: [(u64, u64, &str); 4] = [
        (9_999, 100_000, "9.9%"),
        (10, 100, "10.0%"),
        (0, 100, "0.0%"),
        (u64::MAX, u64::MAX, "100.0%"),
    ];
    for (available, total, expected) in cases {
        assert_eq!(
            tenths_percent(available, total),
            expected,
            "{available}/{total}"
        );
    }
}

#[test]
fn the_threshold_is_a_whole_percentage_and_a_bad_one_names_the_variable() {
    let cases: [(&str, Option<u8>); 10] = [
        ("10", Some(10)),
        ("0", Some(0)),
        ("100", Some(100)),
        (" 15 ", Some(15)),
        ("101", None),
        ("255", None),
        ("-1", None),
        ("10.5", None),
        ("10%", None),
        ("", None),
    ];
    for (value, expected) in cases {
        let got = parse_low_percent(value);
        assert_eq!(got.as_ref().ok().copied(), expected, "{value:?}: {got:?}");
        if let Err(e) = got {
            assert!(
                e.starts_with(&format!("{LOW_PERCENT_ENV}={value:?} ")),
                "{e}"
            );
            assert!(e.contains("0 to 100"), "{e}");
        }
    }
}

/// An assessment that holds for `why`, if any.
fn holding(why: Option<&str>) -> Assessment {
    Assessment {
        hold: why.map(str::to_owned),
        ..Assessment::default()
    }
}

fn record_step() -> Step {
    Step::Record(StorageDrainStatus::default())
}

#[test]
fn a_low_member_holds_a_new_drain_and_not_a_recorded_one() {
    let why = "m is low on disk space (StorageCapacityLow)";
    let remove = Step::RemoveRole {
        id: id(3),
        version: 2,
    };
    // (hold, drain recorded, step, held)
    let cases: [(Option<&str>, bool, Option<Step>, bool); 6] = [
        (Some(why), false, Some(record_step()), true),
        // A recorded drain writes its evidence with Record too: it goes on.
        (Some(why), true, Some(record_step()), false),
        (Some(why), true, Some(remove.clone()), false),
        (Some(why), false, Some(Step::Idle), false),
        (Some(why), false, None, false),
        (None, false, Some(record_step()), false),
    ];
    for (i, (hold, recorded, step, held)) in cases.into_iter().enumerate() {
        let before = Removal {
            step: step.clone(),
            conditions: vec![removal::drain_condition(None, step.as_ref())],
            ..Default::default()
        };
        let after = holding(hold).hold_drain(before.clone(), recorded);
        if !held {
            assert_eq!(after, before, "case {i}");
            continue;
        }
        let Some(Step::Wait { reason: r, message }) = &after.step else {
            panic!("case {i}: not held: {:?}", after.step);
        };
        assert_eq!(*r, reason::REASON_STORAGE_CAPACITY_LOW, "case {i}");
        assert!(message.starts_with(why), "case {i}: {message}");
        // The drain's own condition says why, once.
        let drain: Vec<&Desired> = after
            .conditions
            .iter()
            .filter(|c| c.type_ == cc::CONDITION_STORAGE_DRAIN_READY)
            .collect();
        assert_eq!(drain.len(), 1, "case {i}: {drain:?}");
        assert_eq!(
            (drain[0].status, drain[0].reason, &drain[0].message),
            (false, reason::REASON_STORAGE_CAPACITY_LOW, message),
            "case {i}"
        );
    }
}

#[test]
fn a_low_member_holds_a_new_rollout_and_not_a_recorded_one() {
    let why = "m is low on disk space (StorageCapacityLow)";
    let record = || machine_rollout::Step::Record(Box::default());
    let delete = machine_rollout::Step::DeletePod {
        name: "p".into(),
        uid: "u".into(),
    };
    // (hold, rollout recorded, step, held)
    let cases: [(Option<&str>, bool, machine_rollout::Step, bool); 5] = [
        (Some(why), false, record(), true),
        // A recorded rollout re-records a replaced workload with Record: it goes on.
        (Some(why), true, record(), false),
        (Some(why), true, delete.clone(), false),
        (Some(why), false, machine_rollout::Step::Converged, false),
        (None, false, record(), false),
    ];
    for (i, (hold, recorded, step, held)) in cases.into_iter().enumerate() {
        let after = holding(hold).hold_rollout(step.clone(), recorded);
        if !held {
            assert_eq!(after, step, "case {i}");
            continue;
        }
        let c = machine_rollout::condition(&after, None);
        assert_eq!(
            (c.status, c.reason),
            (false, reason::REASON_STORAGE_CAPACITY_LOW),
            "case {i}"
        );
        assert!(c.message.starts_with(why), "case {i}: {}", c.message);
    }
}
