//! Tables of the ownership decision: the verdict from the annotation, the step from the
//! verdict and the role, the claim patch, and when the Warning Event repeats.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;
use shared_types::keys::annotation::ANNOTATION_MANAGED_BY_INSTALL as KEY;

use super::*;

fn me() -> Install {
    Install::of_lease("garage-operator", "garage-reconciler-leader")
}

fn annotated(value: Option<&str>) -> BTreeMap<String, String> {
    let mut a = BTreeMap::from([("unrelated".to_owned(), "x".to_owned())]);
    if let Some(v) = value {
        a.insert(KEY.to_owned(), v.to_owned());
    }
    a
}

#[test]
fn the_install_is_the_lease_namespace_and_name() {
    assert_eq!(
        Install::of_lease("ops", "garage-reconciler-leader").as_str(),
        "ops/garage-reconciler-leader"
    );
    assert_eq!(Install::default(), me());
    assert_eq!(me().to_string(), "garage-operator/garage-reconciler-leader");
}

#[test]
fn the_annotation_says_mine_claim_or_foreign() {
    let mine = "garage-operator/garage-reconciler-leader";
    for (value, verdict) in [
        (None, Verdict::Claim),
        (Some(""), Verdict::Claim),
        (Some("   "), Verdict::Claim),
        (Some(mine), Verdict::Mine),
        (
            Some(" garage-operator/garage-reconciler-leader\n"),
            Verdict::Mine,
        ),
        (
            Some("second/garage-reconciler-leader"),
            Verdict::Foreign("second/garage-reconciler-leader".into()),
        ),
        // Same Lease name in another namespace is another install.
        (
            Some("garage-operator/other-leader"),
            Verdict::Foreign("garage-operator/other-leader".into()),
        ),
        // Any value that is not this install keeps it away, a hand-written one included.
        (Some("go-operator"), Verdict::Foreign("go-operator".into())),
        // Comparison is exact apart from surrounding blanks.
        (
            Some("Garage-Operator/garage-reconciler-leader"),
            Verdict::Foreign("Garage-Operator/garage-reconciler-leader".into()),
        ),
    ] {
        assert_eq!(decide(&annotated(value), &me()), verdict, "{value:?}");
    }
}

#[test]
fn only_the_cluster_controller_claims_and_nobody_acts_for_a_foreign_cluster() {
    let other = || Verdict::Foreign("b/lease".into());
    for (verdict, role, step) in [
        (Verdict::Mine, Role::Manager, Step::Go),
        (Verdict::Mine, Role::Member, Step::Go),
        (Verdict::Claim, Role::Manager, Step::Record),
        (Verdict::Claim, Role::Member, Step::Wait),
        (other(), Role::Manager, Step::HandsOff("b/lease".into())),
        (other(), Role::Member, Step::HandsOff("b/lease".into())),
    ] {
        assert_eq!(next(verdict.clone(), role), step, "{verdict:?} {role:?}");
    }
}

#[test]
fn a_claim_is_conditional_on_the_resource_version_read() {
    assert_eq!(
        claim_patch(Some("4711"), &me()),
        Some(json!({"metadata": {
            "resourceVersion": "4711",
            "annotations": {KEY: "garage-operator/garage-reconciler-leader"},
        }}))
    );
    // Without a version the write would be unconditional: none is made.
    assert_eq!(claim_patch(None, &me()), None);
    assert_eq!(claim_patch(Some(""), &me()), None);
}

#[test]
fn the_warning_names_the_other_install_and_the_hand_over() {
    let m = handover_message("storage", "garage", "b/lease", &me());
    assert!(m.contains("managed by install b/lease"), "{m}");
    assert!(
        m.contains(&format!(
            "kubectl annotate garagecluster -n storage garage {KEY}=garage-operator/garage-reconciler-leader --overwrite"
        )),
        "{m}"
    );
    assert!(m.contains("stop b/lease first"), "{m}");
    assert!(m.len() <= 1000, "Event notes are cut at 1000 bytes");
}

#[test]
fn a_warning_repeats_on_a_new_generation_or_owner_or_after_the_interval() {
    let t = Instant::now();
    let last = Warned {
        generation: Some(3),
        other: "b/lease".into(),
        at: t,
    };
    let minute = Duration::from_secs(60);
    for (previous, generation, other, at, due) in [
        (None, Some(3), "b/lease", t, true),
        (Some(&last), Some(3), "b/lease", t + minute, false),
        (
            Some(&last),
            Some(3),
            "b/lease",
            t + WARN_INTERVAL - minute,
            false,
        ),
        (Some(&last), Some(3), "b/lease", t + WARN_INTERVAL, true),
        (Some(&last), Some(4), "b/lease", t + minute, true),
        (Some(&last), Some(3), "c/lease", t + minute, true),
        (Some(&last), None, "b/lease", t + minute, true),
    ] {
        assert_eq!(
            should_warn(previous, generation, other, at),
            due,
            "{previous:?} {generation:?} {other} +{:?}",
            at - t
        );
    }
}

#[test]
fn warnings_are_counted_per_cluster() {
    let w = Warnings::default();
    let t = Instant::now();
    assert!(w.admit("uid-1", Some(1), "b/lease", t));
    assert!(!w.admit("uid-1", Some(1), "b/lease", t));
    // Another cluster is warned about on its own.
    assert!(w.admit("uid-2", Some(1), "b/lease", t));
    assert!(w.admit("uid-1", Some(2), "b/lease", t));
    assert!(!w.admit("uid-1", Some(2), "b/lease", t + Duration::from_secs(1)));
}
