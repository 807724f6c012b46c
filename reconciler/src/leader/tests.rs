//! The timing decisions of leader election, with no API server: instants are built from one
//! base on the monotonic clock.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::status::Status;
use super::timing::{
    Observation, Record, Timing, TimingError, expired, may_take, still_leading, stuck, tenure_end,
};

const D: Duration = Timing::DEFAULT.lease_duration;
const RD: Duration = Timing::DEFAULT.renew_deadline;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn held(rv: &str, holder: &str, stamp: Timestamp) -> Record {
    Record {
        resource_version: Some(rv.into()),
        holder: Some(holder.into()),
        renew_stamp: Some(stamp),
        lease_duration: Some(D),
    }
}

fn stamp(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

#[test]
fn an_unchanged_record_keeps_the_moment_it_was_first_seen() {
    let t0 = Instant::now();
    let first = Observation::next(None, held("1", "a", stamp(100)), t0);
    assert_eq!(first.since, t0);
    let again = Observation::next(
        Some(first.clone()),
        held("1", "a", stamp(100)),
        t0 + ms(9000),
    );
    assert_eq!(
        again.since, t0,
        "the same record read later is not a new observation"
    );
}

#[test]
fn any_change_of_the_record_restarts_the_wait() {
    let t0 = Instant::now();
    let later = t0 + ms(3000);
    let seen = Observation::next(None, held("1", "a", stamp(100)), t0);
    let changes = [
        ("resourceVersion", held("2", "a", stamp(100))),
        ("renew stamp", held("1", "a", stamp(101))),
        ("holder", held("1", "b", stamp(100))),
        (
            "declared duration",
            Record {
                lease_duration: Some(ms(20_000)),
                ..held("1", "a", stamp(100))
            },
        ),
    ];
    for (what, record) in changes {
        let next = Observation::next(Some(seen.clone()), record, later);
        assert_eq!(next.since, later, "a changed {what} is a new observation");
    }
}

#[test]
fn a_holder_expires_only_after_the_lease_duration_on_the_observers_clock() {
    let t0 = Instant::now();
    let seen = Observation::next(None, held("1", "a", stamp(100)), t0);
    // (elapsed since first seen, expired)
    let table = [
        (ms(0), false),
        (ms(14_999), false),
        (D, true),
        (ms(15_001), true),
        (ms(600_000), true),
    ];
    for (elapsed, want) in table {
        assert_eq!(expired(&seen, D, t0 + elapsed), want, "after {elapsed:?}");
        assert_eq!(may_take(&seen, D, t0 + elapsed), want, "after {elapsed:?}");
    }
}

#[test]
fn the_renew_stamp_is_never_compared_with_the_observers_clock() {
    // A holder whose wall clock is years behind or ahead, or a record read for the first time
    // long after its last renewal: the wait starts when *this* process saw it, whatever it says.
    let t0 = Instant::now();
    let now_wall = Timestamp::now().as_second();
    for renew in [0, now_wall - 3600, now_wall, now_wall + 86_400 * 365] {
        let seen = Observation::next(None, held("7", "a", stamp(renew)), t0);
        assert!(!expired(&seen, D, t0 + D - ms(1)), "stamp {renew}");
        assert!(expired(&seen, D, t0 + D), "stamp {renew}");
    }
}

#[test]
fn the_longer_of_the_declared_and_own_duration_is_waited() {
    let t0 = Instant::now();
    let declared = |secs| Record {
        lease_duration: Some(Duration::from_secs(secs)),
        ..held("1", "a", stamp(100))
    };
    // (declared, own, waited)
    let table = [
        (Some(30), D, Duration::from_secs(30)),
        (Some(5), D, D),
        (Some(0), D, D),
        (None, D, D),
    ];
    for (theirs, own, waited) in table {
        let record = match theirs {
            Some(secs) => declared(secs),
            None => Record {
                lease_duration: None,
                ..held("1", "a", stamp(100))
            },
        };
        let seen = Observation::next(None, record, t0);
        assert!(!expired(&seen, own, t0 + waited - ms(1)), "{theirs:?}");
        assert!(expired(&seen, own, t0 + waited), "{theirs:?}");
    }
}

#[test]
fn a_free_lease_may_be_taken_at_once() {
    let t0 = Instant::now();
    for holder in [None, Some(String::new())] {
        let record = Record {
            resource_version: Some("3".into()),
            holder: holder.clone(),
            renew_stamp: None,
            lease_duration: Some(D),
        };
        assert!(record.is_free());
        let seen = Observation::next(None, record, t0);
        assert!(may_take(&seen, D, t0), "holder {holder:?}");
        assert!(!expired(&seen, D, t0), "free is not the same as expired");
    }
}

#[test]
fn a_holder_leads_until_the_deadline_after_it_sent_its_last_successful_renewal() {
    let t0 = Instant::now();
    // (answer arrived after, now, leading): the answer time never matters.
    let table = [
        (ms(5), ms(0), true),
        (ms(5), RD - ms(1), true),
        (ms(5), RD, false),
        (ms(9_500), RD - ms(1), true),
        (ms(9_500), RD, false),
        // An answer that came after the deadline extends nothing.
        (ms(12_000), ms(12_000), false),
    ];
    for (answered, now, want) in table {
        assert_eq!(
            still_leading(t0, RD, t0 + now),
            want,
            "sent at 0, answered at {answered:?}, asked at {now:?}"
        );
    }
    assert_eq!(tenure_end(t0, RD), t0 + RD);
}

#[test]
fn the_holder_stops_before_any_contender_can_take_the_record_over() {
    // The holder sends at s; the API server writes the record at c >= s; a contender's read
    // answers at o >= c and it may write a takeover at o + D at the earliest. Whatever the
    // latencies, the holder's tenure has ended by then with D - RD to spare.
    let s = Instant::now();
    for to_commit in [0, 1, 50, 3_000, 9_999, 30_000] {
        for to_read in [0, 1, 2_000, 14_000] {
            let observed_at = s + ms(to_commit) + ms(to_read);
            let seen = Observation::next(None, held("9", "h", stamp(1)), observed_at);
            let earliest_takeover = (0..=60_000u64)
                .step_by(250)
                .map(|t| observed_at + ms(t))
                .find(|t| may_take(&seen, D, *t))
                .unwrap();
            let end = tenure_end(s, RD);
            assert!(
                end + (D - RD) <= earliest_takeover,
                "commit +{to_commit} ms, read +{to_read} ms"
            );
            assert!(!still_leading(s, RD, earliest_takeover));
        }
    }
}

#[test]
fn a_loop_is_stuck_past_its_limit() {
    let t0 = Instant::now();
    let limit = Timing::DEFAULT.stuck_after();
    assert!(!stuck(t0, limit, t0));
    assert!(!stuck(t0, limit, t0 + limit));
    assert!(stuck(t0, limit, t0 + limit + ms(1)));
    // A beat in the future of `now` (read before it was written) is not stuck.
    assert!(!stuck(t0 + ms(10), limit, t0));
}

#[test]
fn timings_that_could_let_two_lead_are_refused() {
    let t = |d, rd, retry| Timing {
        lease_duration: ms(d),
        renew_deadline: ms(rd),
        retry_period: ms(retry),
    };
    assert_eq!(Timing::DEFAULT.check(), Ok(()));
    assert_eq!(t(6_000, 4_000, 500).check(), Ok(()));
    assert_eq!(
        t(10_000, 10_000, 2_000).check(),
        Err(TimingError::DurationNotAfterDeadline)
    );
    assert_eq!(
        t(10_000, 12_000, 2_000).check(),
        Err(TimingError::DurationNotAfterDeadline)
    );
    assert_eq!(
        t(15_000, 2_000, 2_000).check(),
        Err(TimingError::DeadlineNotAfterRetry)
    );
    assert_eq!(t(15_000, 10_000, 0).check(), Err(TimingError::ZeroRetry));
}

#[test]
fn the_declared_duration_is_rounded_up_and_the_stuck_limit_covers_an_iteration() {
    assert_eq!(Timing::DEFAULT.lease_duration_seconds(), 15);
    let odd = Timing {
        lease_duration: ms(6_500),
        ..Timing::DEFAULT
    };
    assert_eq!(odd.lease_duration_seconds(), 7);
    let t = Timing::DEFAULT;
    // Two bounded requests and a retry pause make the longest iteration of either loop.
    assert!(t.stuck_after() > t.renew_deadline * 2 + t.retry_period);
}

#[test]
fn the_status_leads_only_within_its_tenure_and_goes_dead_without_beats() {
    let t0 = Instant::now();
    let timing = Timing::DEFAULT;
    let status = Status::new(&timing, t0);
    assert!(!status.leading(t0), "a new contender is a standby");
    assert!(status.live(t0));
    assert!(!status.live(t0 + timing.stuck_after() + ms(1)));

    status.acquired(t0 + ms(100));
    assert!(status.leading(t0 + ms(100)));
    assert!(status.leading(t0 + ms(100) + RD - ms(1)));
    assert!(
        !status.leading(t0 + ms(100) + RD),
        "not renewed: over at the deadline"
    );

    status.renewed(t0 + ms(2_000));
    assert_eq!(status.tenure_end(), Some(t0 + ms(2_000) + RD));
    // An answer to an older renewal arriving late never moves the end back.
    status.renewed(t0 + ms(1_000));
    assert_eq!(status.tenure_end(), Some(t0 + ms(2_000) + RD));
    assert_eq!(status.tenure().unwrap().since, t0 + ms(100));

    status.beat(t0 + ms(30_000));
    assert!(status.live(t0 + ms(30_000) + timing.stuck_after()));

    status.stepped_down();
    assert!(!status.leading(t0 + ms(2_001)));
    assert_eq!(status.tenure_end(), None);
    assert_eq!(
        status.last_tenure().map(|t| (t.since, t.renewed)),
        Some((t0 + ms(100), t0 + ms(2_000))),
        "the tenure that ended stays readable"
    );
}

#[tokio::test]
async fn the_tenure_watch_fires_at_the_end_and_at_once_when_already_over() {
    let timing = Timing {
        lease_duration: ms(300),
        renew_deadline: ms(200),
        retry_period: ms(50),
    };
    let status = Status::new(&timing, Instant::now());
    // No tenure at all: over.
    super::tenure_over(&status).await;

    let sent = Instant::now();
    status.acquired(sent);
    super::tenure_over(&status).await;
    let at = Instant::now();
    assert!(at >= sent + ms(200), "fired {:?} after the send", at - sent);
    assert!(
        at < sent + ms(1_000),
        "fired {:?} after the send",
        at - sent
    );
    // Already over when first polled: resolves without waiting.
    let before = Instant::now();
    super::tenure_over(&status).await;
    assert!(before.elapsed() < ms(50));
}
