use serde_json::json;

use super::*;

/// A claim with `request` and, when bound, reported `capacity` and resize conditions.
fn pvc(
    phase: &str,
    request: &str,
    capacity: Option<&str>,
    conditions: &[&str],
) -> PersistentVolumeClaim {
    let mut status = json!({"phase": phase});
    if let Some(c) = capacity {
        status["capacity"] = json!({"storage": c});
    }
    status["conditions"] = json!(
        conditions
            .iter()
            .map(|t| json!({"type": t, "status": "True"}))
            .collect::<Vec<_>>()
    );
    serde_json::from_value(json!({
        "metadata": {"name": "x"},
        "spec": {"resources": {"requests": {"storage": request}}},
        "status": status,
    }))
    .unwrap()
}

fn sized(want: &str, pvc: Option<PersistentVolumeClaim>, refused: Option<&str>) -> Sized {
    Sized {
        name: "data-n-0".into(),
        want: Quantity(want.into()),
        pvc,
        refused: refused.map(str::to_owned),
    }
}

fn types(p: &ExpansionPlan) -> Vec<(&'static str, &'static str)> {
    p.conditions.iter().map(|c| (c.type_, c.reason)).collect()
}

#[test]
fn a_bound_claim_below_its_size_is_asked_to_grow() {
    let p = plan(&[sized(
        "20Gi",
        Some(pvc("Bound", "10Gi", Some("10Gi"), &[])),
        None,
    )]);
    assert_eq!(
        p.patches,
        vec![("data-n-0".to_owned(), Quantity("20Gi".into()))]
    );
    assert_eq!(
        types(&p),
        [(
            node_conditions::CONDITION_STORAGE_EXPANSION_IN_PROGRESS,
            reason::REASON_RESIZING
        )]
    );
    assert_eq!(p.notes.len(), 1);
}

#[test]
fn claims_never_shrink_and_a_claim_at_its_size_is_left_alone() {
    for want in ["10Gi", "5Gi", "10737418240"] {
        let p = plan(&[sized(
            want,
            Some(pvc("Bound", "10Gi", Some("10Gi"), &[])),
            None,
        )]);
        assert_eq!(p, ExpansionPlan::default(), "{want}");
    }
}

#[test]
fn a_claim_not_yet_grown_or_resizing_is_in_progress_without_a_patch() {
    for (capacity, conditions) in [
        (Some("10Gi"), &[][..]),
        (None, &[][..]),
        (Some("20Gi"), &["FileSystemResizePending"][..]),
        (Some("10Gi"), &["Resizing"][..]),
    ] {
        let p = plan(&[sized(
            "20Gi",
            Some(pvc("Bound", "20Gi", capacity, conditions)),
            None,
        )]);
        assert!(p.patches.is_empty());
        assert_eq!(
            types(&p),
            [(
                node_conditions::CONDITION_STORAGE_EXPANSION_IN_PROGRESS,
                reason::REASON_RESIZING
            )],
            "{capacity:?} {conditions:?}"
        );
    }
    let done = plan(&[sized(
        "20Gi",
        Some(pvc("Bound", "20Gi", Some("20Gi"), &[])),
        None,
    )]);
    assert_eq!(done, ExpansionPlan::default());
}

#[test]
fn a_refused_claim_is_blocked_by_name_and_not_asked_again() {
    let p = plan(&[sized(
        "20Gi",
        Some(pvc("Bound", "10Gi", Some("10Gi"), &[])),
        Some("forbidden: only dynamically provisioned pvc can be resized"),
    )]);
    assert!(p.patches.is_empty());
    assert_eq!(
        types(&p),
        [(
            node_conditions::CONDITION_STORAGE_EXPANSION_BLOCKED,
            reason::REASON_EXPANSION_REFUSED
        )]
    );
    let message = &p.conditions[0].message;
    assert!(
        message.contains("data-n-0") && message.contains("allowVolumeExpansion"),
        "{message}"
    );
}

#[test]
fn unbound_or_missing_claims_are_created_at_their_size_and_not_patched() {
    let p = plan(&[
        sized("20Gi", None, None),
        sized("20Gi", Some(pvc("Pending", "10Gi", None, &[])), None),
    ]);
    assert_eq!(p, ExpansionPlan::default());
}

#[test]
fn only_a_bound_claim_with_the_space_and_no_resize_pending_proves_it() {
    let gi = |n: u64| n << 30;
    assert!(proves(&pvc("Bound", "20Gi", Some("20Gi"), &[]), gi(20)));
    assert!(proves(&pvc("Bound", "20Gi", Some("21Gi"), &[]), gi(20)));
    assert!(!proves(&pvc("Bound", "20Gi", Some("10Gi"), &[]), gi(20)));
    assert!(!proves(&pvc("Bound", "20Gi", None, &[]), gi(20)));
    assert!(!proves(
        &pvc("Bound", "20Gi", Some("20Gi"), &["FileSystemResizePending"]),
        gi(20)
    ));
    assert!(!proves(&pvc("Pending", "20Gi", Some("20Gi"), &[]), gi(20)));
}
