//! Table tests of a bucket Garage cannot read back.

#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;
use crate::garage_objects::fixtures::bucket;

fn counted(timeouts: Option<&str>, decodes: Option<&str>) -> GarageBucket {
    let mut annotations = serde_json::Map::new();
    if let Some(v) = timeouts {
        annotations.insert(ANNOTATION_BUCKET_LOOKUP_TIMEOUTS.into(), json!(v));
    }
    if let Some(v) = decodes {
        annotations.insert(ANNOTATION_BUCKET_DECODE_ERRORS.into(), json!(v));
    }
    bucket("b", json!({"metadata": {"annotations": annotations}}))
}

fn cluster(pending: Option<&str>) -> ClusterRef {
    ClusterRef {
        namespace: "garage".into(),
        name: "g".into(),
        pending_repair: pending.map(str::to_owned),
        resource_version: Some("7".into()),
    }
}

fn timeout() -> LookupFailure {
    LookupFailure::Timeout("GetBucketInfo: no answer within 10s".into())
}

fn decode() -> LookupFailure {
    LookupFailure::MetadataDecode(
        "GetBucketInfo: HTTP 500 (InternalError): Unable to decode entry of key".into(),
    )
}

#[test]
fn timeouts_are_counted_and_the_third_in_a_row_raises_the_condition() {
    let cases = [
        (None, Some("1"), false),
        (Some("1"), Some("2"), false),
        (Some("2"), Some("3"), true),
        // At the threshold the count stops: no write, so no pass woken by one.
        (Some("3"), None, true),
        (Some("7"), None, true),
        // A value the operator did not write starts the count again.
        (Some("many"), Some("1"), false),
    ];
    for (before, after, raised) in cases {
        let v = unreadable(&counted(before, None), &timeout(), &cluster(None));
        let moved: Vec<Count> = after
            .map(|a| Count {
                key: ANNOTATION_BUCKET_LOOKUP_TIMEOUTS,
                from: before.map(str::to_owned),
                to: Some(a.into()),
            })
            .into_iter()
            .collect();
        assert_eq!(v.counts, moved, "{before:?}");
        assert_eq!(v.reason, reason::REASON_BUCKET_LOOKUP_STUCK);
        assert!(v.message.contains("no answer within 10s"), "{}", v.message);
        assert!(
            !v.request_repair,
            "a timeout never asks for a repair itself"
        );
        assert_eq!(v.condition.is_some(), raised, "{before:?}");
        if let Some(c) = v.condition {
            assert_eq!(c.type_, bucket_conditions::CONDITION_BUCKET_LOOKUP_STUCK);
            assert!(
                c.message
                    .contains("trigger-repair=Aliases on GarageCluster garage/g"),
                "{}",
                c.message
            );
        }
    }
}

#[test]
fn the_third_decode_failure_asks_the_cluster_for_one_tables_repair() {
    // (count before, pending request on the cluster, repair asked for, condition raised)
    let cases = [
        (None, None, false, false),
        (Some("1"), None, false, false),
        (Some("2"), None, true, true),
        // Another request waits on the cluster: it is not overwritten.
        (Some("2"), Some("Blocks"), false, true),
        // Past the third: not again (bounded), the condition stays.
        (Some("3"), None, false, true),
        (Some("40"), None, false, true),
    ];
    for (before, pending, asked, raised) in cases {
        let v = unreadable(&counted(None, before), &decode(), &cluster(pending));
        assert_eq!(v.request_repair, asked, "{before:?} {pending:?}");
        assert_eq!(v.condition.is_some(), raised, "{before:?} {pending:?}");
        assert_eq!(v.reason, reason::REASON_METADATA_DECODE_ERROR);
        if let Some(c) = &v.condition {
            assert_eq!(
                c.type_,
                bucket_conditions::CONDITION_BUCKET_METADATA_DEGRADED
            );
            let says = match (asked, pending) {
                (true, _) => "is requested on GarageCluster garage/g now",
                (false, Some(_)) => "already carries garage.rajsingh.info/trigger-repair=Blocks",
                (false, None) => "at the 3rd failure in a row",
            };
            assert!(c.message.contains(says), "{}", c.message);
        }
    }
}

#[test]
fn a_streak_of_the_other_kind_is_cleared() {
    let v = unreadable(&counted(Some("2"), None), &decode(), &cluster(None));
    assert_eq!(
        v.counts,
        vec![
            Count {
                key: ANNOTATION_BUCKET_DECODE_ERRORS,
                from: None,
                to: Some("1".into()),
            },
            Count {
                key: ANNOTATION_BUCKET_LOOKUP_TIMEOUTS,
                from: Some("2".into()),
                to: None,
            },
        ]
    );
}

#[test]
fn a_bucket_read_again_clears_both_counts() {
    assert_eq!(recovered(&counted(None, None)), Vec::new());
    let cleared = recovered(&counted(Some("4"), Some("1")));
    assert_eq!(
        cleared
            .iter()
            .map(|c| (c.key, c.from.as_deref(), c.to.as_deref()))
            .collect::<Vec<_>>(),
        vec![
            (ANNOTATION_BUCKET_LOOKUP_TIMEOUTS, Some("4"), None),
            (ANNOTATION_BUCKET_DECODE_ERRORS, Some("1"), None),
        ]
    );
}
