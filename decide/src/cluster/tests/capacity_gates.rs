//! Table tests of the GarageCluster decision with a member low on disk space: what it
//! reports, the Event on the way in, and the hold on a new drain and a new storage rollout.

use shared_types::conditions::cluster::{
    CONDITION_STORAGE_CAPACITY_LOW, CONDITION_STORAGE_DRAIN_READY, CONDITION_STORAGE_ROLLOUT_READY,
};

use super::transitions::with_statefulset_revision;
use super::*;
use crate::conditions::Desired;
use crate::machine::drain::Step as DrainStep;
use crate::machine::rollout::Step as RolloutStep;
use garage_api_types::FreeSpace;

const GIB: u64 = 1 << 30;

/// Garage reports 1 GiB of 100 GiB free on the data partition of node `n`.
fn data_low(o: &mut Observed, n: u8) {
    let GarageView::Read(r) = &mut o.garage else {
        panic!("Garage is not read");
    };
    r.status
        .nodes
        .iter_mut()
        .find(|node| node.id == id(n))
        .unwrap()
        .data_partition = Some(FreeSpace {
        available: GIB,
        total: 100 * GIB,
    });
}

fn condition<'a>(d: &'a Decision, type_: &str) -> Option<&'a Desired> {
    d.conditions.iter().find(|c| c.type_ == type_)
}

/// The next pass, with what this one published as the cluster's status.
fn published(mut o: Observed, d: &Decision, drain: bool, rollout: bool) -> Observed {
    let mut c = (*o.cluster).clone();
    let st = c.status.get_or_insert_default();
    st.conditions = Some(conditions::merge(
        st.conditions.as_deref(),
        &d.conditions,
        OWNED,
        Some(1),
    ));
    if let (true, Some(DrainStep::Record(r))) = (drain, &d.drain) {
        st.storage_drain = Some(r.clone());
    }
    if let (true, Some(RolloutStep::Record(r))) = (rollout, &d.rollout) {
        st.storage_rollout = Some((**r).clone());
    }
    o.cluster = Arc::new(c);
    o
}

#[test]
fn a_low_member_holds_a_new_rollout_and_says_so_and_no_low_member_changes_nothing() {
    for low in [false, true] {
        let mut o = converged();
        with_statefulset_revision(&mut o, "garage-storage-1", "rev-2");
        if low {
            data_low(&mut o, 2);
        }
        let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
        let rollout = condition(&d, CONDITION_STORAGE_ROLLOUT_READY).unwrap();
        let capacity = condition(&d, CONDITION_STORAGE_CAPACITY_LOW).unwrap();
        if !low {
            assert!(
                matches!(d.rollout, Some(RolloutStep::Record(_))),
                "{:?}",
                d.rollout
            );
            assert_eq!(rollout.reason, reason::REASON_STORAGE_ROLLING_OUT);
            assert_eq!(
                (capacity.status, capacity.reason),
                (false, reason::REASON_STORAGE_CAPACITY_SUFFICIENT)
            );
            assert!(d.notes.is_empty(), "{:?}", d.notes);
            continue;
        }
        assert!(
            d.rollout.is_none(),
            "a new rollout started: {:?}",
            d.rollout
        );
        assert_eq!(
            (rollout.status, rollout.reason),
            (false, reason::REASON_STORAGE_CAPACITY_LOW)
        );
        assert!(
            rollout
                .message
                .starts_with("garage-storage-2 is low on disk space"),
            "{}",
            rollout.message
        );
        assert_eq!(
            (capacity.status, capacity.reason),
            (true, reason::REASON_STORAGE_CAPACITY_LOW)
        );
        assert!(
            capacity
                .message
                .starts_with("garage-storage-2: data partition 1.0 GiB free of 100.0 GiB (1.0%)"),
            "{}",
            capacity.message
        );
        assert_eq!(
            d.requeue,
            timing().short_requeue,
            "a held rollout is looked at again soon"
        );
    }
}

#[test]
fn a_recorded_rollout_goes_on_while_a_member_is_low() {
    let mut o = converged();
    with_statefulset_revision(&mut o, "garage-storage-1", "rev-2");
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let mut o = published(o, &d, false, true);
    data_low(&mut o, 2);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(
        d.rollout,
        Some(RolloutStep::DeletePod {
            name: "garage-storage-1-0".into(),
            uid: "pod-garage-storage-1".into()
        }),
        "the recorded replacement stopped midway"
    );
    assert!(
        condition(&d, CONDITION_STORAGE_CAPACITY_LOW)
            .unwrap()
            .status
    );
}

#[test]
fn a_low_member_holds_a_new_drain_and_no_low_member_changes_nothing() {
    for low in [false, true] {
        let mut o = fourth_asks_to_drain();
        if low {
            data_low(&mut o, 1);
        }
        let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
        let drain = condition(&d, CONDITION_STORAGE_DRAIN_READY).unwrap();
        if !low {
            assert!(
                matches!(d.drain, Some(DrainStep::Record(_))),
                "{:?}",
                d.drain
            );
            assert_ne!(drain.reason, reason::REASON_STORAGE_CAPACITY_LOW);
            continue;
        }
        assert!(d.drain.is_none(), "a new drain started: {:?}", d.drain);
        assert!(d.layout.is_none());
        assert_eq!(
            (drain.status, drain.reason),
            (false, reason::REASON_STORAGE_CAPACITY_LOW)
        );
        assert!(
            drain
                .message
                .starts_with("garage-storage-1 is low on disk space"),
            "{}",
            drain.message
        );
    }
}

#[test]
fn a_recorded_drain_goes_on_while_a_member_is_low() {
    let o = fourth_asks_to_drain();
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let mut o = published(o, &d, true, false);
    data_low(&mut o, 1);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(
        matches!(d.drain, Some(DrainStep::RemoveRole { .. })),
        "the recorded drain stopped midway: {:?}",
        d.drain
    );
    let drain = condition(&d, CONDITION_STORAGE_DRAIN_READY).unwrap();
    assert_ne!(drain.reason, reason::REASON_STORAGE_CAPACITY_LOW);
}

#[test]
fn the_warning_event_is_sent_once_on_the_way_into_a_shortage() {
    let is_capacity = |d: &Decision| {
        d.notes
            .iter()
            .filter(|n| n.warning && n.reason == reason::REASON_STORAGE_CAPACITY_LOW)
            .count()
    };
    let mut o = converged();
    data_low(&mut o, 0);
    let first = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(is_capacity(&first), 1);
    let o = published(o, &first, false, false);
    let second = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(is_capacity(&second), 0, "the Event repeats every pass");
    assert!(
        condition(&second, CONDITION_STORAGE_CAPACITY_LOW)
            .unwrap()
            .status
    );
    // Space freed, then low again: a new shortage, a new Event.
    let mut o = published(o, &second, false, false);
    if let GarageView::Read(r) = &mut o.garage {
        r.status.nodes[0].data_partition = Some(FreeSpace {
            available: 90 * GIB,
            total: 100 * GIB,
        });
    }
    let freed = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(
        !condition(&freed, CONDITION_STORAGE_CAPACITY_LOW)
            .unwrap()
            .status
    );
    let mut o = published(o, &freed, false, false);
    data_low(&mut o, 0);
    let again = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(is_capacity(&again), 1);
}

#[test]
fn an_unreadable_garage_keeps_a_known_shortage_and_claims_nothing_else() {
    let unreadable = |o: Observed| {
        let mut o = o;
        o.garage = GarageView::Unavailable("GetClusterStatus: HTTP 500".into());
        decide(&o, &settings(&o.cluster), &timing()).unwrap()
    };
    // Never read: no condition at all, rather than a "sufficient" nobody measured.
    let d = unreadable(converged());
    assert!(condition(&d, CONDITION_STORAGE_CAPACITY_LOW).is_none());
    // Read low before: the shortage stands as it was, with no second Event.
    let mut o = converged();
    data_low(&mut o, 0);
    let first = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let o = published(o, &first, false, false);
    let d = unreadable(o);
    assert_eq!(
        condition(&d, CONDITION_STORAGE_CAPACITY_LOW),
        condition(&first, CONDITION_STORAGE_CAPACITY_LOW)
    );
    assert!(
        d.notes
            .iter()
            .all(|n| n.reason != reason::REASON_STORAGE_CAPACITY_LOW)
    );
}
