#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::json;

use super::*;

fn pvc(
    phase: &str,
    spec: Option<&str>,
    current: Option<&str>,
    modify: Option<(&str, &str)>,
) -> PersistentVolumeClaim {
    let mut v = json!({
        "metadata": {"name": "x"},
        "spec": {},
        "status": {"phase": phase},
    });
    if let Some(s) = spec {
        v["spec"]["volumeAttributesClassName"] = json!(s);
    }
    if let Some(c) = current {
        v["status"]["currentVolumeAttributesClassName"] = json!(c);
    }
    if let Some((status, target)) = modify {
        v["status"]["modifyVolumeStatus"] =
            json!({"status": status, "targetVolumeAttributesClassName": target});
    }
    serde_json::from_value(v).unwrap()
}

fn claim(name: &str, desired: Option<&str>, pvc: Option<PersistentVolumeClaim>) -> Claim {
    Claim {
        name: name.into(),
        desired: desired.map(str::to_owned),
        pvc,
        refused: false,
    }
}

fn reason_of(p: &VolumePlan) -> (bool, &'static str) {
    let c = p.condition.as_ref().unwrap();
    (c.status, c.reason)
}

#[test]
fn no_class_asked_means_hands_off_and_no_condition() {
    let p = plan(&[claim(
        "data-n-0",
        None,
        Some(pvc("Bound", Some("manual"), Some("manual"), None)),
    )]);
    assert!(p.patches.is_empty());
    assert!(p.condition.is_none());
}

#[test]
fn a_bound_claim_on_another_class_is_patched() {
    let p = plan(&[
        claim(
            "metadata-n-0",
            Some("fast"),
            Some(pvc("Bound", Some("fast"), Some("fast"), None)),
        ),
        claim(
            "data-n-0",
            Some("slow"),
            Some(pvc("Bound", Some("fast"), Some("fast"), None)),
        ),
    ]);
    assert_eq!(p.patches, vec![("data-n-0".to_owned(), "slow".to_owned())]);
    assert_eq!(reason_of(&p), (false, reason::REASON_MODIFY_IN_PROGRESS));
}

#[test]
fn a_pending_claim_waits_for_bind_and_is_not_patched() {
    let p = plan(&[claim(
        "data-n-0",
        Some("slow"),
        Some(pvc("Pending", Some("fast"), None, None)),
    )]);
    assert!(p.patches.is_empty());
    assert_eq!(reason_of(&p), (false, reason::REASON_WAITING_FOR_BIND));
    let p = plan(&[claim("data-n-0", Some("slow"), None)]);
    assert_eq!(reason_of(&p), (false, reason::REASON_WAITING_FOR_BIND));
}

#[test]
fn the_drivers_progress_and_refusal_are_reported() {
    let p = plan(&[claim(
        "data-n-0",
        Some("slow"),
        Some(pvc(
            "Bound",
            Some("slow"),
            Some("fast"),
            Some(("InProgress", "slow")),
        )),
    )]);
    assert!(
        p.patches.is_empty(),
        "a modification in progress is not patched again"
    );
    assert_eq!(reason_of(&p), (false, reason::REASON_MODIFY_IN_PROGRESS));
    let p = plan(&[claim(
        "data-n-0",
        Some("wrong"),
        Some(pvc(
            "Bound",
            Some("wrong"),
            Some("fast"),
            Some(("Infeasible", "wrong")),
        )),
    )]);
    assert!(
        p.patches.is_empty(),
        "an infeasible class is not retried in a loop"
    );
    let c = p.condition.unwrap();
    assert_eq!((c.status, c.reason), (false, reason::REASON_INFEASIBLE));
    assert!(
        c.message.contains("wrong") && c.message.contains("stays on fast"),
        "{}",
        c.message
    );
    let p = plan(&[claim(
        "data-n-0",
        Some("missing"),
        Some(pvc(
            "Bound",
            Some("missing"),
            Some("fast"),
            Some(("Pending", "missing")),
        )),
    )]);
    assert!(p.condition.unwrap().message.contains("does not exist"));
}

#[test]
fn every_claim_on_its_class_is_applied() {
    let p = plan(&[
        claim(
            "metadata-n-0",
            Some("fast"),
            Some(pvc("Bound", Some("fast"), Some("fast"), None)),
        ),
        claim(
            "data-n-0",
            Some("slow"),
            Some(pvc("Bound", Some("slow"), Some("slow"), None)),
        ),
    ]);
    assert!(p.patches.is_empty());
    assert_eq!(reason_of(&p), (true, reason::REASON_APPLIED));
}

#[test]
fn a_refused_claim_is_unsupported_and_not_asked_again() {
    let mut c = claim(
        "data-n-0",
        Some("slow"),
        Some(pvc("Bound", None, None, None)),
    );
    c.refused = true;
    let p = plan(&[c]);
    assert!(p.patches.is_empty());
    assert_eq!(reason_of(&p), (false, reason::REASON_UNSUPPORTED));
}

#[test]
fn the_worst_claim_decides_the_reason() {
    let p = plan(&[
        claim(
            "metadata-n-0",
            Some("fast"),
            Some(pvc("Bound", Some("fast"), Some("fast"), None)),
        ),
        claim(
            "data-n-0",
            Some("wrong"),
            Some(pvc(
                "Bound",
                Some("wrong"),
                Some("fast"),
                Some(("Infeasible", "wrong")),
            )),
        ),
    ]);
    assert_eq!(reason_of(&p), (false, reason::REASON_INFEASIBLE));
}
