//! The HTTP router in-process (no TLS, no cluster): bad bodies get a clean 400 naming the
//! problem, a wrong resource gets a denied AdmissionResponse, probes and metrics answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use certs::{CertResolver, InjectionHealth};
use serde_json::{Value, json};
use tower::ServiceExt;
use webhook::cli::state::StateDir;
use webhook::server::dispatch::{Endpoint, Settings};
use webhook::server::limits::Limits;
use webhook::server::metrics::Metrics;
use webhook::server::readiness::Signals;
use webhook::server::router::{AppState, router};

/// State serving a certificate issued at `issued` for `life` (none when `None`).
fn state(certificate: Option<(SystemTime, Duration)>) -> AppState<StateDir> {
    let resolver = Arc::new(CertResolver::new());
    if let Some((issued, life)) = certificate {
        let ca = certs::generate::new_authority(issued, Duration::from_secs(3600)).unwrap();
        let leaf = certs::generate::issue_serving(&ca, &["x".into()], issued, life).unwrap();
        resolver.install(&leaf.cert_pem, &leaf.key_pem).unwrap();
    }
    AppState::new(
        StateDir::default(),
        Settings::default(),
        Arc::new(Metrics::new()),
        resolver,
        Limits::default(),
    )
}

fn app(ready: bool) -> axum::Router {
    let certificate = ready.then(|| (SystemTime::now(), Duration::from_secs(600)));
    router(Arc::new(state(certificate)))
}

async fn call(
    app: axum::Router,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> (StatusCode, String) {
    let mut request = Request::post(path);
    if let Some(ct) = content_type {
        request = request.header(header::CONTENT_TYPE, ct);
    }
    let response = app
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn review(resource: &str, object: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u1",
            "kind": {"group": "garage.rajsingh.info", "version": "v1beta2", "kind": "GarageCluster"},
            "resource": {"group": "garage.rajsingh.info", "version": "v1beta2", "resource": resource},
            "name": "g", "namespace": "n", "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": object
        }
    }))
    .unwrap()
}

const JSON: Option<&str> = Some("application/json");

#[tokio::test]
async fn bad_requests_get_a_clean_400() {
    let path = Endpoint::ValidateClusterV1beta2.path();
    let cases: Vec<(&str, Option<&str>, Vec<u8>, &str)> = vec![
        (
            "malformed JSON",
            JSON,
            b"{\"kind\": ".to_vec(),
            "not an AdmissionReview",
        ),
        (
            "not a review",
            JSON,
            b"[1,2,3]".to_vec(),
            "not an AdmissionReview",
        ),
        (
            "no content type",
            None,
            review("garageclusters", json!({})),
            "Content-Type: application/json",
        ),
        (
            "YAML content type",
            Some("application/yaml"),
            review("garageclusters", json!({})),
            "Content-Type",
        ),
        ("huge body", JSON, vec![b' '; 3 * 1024 * 1024 + 1], "limit"),
        (
            "no request",
            JSON,
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
            "carries no request",
        ),
        (
            "wrong review kind",
            JSON,
            br#"{"apiVersion":"v1","kind":"Pod","request":null}"#.to_vec(),
            "AdmissionReview",
        ),
    ];
    for (name, content_type, body, expected) in cases {
        let (status, text) = call(app(true), path, content_type, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{name}: {text}");
        assert!(
            text.contains(expected),
            "{name}: {text:?} lacks {expected:?}"
        );
    }
    let (status, text) = call(app(true), "/convert", JSON, b"nope".to_vec()).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(text.contains("ConversionReview"), "{text}");
}

#[tokio::test]
async fn a_wrong_resource_is_denied_by_name() {
    let path = Endpoint::ValidateClusterV1beta2.path();
    let (status, text) = call(
        app(true),
        path,
        JSON,
        review("garagenodes", json!({"metadata": {}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["response"]["uid"], "u1");
    assert_eq!(answer["response"]["allowed"], false);
    let message = answer["response"]["status"]["message"].as_str().unwrap();
    assert!(message.contains("garagenodes"), "{message}");
    assert_eq!(answer["response"]["status"]["code"], 400);

    // An object that is not a GarageCluster at all.
    let (_, text) = call(
        app(true),
        path,
        JSON,
        review(
            "garageclusters",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {}}),
        ),
    )
    .await;
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["response"]["allowed"], false);
    assert!(
        answer["response"]["status"]["message"]
            .as_str()
            .unwrap()
            .contains("Pod")
    );
}

#[tokio::test]
async fn probes_and_metrics() {
    let get = |path: &str| Request::get(path).body(Body::empty()).unwrap();
    let response = app(false).oneshot(get("/healthz")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let response = app(false).oneshot(get("/readyz")).await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let response = app(true).oneshot(get("/readyz")).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);

    let shared = app(true);
    let _ = call(
        shared.clone(),
        Endpoint::ValidateClusterV1beta2.path(),
        JSON,
        b"{".to_vec(),
    )
    .await;
    let response = shared.oneshot(get("/metrics")).await.unwrap();
    let text = String::from_utf8(
        axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap()
            .to_vec(),
    )
    .unwrap();
    assert!(
        text.contains(r#"garage_webhook_requests_total{path="/validate-garage-rajsingh-info-v1beta2-garagecluster",verdict="rejected"} 1"#),
        "{text}"
    );
    assert!(
        text.contains("garage_webhook_certificate_generation 1"),
        "{text}"
    );
    for metric in [
        "garage_webhook_certificate_expiry_seconds 59",
        "garage_webhook_ca_bundle_injection_failures_total 0",
        "garage_webhook_ca_bundle_injection_failing_passes 0",
        "garage_webhook_review_budget_bytes 50331648",
        "garage_webhook_review_budget_in_use_bytes 0",
    ] {
        assert!(text.contains(metric), "{metric} missing from {text}");
    }
    let response = app(true).oneshot(get("/nope")).await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
}

async fn readyz(app: axum::Router) -> (StatusCode, String, Option<String>) {
    let request = Request::get("/readyz").body(Body::empty()).unwrap();
    let response = app.oneshot(request).await.unwrap();
    let status = response.status();
    let connection = response
        .headers()
        .get(header::CONNECTION)
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        status,
        String::from_utf8_lossy(&bytes).into_owned(),
        connection,
    )
}

#[tokio::test]
async fn readiness_follows_shutdown_expiry_and_injection() {
    let now = SystemTime::now();
    let (status, _, connection) = readyz(app(true)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(connection, None);

    // Shutdown: not ready, and every answer closes its connection.
    let draining = state(Some((now, Duration::from_secs(600))));
    draining.signals.begin_draining();
    let (status, text, connection) = readyz(router(Arc::new(draining))).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(text.contains("shutting down"), "{text}");
    assert_eq!(connection.as_deref(), Some("close"));

    // A 600 s certificate with 30 s left is inside its 60 s window.
    let expiring = state(Some((
        now - Duration::from_secs(570),
        Duration::from_secs(600),
    )));
    let (status, text, _) = readyz(router(Arc::new(expiring))).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(text.contains("expires in"), "{text}");

    // Three injection passes failed in a row.
    let mut failing = state(Some((now, Duration::from_secs(600))));
    let injection = Arc::new(InjectionHealth::new());
    for _ in 0..3 {
        injection.record(&Err::<(), _>(certs::Error::Config(
            "patch forbidden".into(),
        )));
    }
    failing.signals = Arc::new(Signals::new(injection));
    let (status, text, _) = readyz(router(Arc::new(failing))).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(text.contains("failed 3 times in a row"), "{text}");
    assert!(text.contains("patch forbidden"), "{text}");
}

fn v1beta1_review(resource: &str, operation: &str, object: Value) -> Vec<u8> {
    let kind = object["kind"].clone();
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u2",
            "kind": {"group": "garage.rajsingh.info", "version": "v1beta1", "kind": kind},
            "resource": {"group": "garage.rajsingh.info", "version": "v1beta1", "resource": resource},
            "name": "x", "namespace": "n", "operation": operation,
            "userInfo": {"username": "alice"},
            "object": object,
            "oldObject": if operation == "DELETE" { object.clone() } else { Value::Null },
        }
    }))
    .unwrap()
}

async fn denial(path: &str, body: Vec<u8>) -> (Value, String) {
    let (status, text) = call(app(true), path, JSON, body).await;
    assert_eq!(status, StatusCode::OK, "{path}: {text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let message = answer["response"]["status"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (answer, message)
}

#[tokio::test]
async fn bucket_key_token_and_grant_endpoints_refuse_hostile_input_cleanly() {
    let object = |kind: &str, spec: Value| json!({"apiVersion": "garage.rajsingh.info/v1beta1", "kind": kind, "metadata": {"name": "x", "namespace": "n"}, "spec": spec});
    let endpoints = [
        (
            Endpoint::MutateBucket,
            "garagebuckets",
            object("GarageBucket", json!({"clusterRef": {"name": "garage"}})),
        ),
        (
            Endpoint::ValidateBucket,
            "garagebuckets",
            object(
                "GarageBucket",
                json!({"clusterRef": {"name": "garage"}, "globalAlias": "xyz"}),
            ),
        ),
        (
            Endpoint::MutateKey,
            "garagekeys",
            object("GarageKey", json!({"clusterRef": {"name": "garage"}})),
        ),
        (
            Endpoint::ValidateKey,
            "garagekeys",
            object("GarageKey", json!({"clusterRef": {"name": "garage"}})),
        ),
        (
            Endpoint::ValidateAdminToken,
            "garageadmintokens",
            object(
                "GarageAdminToken",
                json!({"clusterRef": {"name": "garage"}}),
            ),
        ),
        (
            Endpoint::ValidateReferenceGrant,
            "garagereferencegrants",
            object(
                "GarageReferenceGrant",
                json!({"from": [{"kind": "GarageKey", "namespace": "apps"}]}),
            ),
        ),
    ];
    for (endpoint, resource, valid) in endpoints {
        let path = endpoint.path();
        for (case, body, expected) in [
            (
                "malformed JSON",
                b"{\"kind\": ".to_vec(),
                "not an AdmissionReview",
            ),
            ("huge body", vec![b' '; 3 * 1024 * 1024 + 1], "limit"),
            (
                "not a review",
                b"[1,2,3]".to_vec(),
                "not an AdmissionReview",
            ),
        ] {
            let (status, text) = call(app(true), path, JSON, body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{path} {case}: {text}");
            assert!(
                text.contains(expected),
                "{path} {case}: {text:?} lacks {expected:?}"
            );
        }

        // The object is not of the endpoint's kind.
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}});
        let (answer, message) = denial(path, v1beta1_review(resource, "CREATE", pod)).await;
        assert_eq!(answer["response"]["allowed"], false, "{path}");
        assert_eq!(answer["response"]["status"]["code"], 400, "{path}");
        assert!(message.contains("Pod"), "{path}: {message}");

        // A request for another resource.
        let (answer, message) =
            denial(path, v1beta1_review("garagenodes", "CREATE", valid.clone())).await;
        assert_eq!(answer["response"]["allowed"], false, "{path}");
        assert!(
            message.contains("garagenodes") && message.contains(resource),
            "{path}: {message}"
        );

        // A spec of the wrong shape does not decode: denied naming the problem.
        let mut garbled = valid.clone();
        garbled["spec"] = json!({"clusterRef": 7, "from": "everyone"});
        let (answer, message) = denial(path, v1beta1_review(resource, "CREATE", garbled)).await;
        assert_eq!(answer["response"]["allowed"], false, "{path}");
        assert!(message.contains("does not decode"), "{path}: {message}");

        // The same endpoint admits a valid object, and answers a DELETE.
        for operation in ["CREATE", "DELETE"] {
            let (answer, message) =
                denial(path, v1beta1_review(resource, operation, valid.clone())).await;
            assert_eq!(
                answer["response"]["allowed"], true,
                "{path} {operation}: {message}"
            );
        }
    }
}
