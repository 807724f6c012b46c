//! Table tests of the GarageAdminToken plan: no API server.

#![allow(clippy::unwrap_used)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use serde_json::json;

use super::*;

fn token(spec: serde_json::Value) -> GarageAdminToken {
    serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageAdminToken",
        "metadata": {"name": "ops", "namespace": "storage", "uid": "u-1", "generation": 2,
                     "finalizers": [finalizers::FINALIZER_ADMIN_TOKEN]},
        "spec": spec,
    }))
    .unwrap()
}

fn ops() -> GarageAdminToken {
    token(json!({"clusterRef": {"name": "garage"}}))
}

/// The token's cluster, taking its admin token from Secret `ops` when `mounted`.
fn cluster(mounted: bool) -> GarageCluster {
    let mut v = serde_json::to_value(crate::desired::test_support::cluster(1)).unwrap();
    if mounted {
        v["spec"]["admin"] = json!({"adminTokenSecretRef": {"name": "ops", "key": "admin-token"}});
    }
    serde_json::from_value(v).unwrap()
}

/// The Secret a pass created for token `tok`, as it now is.
fn created(tok: &str) -> Secret {
    let s = Settings::from_cluster(&cluster(true)).unwrap();
    render(&ops(), &s, tok, &crate::names::sha256_hex(tok.as_bytes())).unwrap()
}

fn observed(cluster: Option<GarageCluster>, secret: Option<Secret>) -> Observed {
    let fresh = secret.is_none().then(|| "fresh".to_owned());
    Observed {
        token: ops(),
        cluster,
        secret,
        fresh,
    }
}

fn condition(plan: &Plan) -> (String, String, String) {
    let c = &plan.status.as_ref().unwrap().conditions.as_ref().unwrap()[0];
    (c.status.clone(), c.reason.clone(), c.message.clone())
}

#[test]
fn the_secret_defaults_to_the_object_name_and_admin_token() {
    assert_eq!(
        secret_location(&ops()),
        ("ops".into(), "admin-token".into())
    );
    let t = token(
        json!({"clusterRef": {"name": "garage"}, "secretTemplate": {"name": "x", "tokenKey": "t"}}),
    );
    assert_eq!(secret_location(&t), ("x".into(), "t".into()));
}

#[test]
fn compatibility_fields_and_other_namespaces_are_refused_by_field() {
    let ok = token(json!({"clusterRef": {"name": "garage", "namespace": "storage"}}));
    assert_eq!(spec_problem(&ok), None);
    for (spec, field) in [
        (
            json!({"clusterRef": {"name": "g", "namespace": "other"}}),
            "spec.clusterRef.namespace",
        ),
        (
            json!({"clusterRef": {"name": "g"}, "name": "n"}),
            "spec.name",
        ),
        (
            json!({"clusterRef": {"name": "g"}, "expiresAt": "2030-01-01T00:00:00Z"}),
            "spec.expiresAt",
        ),
    ] {
        let problem = spec_problem(&token(spec.clone())).unwrap();
        assert!(problem.starts_with(field), "{problem}");
        let plan = plan(&Observed {
            token: token(spec),
            cluster: Some(cluster(true)),
            secret: None,
            fresh: Some("fresh".into()),
        })
        .unwrap();
        assert!(plan.steps.is_empty(), "nothing is created for {field}");
        assert_eq!(plan.status.unwrap().phase, Some(KeyPhase::Failed));
    }
}

#[test]
fn a_new_secret_is_immutable_labelled_and_carries_the_digest() {
    let cluster = crate::desired::test_support::cluster(1);
    let s = Settings::from_cluster(&cluster).unwrap();
    let secret = render(&ops(), &s, "tok", "abc").unwrap();
    assert_eq!(secret.immutable, Some(true));
    let data = secret.data.unwrap();
    assert_eq!(data["admin-token"].0, b"tok");
    assert_eq!(
        String::from_utf8(data["admin-endpoint"].0.clone()).unwrap(),
        "http://garage-admin.ns.svc.cluster.local:3903"
    );
    let a = secret.metadata.annotations.unwrap();
    assert_eq!(a[annotation::ANNOTATION_CREDENTIAL_KIND], STATIC_BOOTSTRAP);
    assert_eq!(
        a[annotation::ANNOTATION_STATIC_BOOTSTRAP_TOKEN_SHA256],
        "abc"
    );
    assert_eq!(
        secret.metadata.labels.unwrap()[label::LABEL_ADMIN_TOKEN],
        "ops"
    );
}

#[test]
fn a_missing_secret_is_created_with_the_drawn_token_and_its_digest_published() {
    let plan = plan(&observed(Some(cluster(true)), None)).unwrap();
    assert_eq!(plan.steps, [Step::CreateSecret(Box::new(created("fresh")))]);
    assert_eq!(plan.outcome, Outcome::Converged);
    let status = plan.status.clone().unwrap();
    let digest = crate::names::sha256_hex(b"fresh");
    assert_eq!(status.token_digest.as_deref(), Some(digest.as_str()));
    assert_eq!(status.token_id.as_deref(), Some(&digest[..12]));
    assert_eq!(status.phase, Some(KeyPhase::Ready));
    assert_eq!(
        condition(&plan),
        (
            "True".into(),
            reason::REASON_RECONCILE_SUCCESS.into(),
            format!("token {} in Secret ops", &digest[..12])
        )
    );
}

#[test]
fn an_existing_secret_is_kept_and_a_cluster_not_mounting_it_waits() {
    let kept = plan(&observed(Some(cluster(true)), Some(created("old")))).unwrap();
    assert!(kept.steps.is_empty());
    assert_eq!(kept.outcome, Outcome::Converged);
    let unmounted = plan(&observed(Some(cluster(false)), Some(created("old")))).unwrap();
    assert!(unmounted.steps.is_empty());
    let (ready, why, message) = condition(&unmounted);
    assert_eq!(
        (ready.as_str(), why.as_str()),
        ("False", reason::REASON_WAITING_FOR_DEPENDENCY)
    );
    assert!(message.contains("does not use this token"), "{message}");
    // The token exists all the same: its digest is published.
    let status = unmounted.status.unwrap();
    assert_eq!(status.phase, Some(KeyPhase::Pending));
    assert!(status.token_digest.is_some());
}

#[test]
fn a_secret_that_is_not_the_tokens_or_not_usable_is_never_rewritten() {
    let mut foreign = created("old");
    foreign.metadata.owner_references = Some(vec![OwnerReference {
        uid: "someone".into(),
        controller: Some(true),
        ..Default::default()
    }]);
    let plan1 = plan(&observed(Some(cluster(true)), Some(foreign))).unwrap();
    assert_eq!(plan1.steps, [Step::Foreign { name: "ops".into() }]);
    let mut emptied = created("old");
    emptied.data = None;
    let mut altered = created("old");
    altered.metadata.annotations.as_mut().unwrap().insert(
        annotation::ANNOTATION_STATIC_BOOTSTRAP_TOKEN_SHA256.into(),
        "other".into(),
    );
    for (what, secret, says) in [
        ("no value", emptied, "has no value under admin-token"),
        (
            "digest differs",
            altered,
            "does not hold the token its digest annotation names",
        ),
    ] {
        let plan = plan(&observed(Some(cluster(true)), Some(secret))).unwrap();
        assert!(plan.steps.is_empty(), "{what}");
        let (_, why, message) = condition(&plan);
        assert_eq!(why, reason::REASON_VALIDATION_FAILED, "{what}");
        assert!(message.contains(says), "{what}: {message}");
        assert_eq!(plan.status.unwrap().token_digest, None, "{what}");
    }
}

#[test]
fn a_token_without_its_cluster_waits_and_writes_nothing() {
    let plan = plan(&observed(None, None)).unwrap();
    assert!(plan.steps.is_empty());
    let Outcome::Waiting {
        reason: why,
        message,
    } = &plan.outcome
    else {
        panic!("{:?}", plan.outcome);
    };
    assert_eq!(*why, reason::REASON_WAITING_FOR_DEPENDENCY);
    assert!(
        message.starts_with("GarageCluster storage/garage does not exist yet"),
        "{message}"
    );
}

#[test]
fn deletion_removes_only_the_tokens_own_secret_then_the_finalizer() {
    let mut t = ops();
    t.metadata.deletion_timestamp = Some(Time("2030-01-01T00:00:00Z".parse().unwrap()));
    let own = created("old");
    assert_eq!(
        deletion(&t, Some(&own)).steps,
        [Step::DeleteSecret("ops".into()), Step::RemoveFinalizer]
    );
    let mut foreign = own.clone();
    foreign.metadata.owner_references = None;
    assert_eq!(deletion(&t, Some(&foreign)).steps, [Step::RemoveFinalizer]);
    assert_eq!(deletion(&t, None).steps, [Step::RemoveFinalizer]);
    t.metadata.finalizers = None;
    assert!(deletion(&t, Some(&own)).steps.is_empty());
    assert_eq!(deletion(&t, None).outcome, Outcome::Finished);
}
