#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn id(c: char) -> NodeId {
    c.to_string().repeat(64).parse().unwrap()
}

/// A member on revision `running` of a workload wanting `wanted`, Ready, proven, up, placed.
fn member(name: &str, c: char, running: &str, wanted: &str) -> Member {
    Member {
        name: name.into(),
        uid: format!("uid-{name}"),
        generation: Some(1),
        pool: None,
        node_id: Some(id(c)),
        suspended: false,
        workload_uid: Some(format!("sts-{name}")),
        desired_revision: Some(wanted.into()),
        pod: Some(PodState {
            name: format!("{name}-0"),
            uid: format!("pod-{name}-{running}"),
            revision: Some(running.into()),
            ready: true,
            terminating: false,
            identity_proven: true,
            owner_uid: Some(format!("sts-{name}")),
            claims: vec![format!("data-{name}-0")],
        }),
        up: true,
        in_layout: true,
        resize_pending: false,
    }
}

fn observed<'a>(members: &'a [Member], record: Option<&'a StorageRolloutStatus>) -> Observed<'a> {
    Observed {
        record,
        members,
        healthy: true,
        settled: true,
        garage_read: true,
        drain_active: false,
        generation: Some(2),
        config_hash: "cfg".into(),
        claims: &[],
        recovery_request: None,
    }
}

fn record_of(step: Step) -> StorageRolloutStatus {
    match step {
        Step::Record(r) => *r,
        other => panic!("expected a record, got {other:?}"),
    }
}

fn waits(step: &Step, reason_: &str, needle: &str) {
    match step {
        Step::Wait { reason, message } => {
            assert_eq!(*reason, reason_, "{message}");
            assert!(message.contains(needle), "{message:?} lacks {needle:?}");
        }
        other => panic!("expected a wait, got {other:?}"),
    }
}

#[test]
fn every_pod_on_its_current_revision_is_converged() {
    let m = [member("a", 'a', "r2", "r2"), member("b", 'b', "r2", "r2")];
    assert_eq!(step(&observed(&m, None)), Step::Converged);
    let c = condition(&Step::Converged, None);
    assert!(c.status);
}

#[test]
fn the_first_outdated_member_is_recorded_before_anything_is_deleted() {
    let m = [
        member("b", 'b', "r1", "r2"),
        member("a", 'a', "r1", "r2"),
        member("c", 'c', "r2", "r2"),
    ];
    let r = record_of(step(&observed(&m, None)));
    assert_eq!(r.garage_node_name.as_deref(), Some("a"));
    assert_eq!(r.previous_pod_uid.as_deref(), Some("pod-a-r1"));
    assert_eq!(r.garage_node_id, Some(id('a').to_string()));
    assert_eq!(r.workload_uid.as_deref(), Some("sts-a"));
    assert_eq!(r.cluster_generation, Some(2));
    assert_eq!(r.desired_config_hash.as_deref(), Some("cfg"));
    assert_eq!(r.desired_pod_spec_hash.as_deref(), Some("r2"));
}

#[test]
fn a_suspended_member_is_passed_over_and_its_recorded_replacement_waits() {
    let mut m = vec![member("a", 'a', "r1", "r2"), member("b", 'b', "r1", "r2")];
    m[0].suspended = true;
    let r = record_of(step(&observed(&m, None)));
    assert_eq!(r.garage_node_name.as_deref(), Some("b"), "a is passed over");
    // Only the suspended member is left: behind, or with a workload not re-rendered.
    m[1] = member("b", 'b', "r2", "r2");
    waits(
        &step(&observed(&m, None)),
        reason::REASON_STORAGE_ROLLOUT_WAITING,
        "pods of a are not replaced while suspended",
    );
    m[0].desired_revision = None;
    waits(
        &step(&observed(&m, None)),
        reason::REASON_STORAGE_ROLLOUT_WAITING,
        "suspended",
    );
    // A replacement recorded before the suspension keeps its record and deletes nothing.
    let mut m = vec![member("a", 'a', "r1", "r2")];
    let r = record_of(step(&observed(&m, None)));
    m[0].suspended = true;
    waits(
        &step(&observed(&m, Some(&r))),
        reason::REASON_STORAGE_ROLLOUT_WAITING,
        "once its suspension is lifted",
    );
    m[0].suspended = false;
    assert!(matches!(
        step(&observed(&m, Some(&r))),
        Step::DeletePod { .. }
    ));
}

#[test]
fn pool_members_go_first() {
    let mut pool = member("z-pool", 'f', "1", "2");
    pool.pool = Some(("local".into(), "n1".into()));
    let m = [member("a", 'a', "r1", "r2"), pool];
    let r = record_of(step(&observed(&m, None)));
    assert_eq!(r.node_local_pool_name.as_deref(), Some("local"));
    assert_eq!(r.kubernetes_node_name.as_deref(), Some("n1"));
}

#[test]
fn each_gate_holds_the_next_replacement() {
    let base = [member("a", 'a', "r1", "r2"), member("b", 'b', "r2", "r2")];
    type Edit = fn(&mut Member);
    let cases: [(Edit, &str); 6] = [
        (|m| m.pod.as_mut().unwrap().ready = false, "are Ready"),
        (|m| m.pod = None, "are Ready"),
        (|m| m.pod.as_mut().unwrap().terminating = true, "are Ready"),
        (
            |m| m.pod.as_mut().unwrap().identity_proven = false,
            "rediscovered",
        ),
        (|m| m.up = false, "up with their committed roles"),
        (|m| m.in_layout = false, "up with their committed roles"),
    ];
    for (edit, needle) in cases {
        let mut m = base.to_vec();
        edit(&mut m[1]);
        waits(
            &step(&observed(&m, None)),
            reason::REASON_STORAGE_ROLLOUT_WAITING,
            needle,
        );
    }
    let mut o = observed(&base, None);
    o.healthy = false;
    waits(&step(&o), reason::REASON_STORAGE_ROLLOUT_WAITING, "healthy");
    let mut o = observed(&base, None);
    o.settled = false;
    waits(
        &step(&o),
        reason::REASON_STORAGE_ROLLOUT_WAITING,
        "migration",
    );
    let mut o = observed(&base, None);
    o.drain_active = true;
    waits(&step(&o), reason::REASON_STORAGE_ROLLOUT_WAITING, "drain");
    let mut m = base.to_vec();
    m[1].desired_revision = None;
    waits(
        &step(&observed(&m, None)),
        reason::REASON_STORAGE_ROLLOUT_WAITING,
        "not observed",
    );
}

#[test]
fn a_recorded_actor_has_its_exact_old_pod_deleted_then_waits_for_the_replacement() {
    let mut m = vec![member("a", 'a', "r1", "r2"), member("b", 'b', "r2", "r2")];
    let r = record_of(step(&observed(&m, None)));
    assert_eq!(
        step(&observed(&m, Some(&r))),
        Step::DeletePod {
            name: "a-0".into(),
            uid: "pod-a-r1".into()
        }
    );
    m[0].pod.as_mut().unwrap().terminating = true;
    waits(
        &step(&observed(&m, Some(&r))),
        reason::REASON_STORAGE_ROLLING_OUT,
        "terminating",
    );
    m[0].pod = None;
    waits(
        &step(&observed(&m, Some(&r))),
        reason::REASON_STORAGE_ROLLING_OUT,
        "replacement",
    );
    // The replacement exists, current, but not Ready yet; nothing else is touched.
    m[0] = member("a", 'a', "r2", "r2");
    m[0].pod.as_mut().unwrap().ready = false;
    waits(
        &step(&observed(&m, Some(&r))),
        reason::REASON_STORAGE_ROLLING_OUT,
        "Ready",
    );
    m[0].pod.as_mut().unwrap().ready = true;
    m[0].pod.as_mut().unwrap().identity_proven = false;
    waits(
        &step(&observed(&m, Some(&r))),
        reason::REASON_STORAGE_ROLLING_OUT,
        "rediscovered",
    );
    m[0].pod.as_mut().unwrap().identity_proven = true;
    let mut o = observed(&m, Some(&r));
    o.healthy = false;
    waits(&step(&o), reason::REASON_STORAGE_ROLLING_OUT, "healthy");
    assert_eq!(step(&observed(&m, Some(&r))), Step::Clear);
}

#[test]
fn a_replacement_with_another_identity_never_completes() {
    let mut m = vec![member("a", 'a', "r1", "r2")];
    let r = record_of(step(&observed(&m, None)));
    m[0] = member("a", 'c', "r2", "r2");
    waits(
        &step(&observed(&m, Some(&r))),
        reason::REASON_STORAGE_ROLLING_OUT,
        "instead of",
    );
}

#[test]
fn a_replacement_left_behind_by_a_newer_revision_is_replaced_again_or_released() {
    // The replacement came up on r2, then the template moved to r3 (changed again, or
    // reverted) before it was proven.
    let mut m = vec![member("a", 'a', "r1", "r2"), member("b", 'b', "r3", "r3")];
    let r = record_of(step(&observed(&m, None)));
    m[0] = member("a", 'a', "r2", "r3");
    m[0].pod.as_mut().unwrap().ready = false;
    assert_eq!(
        step(&observed(&m, Some(&r))),
        Step::DeletePod {
            name: "a-0".into(),
            uid: "pod-a-r2".into()
        },
        "a stale replacement that is not Ready is the member already down: replaced again"
    );
    m[0].pod.as_mut().unwrap().ready = true;
    assert_eq!(
        step(&observed(&m, Some(&r))),
        Step::Clear,
        "a stale replacement that serves ends the transaction; the member is picked again later"
    );
}

#[test]
fn a_pod_deleted_by_hand_counts_as_the_one_in_flight() {
    let mut m = vec![member("a", 'a', "r1", "r2"), member("b", 'b', "r1", "r2")];
    m[1].pod = None;
    waits(
        &step(&observed(&m, None)),
        reason::REASON_STORAGE_ROLLOUT_WAITING,
        "b are Ready",
    );
}

#[test]
fn an_actor_that_left_clears_the_record() {
    let m = vec![member("a", 'a', "r1", "r2")];
    let r = record_of(step(&observed(&m, None)));
    assert_eq!(step(&observed(&[], Some(&r))), Step::Clear);
}

#[test]
fn a_record_carries_every_field_the_crd_requires() {
    use kube::CustomResourceExt;
    let m = [member("a", 'a', "r1", "r2")];
    let r = record_of(step(&observed(&m, None)));
    let written = serde_json::to_value(&r).unwrap();
    let crd =
        serde_json::to_value(shared_types::garage_cluster::v1beta2::GarageCluster::crd()).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
        ["storageRollout"];
    let required = schema["required"]
        .as_array()
        .expect("storageRollout has required fields");
    for field in required {
        let field = field.as_str().unwrap();
        assert!(
            written.get(field).is_some(),
            "the rollout record lacks {field}, which the CRD requires: {written}"
        );
    }
}

#[test]
fn a_workload_recreated_mid_rollout_is_retired_and_its_pods_never_count() {
    let mut m = [member("a", 'a', "r1", "r2"), member("b", 'b', "r2", "r2")];
    let r = record_of(step(&observed(&m, None)));
    // The StatefulSet is deleted and created again: a new UID.
    m[0].workload_uid = Some("sts-a-2".into());
    m[0].pod = None;
    let updated = record_of(step(&observed(&m, Some(&r))));
    assert_eq!(updated.workload_uid.as_deref(), Some("sts-a-2"));
    assert_eq!(
        updated.retired_workload_uids,
        Some(vec!["sts-a".to_owned()])
    );
    assert_eq!(updated.previous_pod_uid, r.previous_pod_uid);
    // A late pod of the old incarnation, Ready on the new revision, is not the replacement.
    let mut late = member("a", 'a', "r2", "r2");
    late.workload_uid = Some("sts-a-2".into());
    late.pod.as_mut().unwrap().uid = "late".into();
    late.pod.as_mut().unwrap().owner_uid = Some("sts-a".into());
    let m2 = [late, member("b", 'b', "r2", "r2")];
    match step(&observed(&m2, Some(&updated))) {
        Step::Wait { message, .. } => {
            assert!(message.contains("replaced incarnation"), "{message}")
        }
        other => panic!("a retired workload's pod was accepted: {other:?}"),
    }
}

#[test]
fn the_retired_workload_list_fails_closed_at_its_cap() {
    let mut m = [member("a", 'a', "r1", "r2")];
    let mut r = record_of(step(&observed(&m, None)));
    r.retired_workload_uids = Some(
        (0..MAX_RETIRED_WORKLOADS)
            .map(|i| format!("old-{i}"))
            .collect(),
    );
    assert!(retired_full(&r));
    m[0].workload_uid = Some("sts-a-new".into());
    waits(
        &step(&observed(&m, Some(&r))),
        reason::REASON_RETIRED_WORKLOAD_LIMIT,
        "more than 32 times",
    );
    r.retired_workload_uids = Some(vec!["old".into()]);
    assert!(!retired_full(&r));
}

fn claim(name: &str, uid: &str, terminating: bool) -> ClaimState {
    ClaimState {
        name: name.into(),
        uid: uid.into(),
        terminating,
    }
}

#[test]
fn the_claims_of_the_replaced_pod_are_recorded_and_must_stay_the_same() {
    let members = [member("a", 'a', "r1", "r2"), member("b", 'b', "r2", "r2")];
    let claims = [
        claim("data-a-0", "c1", false),
        claim("data-b-0", "c2", false),
    ];
    let mut o = observed(&members, None);
    o.claims = &claims;
    let record = record_of(step(&o));
    assert_eq!(
        record.persistent_volume_claims,
        Some(vec![PvcIdentity {
            name: Some("data-a-0".into()),
            uid: Some("c1".into()),
        }])
    );
    // With the claim intact the old pod is deleted as before.
    let mut o = observed(&members, Some(&record));
    o.claims = &claims;
    assert!(matches!(step(&o), Step::DeletePod { .. }));
    // Before the delete or after it, a claim gone, being deleted or recreated stops the
    // rollout: nothing is deleted and the replacement never counts.
    let mut replaced = members.clone();
    replaced[0].pod.as_mut().unwrap().uid = "pod-new".into();
    replaced[0].pod.as_mut().unwrap().revision = Some("r2".into());
    for (case, state, needle) in [
        ("gone", vec![claim("data-b-0", "c2", false)], "is gone"),
        (
            "deleting",
            vec![
                claim("data-a-0", "c1", true),
                claim("data-b-0", "c2", false),
            ],
            "being deleted",
        ),
        (
            "recreated",
            vec![
                claim("data-a-0", "c9", false),
                claim("data-b-0", "c2", false),
            ],
            "was recreated",
        ),
    ] {
        for ms in [&members[..], &replaced[..]] {
            let mut o = observed(ms, Some(&record));
            o.claims = &state;
            let s = step(&o);
            waits(&s, reason::REASON_CLAIM_REPLACED, needle);
            assert!(!matches!(s, Step::Clear | Step::DeletePod { .. }), "{case}");
        }
    }
    // The replacement on the recorded claims clears as before.
    let mut o = observed(&replaced, Some(&record));
    o.claims = &claims;
    assert_eq!(step(&o), Step::Clear);
}

#[test]
fn a_pod_whose_claim_is_being_deleted_is_not_chosen_for_replacement() {
    let members = [member("a", 'a', "r1", "r2"), member("b", 'b', "r2", "r2")];
    let claims = [claim("data-a-0", "c1", true)];
    let mut o = observed(&members, None);
    o.claims = &claims;
    waits(&step(&o), reason::REASON_CLAIM_REPLACED, "data-a-0");
}

#[test]
fn a_member_whose_file_system_waits_for_a_restart_is_replaced_like_an_outdated_one() {
    let mut members = [member("a", 'a', "r2", "r2"), member("b", 'b', "r2", "r2")];
    assert_eq!(step(&observed(&members, None)), Step::Converged);
    members[1].resize_pending = true;
    let record = record_of(step(&observed(&members, None)));
    assert_eq!(record.garage_node_name.as_deref(), Some("b"));
    assert_eq!(record.desired_pod_spec_hash.as_deref(), Some("r2"));
    // Through the same gates: not while another member is down.
    let mut down = members.clone();
    down[0].pod.as_mut().unwrap().ready = false;
    waits(
        &step(&observed(&down, None)),
        reason::REASON_STORAGE_ROLLOUT_WAITING,
        "need a restart to finish growing a file system",
    );
    // Its pod deleted, the replacement on the same revision clears the record.
    let o = observed(&members, Some(&record));
    assert!(matches!(step(&o), Step::DeletePod { .. }));
    let mut replaced = members.clone();
    replaced[1].pod.as_mut().unwrap().uid = "pod-b-new".into();
    replaced[1].resize_pending = false;
    assert_eq!(step(&observed(&replaced, Some(&record))), Step::Clear);
}

#[test]
fn a_recovery_request_redoes_a_replacement_that_is_not_ready_and_nothing_else() {
    let mut m = vec![member("a", 'a', "r1", "r2"), member("b", 'b', "r2", "r2")];
    let r = record_of(step(&observed(&m, None)));
    let with = |m: &'_ [Member], r: &'_ StorageRolloutStatus, nonce: Option<&'static str>| {
        let mut o = observed(m, Some(r));
        o.recovery_request = nonce;
        step(&o)
    };
    // The old pod is still there: acknowledged, nothing marked to redo.
    let ack = record_of(with(&m, &r, Some("n1")));
    assert_eq!(ack.recovery_request.as_deref(), Some("n1"));
    assert_eq!(ack.recovery_pod_uid, None);
    assert_eq!(
        with(&m, &ack, Some("n1")),
        Step::DeletePod {
            name: "a-0".into(),
            uid: "pod-a-r1".into()
        },
        "the recorded replacement goes on as before"
    );
    // The replacement is up on the new revision but not Ready: recorded first, then deleted.
    m[0] = member("a", 'a', "r2", "r2");
    m[0].pod.as_mut().unwrap().ready = false;
    let marked = record_of(with(&m, &ack, Some("n2")));
    assert_eq!(marked.recovery_request.as_deref(), Some("n2"));
    assert_eq!(marked.recovery_pod_uid.as_deref(), Some("pod-a-r2"));
    assert_eq!(marked.recovery_pod_name.as_deref(), Some("a-0"));
    assert_eq!(
        marked.previous_pod_uid, r.previous_pod_uid,
        "the record is kept"
    );
    assert_eq!(
        with(&m, &marked, Some("n2")),
        Step::DeletePod {
            name: "a-0".into(),
            uid: "pod-a-r2".into()
        }
    );
    // Once the new pod of the redo exists, the rollout waits for it as for any replacement.
    m[0].pod.as_mut().unwrap().uid = "pod-a-r2-again".into();
    waits(
        &with(&m, &marked, Some("n2")),
        reason::REASON_STORAGE_ROLLING_OUT,
        "Ready",
    );
    // A replacement that became Ready before the delete is never deleted.
    m[0].pod.as_mut().unwrap().uid = "pod-a-r2".into();
    m[0].pod.as_mut().unwrap().ready = true;
    assert_eq!(with(&m, &marked, Some("n2")), Step::Clear);
    // An empty value asks for nothing.
    m[0].pod.as_mut().unwrap().ready = false;
    waits(
        &with(&m, &ack, Some("")),
        reason::REASON_STORAGE_ROLLING_OUT,
        "Ready",
    );
    // While another member is down, a redo waits: the replacement may be not Ready only
    // because of it.
    let mut down = m.clone();
    down[1].pod.as_mut().unwrap().ready = false;
    waits(
        &with(&down, &ack, Some("n3")),
        reason::REASON_STORAGE_ROLLING_OUT,
        "waits until the pods of b are Ready",
    );
    waits(
        &with(&down, &marked, Some("n2")),
        reason::REASON_STORAGE_ROLLING_OUT,
        "waits until the pods of b are Ready",
    );
    assert!(record_note(Some(&ack), &marked).contains("is made again"));
    assert!(record_note(Some(&r), &ack).contains("not one to make again"));
    assert!(record_note(None, &r).contains("recorded for replacement"));
    // A value set before a transaction starts is not a request for it.
    let fresh = vec![member("a", 'a', "r1", "r2")];
    let mut o = observed(&fresh, None);
    o.recovery_request = Some("n2");
    assert_eq!(record_of(step(&o)).recovery_request.as_deref(), Some("n2"));
}
