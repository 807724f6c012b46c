//! Table tests of the capability verdict.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::*;

fn pod(gated: bool, scheduled: Option<(&str, &str)>, node: Option<&str>) -> Pod {
    let mut v = json!({
        "metadata": {"name": "g-gate-probe"},
        "spec": {"containers": [{"name": "probe", "image": "x"}]},
        "status": {},
    });
    if gated {
        v["spec"]["schedulingGates"] = json!([{"name": PROBE_GATE}]);
    }
    if let Some(n) = node {
        v["spec"]["nodeName"] = json!(n);
    }
    if let Some((status, reason)) = scheduled {
        v["status"]["conditions"] = json!([{
            "type": "PodScheduled", "status": status, "reason": reason,
            "lastTransitionTime": "2026-12-01T00:00:00Z"
        }]);
    }
    serde_json::from_value(v).unwrap()
}

#[test]
fn only_a_gated_unscheduled_pod_on_a_recent_server_proves_the_capability() {
    let proven = pod(true, Some(("False", "SchedulingGated")), None);
    assert!(matches!(
        verdict("1", "36", true, Some(&proven)),
        Verdict::Proven(_)
    ));
    assert!(matches!(
        verdict("1", "27+", true, Some(&proven)),
        Verdict::Proven(_)
    ));
    let old = verdict("1", "26", true, Some(&proven));
    assert!(
        matches!(old, Verdict::Unavailable { reason: r, .. } if r == reason::REASON_UNSUPPORTED_KUBERNETES_VERSION)
    );
    let dropped = verdict("1", "36", false, Some(&proven));
    assert!(
        matches!(dropped, Verdict::Unavailable { reason: r, .. } if r == reason::REASON_SCHEDULING_GATES_UNAVAILABLE)
    );
    let gate_gone = verdict("1", "36", true, Some(&pod(false, None, None)));
    assert!(
        matches!(gate_gone, Verdict::Unavailable { reason: r, .. } if r == reason::REASON_SCHEDULING_GATES_UNAVAILABLE)
    );
    let bound = verdict("1", "36", true, Some(&pod(true, None, Some("n1"))));
    assert!(
        matches!(bound, Verdict::Unavailable { reason: r, .. } if r == reason::REASON_SCHEDULING_GATES_UNAVAILABLE)
    );
    let other = verdict(
        "1",
        "36",
        true,
        Some(&pod(true, Some(("False", "Unschedulable")), None)),
    );
    assert!(
        matches!(other, Verdict::Unavailable { reason: r, .. } if r == reason::REASON_SCHEDULING_GATE_CAPABILITY_UNKNOWN)
    );
    assert!(matches!(
        verdict("1", "36", true, Some(&pod(true, None, None))),
        Verdict::Pending(_)
    ));
}

#[test]
fn evidence_is_kept_thirty_seconds_per_namespace() {
    let cache = EvidenceCache::default();
    let at = Timestamp::from_second(1_000).unwrap();
    cache.record("a", at);
    assert_eq!(cache.fresh("a", at + Duration::from_secs(29)), Some(at));
    assert_eq!(cache.fresh("a", at + Duration::from_secs(30)), None);
    assert_eq!(cache.fresh("b", at), None, "scoped to its namespace");
}
