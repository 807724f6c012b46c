//! Limits of the router in-process (no TLS): the bound on reviews in flight is one bound shared
//! by every review route, and a review that does not parse is logged by the kind and position
//! of the failure only, never with values from its body.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use certs::CertResolver;
use serde_json::{Value, json};
use shared_types::garage_cluster::v1beta2;
use tokio::sync::Semaphore;
use tower::ServiceExt;
use webhook::admission::Context;
use webhook::server::context_reader::{ContextSource, Needs, ReadError};
use webhook::server::dispatch::{CONVERT_PATH, Endpoint, Settings};
use webhook::server::limits::Limits;
use webhook::server::metrics::Metrics;
use webhook::server::router::{AppState, router};

/// A context source whose reads wait until the test lets them through, so that reviews can be
/// held in flight.
#[derive(Clone)]
struct Gate {
    /// Reads that have begun.
    entered: Arc<Semaphore>,
    /// One permit lets one read finish.
    release: Arc<Semaphore>,
}

impl Gate {
    fn new() -> Gate {
        Gate {
            entered: Arc::new(Semaphore::new(0)),
            release: Arc::new(Semaphore::new(0)),
        }
    }

    /// Waits until `n` reads have begun.
    async fn entered(&self, n: u32) {
        let waited =
            tokio::time::timeout(Duration::from_secs(10), self.entered.acquire_many(n)).await;
        waited
            .expect("the reviews never reached their read")
            .unwrap()
            .forget();
    }
}

impl ContextSource for Gate {
    async fn read(&self, _needs: Needs, _namespace: Option<&str>) -> Result<Context, ReadError> {
        self.entered.add_permits(1);
        self.release.acquire().await.unwrap().forget();
        Ok(Context::default())
    }

    async fn garage_cluster(
        &self,
        _namespace: &str,
        _name: &str,
    ) -> Result<Option<v1beta2::GarageCluster>, ReadError> {
        Ok(None)
    }
}

fn app(gate: Gate, max_in_flight: usize) -> axum::Router {
    let state = AppState::new(
        gate,
        Settings::default(),
        Arc::new(Metrics::new()),
        Arc::new(CertResolver::new()),
        Limits {
            max_in_flight,
            ..Limits::default()
        },
    );
    router(Arc::new(state))
}

fn post(path: &str, body: &Value) -> Request<Body> {
    Request::post(path)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}

/// A GarageCluster CREATE review for the v1beta2 validator, which reads its context.
fn validation(uid: &str) -> Value {
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "garage.rajsingh.info", "version": "v1beta2", "kind": "GarageCluster"},
            "resource": {"group": "garage.rajsingh.info", "version": "v1beta2", "resource": "garageclusters"},
            "name": "garage", "namespace": "garage", "operation": "CREATE",
            "userInfo": {"username": "alice"},
            "object": {
                "apiVersion": "garage.rajsingh.info/v1beta2",
                "kind": "GarageCluster",
                "metadata": {"name": "garage", "namespace": "garage"},
                "spec": {
                    "replication": {"factor": 3, "consistencyMode": "consistent"},
                    "storage": {"replicas": 3, "metadata": {"size": "1Gi"}, "data": {"size": "10Gi"}}
                }
            }
        }
    })
}

fn conversion() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "c1", "desiredAPIVersion": "garage.rajsingh.info/v1beta1", "objects": []}
    })
}

/// Holds two validations in flight in their reads, then sends a conversion: whether it is
/// answered while the two are held is what `max_in_flight` decides.
async fn conversion_beside_two_held_validations(max_in_flight: usize) -> bool {
    let gate = Gate::new();
    let app = app(gate.clone(), max_in_flight);
    let path = Endpoint::ValidateClusterV1beta2.path();
    let held: Vec<_> = (0..2)
        .map(|i| {
            tokio::spawn(
                app.clone()
                    .oneshot(post(path, &validation(&format!("v{i}")))),
            )
        })
        .collect();
    gate.entered(2).await;
    let mut convert = tokio::spawn(app.clone().oneshot(post(CONVERT_PATH, &conversion())));
    let early = tokio::time::timeout(Duration::from_millis(500), &mut convert).await;
    let answered_while_held = early.is_ok();
    // Let the validations go: the conversion is answered then in any case.
    gate.release.add_permits(2);
    let response = match early {
        Ok(response) => response,
        Err(_) => tokio::time::timeout(Duration::from_secs(10), convert)
            .await
            .expect("the conversion was never answered"),
    };
    let response = response.unwrap().unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    for validation in held {
        assert_eq!(validation.await.unwrap().unwrap().status(), StatusCode::OK);
    }
    answered_while_held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bound_on_reviews_in_flight_is_shared_by_every_route() {
    // Two validations fill a bound of two: the conversion waits for a slot.
    assert!(
        !conversion_beside_two_held_validations(2).await,
        "a conversion was answered while the two reviews the limit allows were in flight on \
         another route"
    );
    // With room for a third, the same conversion is answered while the two are held.
    assert!(conversion_beside_two_held_validations(3).await);
}

/// A log writer the test reads back.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

const SECRET: &str = "hunter2-S3CR3T-token";

#[tokio::test]
async fn a_malformed_review_is_logged_without_values_from_its_body() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_max_level(tracing::Level::DEBUG)
        .with_writer(move || writer.clone())
        .finish();
    let _logging = tracing::subscriber::set_default(subscriber);

    let mut bad_operation = validation("u1");
    bad_operation["request"]["operation"] = json!(SECRET);
    let mut bad_uid = validation("u1");
    bad_uid["request"]["uid"] = json!({ "token": SECRET });
    let mut bad_user = validation("u1");
    bad_user["request"]["userInfo"]["username"] = json!([SECRET]);
    let bad_type = json!({"apiVersion": SECRET, "kind": "AdmissionReview", "request": null});
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "unknown operation",
            serde_json::to_vec(&bad_operation).unwrap(),
        ),
        (
            "uid of the wrong type",
            serde_json::to_vec(&bad_uid).unwrap(),
        ),
        (
            "username of the wrong type",
            serde_json::to_vec(&bad_user).unwrap(),
        ),
        ("another apiVersion", serde_json::to_vec(&bad_type).unwrap()),
        (
            "truncated",
            format!("{{\"apiVersion\": \"admission.k8s.io/v1\", \"secret\": \"{SECRET}\", ")
                .into_bytes(),
        ),
    ];
    let path = Endpoint::ValidateClusterV1beta2.path();
    for (case, body) in cases {
        let before = captured.text().len();
        let request = Request::post(path)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .unwrap();
        let response = app(Gate::new(), 8).oneshot(request).await.unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{case}");
        let logged = captured.text()[before..].to_owned();
        let line = logged
            .lines()
            .find(|l| l.contains("malformed admission request"))
            .unwrap_or_else(|| panic!("{case}: no log line in {logged:?}"));
        assert!(
            !line.contains("hunter2") && !line.contains("S3CR3T"),
            "{case}: the log line carries a value from the body: {line}"
        );
        let fields: Value = serde_json::from_str(line).unwrap();
        assert!(fields["failure"].is_string(), "{case}: {line}");
    }
}
