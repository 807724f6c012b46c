//! The gate against a fake API server that records every request: a foreign cluster gets
//! nothing but the Warning Event (once), an unclaimed one exactly one conditional claim from
//! the GarageCluster controller and none from a member, and a lost race is a stale write.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{Method, StatusCode, Uri, header};
use kube::Client;
use kube::runtime::controller::Action;
use serde_json::{Value, json};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::ANNOTATION_MANAGED_BY_INSTALL as KEY;

use crate::controller::ownership::gate::UNCLAIMED_RECHECK;
use crate::controller::ownership::*;
use crate::controller::{Config, Context, Error, Events, Metrics};
use decide::ownership::{Install, REASON_MANAGED_BY_ANOTHER_INSTALL, Role, Warnings};

/// One request the fake API server received: method, path, JSON body.
pub(super) type Seen = (Method, String, Value);

/// What the fake API server answers a PATCH and a GET of the cluster with.
#[derive(Clone)]
pub(super) struct Answers {
    pub(super) patch: (StatusCode, Value),
    pub(super) get: (StatusCode, Value),
}

#[derive(Clone)]
struct Fake {
    seen: Arc<Mutex<Vec<Seen>>>,
    answers: Answers,
}

async fn answer(
    State(fake): State<Fake>,
    method: Method,
    uri: Uri,
    body: String,
) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    let value = serde_json::from_str(&body).unwrap_or(Value::Null);
    fake.seen
        .lock()
        .unwrap()
        .push((method.clone(), uri.path().to_owned(), value.clone()));
    let (status, body) = match method {
        Method::PATCH => fake.answers.patch.clone(),
        Method::GET => fake.answers.get.clone(),
        // An Event create: echoed back, as the API server does.
        _ => (StatusCode::CREATED, value),
    };
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
}

/// A context whose client talks to a fake API server giving `answers`, and the requests it
/// records. The install is `ops/leader`.
pub(super) async fn fake(answers: Answers) -> (Arc<Context>, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = Router::new().fallback(answer).with_state(Fake {
        seen: seen.clone(),
        answers,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let url = format!("http://127.0.0.1:{port}").parse().unwrap();
    let client = Client::try_from(kube::Config::new(url)).unwrap();
    let ctx = Arc::new(Context {
        client: client.clone(),
        config: Config {
            install: Install::of_lease("ops", "leader"),
            ..Config::default()
        },
        metrics: Arc::new(Metrics::default()),
        events: Events::new(client),
        gate_evidence: decide::pools::capability::EvidenceCache::default(),
        volume_class_refusals: Mutex::default(),
        expansion_refusals: Mutex::default(),
        ownership_warnings: Warnings::default(),
        monitoring_kind: Default::default(),
    });
    (ctx, seen)
}

/// Cluster `ns/garage` at resourceVersion 42, naming `managed_by` when given.
pub(super) fn cluster(managed_by: Option<&str>) -> GarageCluster {
    let mut c = crate::desired::test_support::cluster(3);
    c.metadata.resource_version = Some("42".into());
    if let Some(v) = managed_by {
        c.metadata.annotations = Some([(KEY.to_owned(), v.to_owned())].into());
    }
    c
}

pub(super) fn ok_cluster(managed_by: Option<&str>) -> (StatusCode, Value) {
    (
        StatusCode::OK,
        serde_json::to_value(cluster(managed_by)).unwrap(),
    )
}

fn status(code: StatusCode, reason: &str) -> (StatusCode, Value) {
    (
        code,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
               "message": reason, "reason": reason, "code": code.as_u16()}),
    )
}

pub(super) fn answers() -> Answers {
    Answers {
        patch: ok_cluster(Some("ops/leader")),
        get: ok_cluster(None),
    }
}

pub(super) fn methods(seen: &Mutex<Vec<Seen>>) -> Vec<(Method, String)> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|(m, p, _)| (m.clone(), p.clone()))
        .collect()
}

#[tokio::test]
async fn a_foreign_cluster_gets_no_write_only_one_warning_event() {
    let (ctx, seen) = fake(answers()).await;
    let foreign = cluster(Some("other/leader"));
    for role in [Role::Manager, Role::Member, Role::Manager] {
        let admission = admit(&foreign, role, &ctx).await.unwrap();
        assert_eq!(
            admission,
            Admission::Stop(Action::requeue(ctx.config.resync))
        );
    }
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (method, path, body) = &seen[0];
    assert_eq!(method, Method::POST);
    assert!(path.ends_with("/namespaces/ns/events"), "{path}");
    assert_eq!(body["reason"], REASON_MANAGED_BY_ANOTHER_INSTALL);
    assert_eq!(body["type"], "Warning");
    let note = body["note"].as_str().unwrap();
    assert!(
        note.contains("other/leader") && note.contains("=ops/leader --overwrite"),
        "{note}"
    );
    assert_eq!(ctx.metrics.api_writes(), 0);
}

#[tokio::test]
async fn an_unclaimed_cluster_is_claimed_once_conditional_on_its_resource_version() {
    let (ctx, seen) = fake(answers()).await;
    let admission = admit(&cluster(None), Role::Manager, &ctx).await.unwrap();
    assert_eq!(admission, Admission::Stop(Action::await_change()));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let (method, path, body) = &seen[0];
    assert_eq!(method, Method::PATCH);
    assert!(
        path.ends_with("/namespaces/ns/garageclusters/garage"),
        "{path}"
    );
    assert_eq!(
        body,
        &json!({"metadata": {"resourceVersion": "42", "annotations": {KEY: "ops/leader"}}})
    );
    assert_eq!(ctx.metrics.api_writes(), 1);
}

#[tokio::test]
async fn a_member_waits_for_the_claim_and_writes_nothing() {
    let (ctx, seen) = fake(answers()).await;
    let admission = admit(&cluster(None), Role::Member, &ctx).await.unwrap();
    assert_eq!(
        admission,
        Admission::Stop(Action::requeue(UNCLAIMED_RECHECK))
    );
    assert_eq!(methods(&seen), vec![]);
    assert_eq!(ctx.metrics.api_writes(), 0);
}

#[tokio::test]
async fn a_claim_that_loses_the_race_is_a_stale_write() {
    let (ctx, _) = fake(Answers {
        patch: status(StatusCode::CONFLICT, "Conflict"),
        ..answers()
    })
    .await;
    match admit(&cluster(None), Role::Manager, &ctx).await {
        Err(Error::Stale(what)) => assert_eq!(what, "GarageCluster ns/garage"),
        other => panic!("expected a stale write, got {other:?}"),
    }
}

#[tokio::test]
async fn this_install_goes_on_without_a_request() {
    let (ctx, seen) = fake(answers()).await;
    for role in [Role::Manager, Role::Member] {
        let admission = admit(&cluster(Some(" ops/leader ")), role, &ctx).await;
        assert_eq!(admission.unwrap(), Admission::Proceed);
    }
    assert_eq!(methods(&seen), vec![]);
}

#[tokio::test]
async fn a_member_resolves_its_cluster_through_the_gate() {
    for (get, expect) in [
        (ok_cluster(Some("ops/leader")), "managed"),
        (ok_cluster(Some("other/leader")), "hands off"),
        (ok_cluster(None), "hands off"),
        (status(StatusCode::NOT_FOUND, "NotFound"), "absent"),
    ] {
        let (ctx, seen) = fake(Answers { get, ..answers() }).await;
        let got = match resolve(&ctx, "ns", "garage").await.unwrap() {
            Resolved::Managed(c) => {
                assert_eq!(c.metadata.resource_version.as_deref(), Some("42"));
                "managed"
            }
            Resolved::HandsOff(_) => "hands off",
            Resolved::Absent => "absent",
        };
        assert_eq!(got, expect);
        // One read, and no write of any kind on the cluster.
        let seen = methods(&seen);
        assert_eq!(seen[0].0, Method::GET);
        assert!(
            seen.iter()
                .all(|(m, p)| *m == Method::GET || p.ends_with("/events")),
            "{seen:?}"
        );
    }
}
