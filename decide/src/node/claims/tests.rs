use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

use super::*;

const UID: &str = "node-uid-1";
const ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const OLD: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

fn pvc(finalizers: &[&str], annotations: serde_json::Value) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "metadata": {
            "name": "x", "uid": "claim-uid", "resourceVersion": "7",
            "finalizers": finalizers, "annotations": annotations,
        },
    }))
    .unwrap()
}

fn deleting(mut p: PersistentVolumeClaim) -> PersistentVolumeClaim {
    p.metadata.deletion_timestamp = Some(Time("2030-01-01T00:00:00Z".parse().unwrap()));
    p
}

fn one(p: PersistentVolumeClaim) -> Vec<(String, Option<PersistentVolumeClaim>)> {
    vec![("data-n-0".to_owned(), Some(p))]
}

#[test]
fn a_live_claim_gets_the_reservation_the_node_uid_and_once_known_the_identity() {
    struct Case {
        name: &'static str,
        claim: PersistentVolumeClaim,
        identity: Option<&'static str>,
        finalizers: Option<&'static [&'static str]>,
        annotations: &'static [(&'static str, &'static str)],
    }
    let cases = [
        Case {
            name: "fresh claim, identity unknown: reserved, node UID recorded",
            claim: pvc(&["kubernetes.io/pvc-protection"], json!({})),
            identity: None,
            finalizers: Some(&["kubernetes.io/pvc-protection", FINALIZER_PVC_RESERVATION]),
            annotations: &[(ANNOTATION_GARAGE_NODE_UID, UID)],
        },
        Case {
            name: "reserved, identity now known: the identity is added",
            claim: pvc(
                &[FINALIZER_PVC_RESERVATION],
                json!({ANNOTATION_GARAGE_NODE_UID: UID}),
            ),
            identity: Some(ID),
            finalizers: Some(&[FINALIZER_PVC_RESERVATION]),
            annotations: &[(ANNOTATION_NODE_ID, ID)],
        },
        Case {
            name: "everything in place: nothing written",
            claim: pvc(
                &[FINALIZER_PVC_RESERVATION],
                json!({ANNOTATION_GARAGE_NODE_UID: UID, ANNOTATION_NODE_ID: ID}),
            ),
            identity: Some(ID),
            finalizers: None,
            annotations: &[],
        },
        Case {
            name: "another identity already on the claim stays (an identity change is reported elsewhere)",
            claim: pvc(
                &[FINALIZER_PVC_RESERVATION],
                json!({ANNOTATION_GARAGE_NODE_UID: UID, ANNOTATION_NODE_ID: OLD}),
            ),
            identity: Some(ID),
            finalizers: None,
            annotations: &[],
        },
        Case {
            name: "a retained claim of an earlier incarnation (not retired) is adopted",
            claim: pvc(
                &[],
                json!({ANNOTATION_GARAGE_NODE_UID: "older", ANNOTATION_NODE_ID: ID}),
            ),
            identity: None,
            finalizers: Some(&[FINALIZER_PVC_RESERVATION]),
            annotations: &[(ANNOTATION_GARAGE_NODE_UID, UID)],
        },
    ];
    for c in cases {
        let plan = live(&one(c.claim), UID, c.identity);
        assert_eq!(plan.hold, None, "{}", c.name);
        match c.finalizers {
            None => assert!(plan.patches.is_empty(), "{}: {:?}", c.name, plan.patches),
            Some(want) => {
                let [patch] = plan.patches.as_slice() else {
                    panic!("{}: {:?}", c.name, plan.patches)
                };
                assert_eq!(patch.name, "data-n-0", "{}", c.name);
                assert_eq!(patch.resource_version, "7", "{}", c.name);
                assert_eq!(patch.finalizers, want, "{}", c.name);
                let got: Vec<(&str, &str)> = patch
                    .annotations
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                assert_eq!(got, c.annotations, "{}", c.name);
            }
        }
    }
}

#[test]
fn a_deleted_live_claim_is_left_to_its_reservation_and_reported() {
    let plan = live(
        &one(deleting(pvc(&[FINALIZER_PVC_RESERVATION], json!({})))),
        UID,
        Some(ID),
    );
    assert!(plan.patches.is_empty());
    assert_eq!(plan.hold, None);
    assert_eq!(plan.notes.len(), 1);
    assert_eq!(plan.notes[0].reason, reason::REASON_CLAIM_DELETING);
    assert!(plan.notes[0].message.contains("data-n-0"));
}

#[test]
fn a_retired_claim_holds_the_node_until_it_is_deleted() {
    let retired = || pvc(&[], json!({ANNOTATION_RETIRED_NODE_ID: OLD}));
    let claims = vec![
        ("metadata-n-0".to_owned(), Some(retired())),
        ("data-n-0".to_owned(), Some(retired())),
    ];
    let plan = live(&claims, UID, None);
    let hold = plan.hold.expect("held");
    assert_eq!(hold.reason, reason::REASON_RETIRED_CLAIMS);
    assert!(!hold.status);
    for needle in [
        "metadata-n-0",
        "data-n-0",
        &OLD[..16],
        "kubectl delete pvc metadata-n-0 data-n-0",
    ] {
        assert!(hold.message.contains(needle), "{needle}: {}", hold.message);
    }
    assert!(plan.patches.is_empty(), "a retired claim is never reserved");
    // One retired claim among live ones holds the node; the others are still reserved.
    let mixed = vec![
        ("metadata-n-0".to_owned(), Some(pvc(&[], json!({})))),
        ("data-n-0".to_owned(), Some(retired())),
    ];
    let plan = live(&mixed, UID, None);
    assert!(plan.hold.is_some());
    assert_eq!(plan.patches.len(), 1);
    // A retired claim being deleted still holds the node until it is gone.
    let plan = live(
        &[("data-n-0".to_owned(), Some(deleting(retired())))],
        UID,
        None,
    );
    assert!(plan.hold.is_some());
    // Gone: nothing holds.
    assert_eq!(
        live(&[("data-n-0".to_owned(), None)], UID, None),
        LivePlan::default()
    );
}

#[test]
fn absent_claims_are_nothing_to_do() {
    let plan = live(&[("data-n-0".to_owned(), None)], UID, Some(ID));
    assert_eq!(plan, LivePlan::default());
}

#[test]
fn release_drops_the_reservation_and_marks_retired_claims_after_a_proof_only() {
    let reservedc = || {
        pvc(
            &["kubernetes.io/pvc-protection", FINALIZER_PVC_RESERVATION],
            json!({ANNOTATION_NODE_ID: ID}),
        )
    };
    // Destroy: the reservation goes, no mark.
    let [p] = release(&one(reservedc()), None).try_into().unwrap();
    assert_eq!(
        p.finalizers,
        vec!["kubernetes.io/pvc-protection".to_owned()]
    );
    assert!(p.annotations.is_empty());
    // A proven drain: the reservation goes and the claim is marked with the retired identity.
    let [p] = release(&one(reservedc()), Some(ID)).try_into().unwrap();
    assert_eq!(
        p.finalizers,
        vec!["kubernetes.io/pvc-protection".to_owned()]
    );
    assert_eq!(
        p.annotations
            .get(ANNOTATION_RETIRED_NODE_ID)
            .map(String::as_str),
        Some(ID)
    );
    // Already released and marked: nothing more.
    let done = pvc(&[], json!({ANNOTATION_RETIRED_NODE_ID: ID}));
    assert!(release(&one(done.clone()), Some(ID)).is_empty());
    assert!(release(&one(done), None).is_empty());
    // Released earlier without a mark, then proven: marked.
    assert_eq!(release(&one(pvc(&[], json!({}))), Some(ID)).len(), 1);
    assert!(release(&[("x".to_owned(), None)], Some(ID)).is_empty());
}
