//! HTTP routes: the admission and conversion endpoints, health, readiness and metrics.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use axum::Router;
use axum::body::{Bytes, HttpBody};
use axum::error_handling::HandleErrorLayer;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use certs::CertResolver;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionReview};
use kube::core::conversion::ConversionReview;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::{BoxError, ServiceBuilder};

use super::body::{self, BodyError};
use super::budget::{Budget, Charge, Refusal};
use super::context_reader::ContextSource;
use super::dispatch::{self, CONVERT_PATH, Endpoint, Settings};
use super::limits::Limits;
use super::metrics::{Metrics, Snapshot};
use super::readiness::{self, Inputs, Readiness, Signals, Thresholds};

/// What every handler shares.
pub struct AppState<S> {
    /// Where cross-object rules read from.
    pub source: S,
    /// Rule settings.
    pub settings: Settings,
    /// Metrics registry.
    pub metrics: Arc<Metrics>,
    /// The served keypair; readiness waits for it.
    pub resolver: Arc<CertResolver>,
    /// Request limits.
    pub limits: Limits,
    /// The memory budget of the reviews in flight (sized by `limits`).
    pub budget: Arc<Budget>,
    /// The slots of `limits.max_in_flight`: one semaphore every review route takes from, so
    /// that the bound holds for all of them together.
    pub in_flight: Arc<Semaphore>,
    /// Shutdown and caBundle injection state, for readiness.
    pub signals: Arc<Signals>,
}

impl<S> AppState<S> {
    /// State with a budget and in-flight slots sized by `limits`, and signals that report no
    /// shutdown and no injection failure.
    pub fn new(
        source: S,
        settings: Settings,
        metrics: Arc<Metrics>,
        resolver: Arc<CertResolver>,
        limits: Limits,
    ) -> Self {
        AppState {
            source,
            settings,
            metrics,
            resolver,
            budget: Budget::new(limits.review_budget_bytes, limits.budget_wait),
            in_flight: Arc::new(Semaphore::new(limits.max_in_flight)),
            limits,
            signals: Arc::default(),
        }
    }

    /// What readiness is decided from now.
    pub fn readiness_inputs(&self) -> Inputs {
        let injection = self.signals.injection();
        Inputs {
            draining: self.signals.is_draining(),
            certificate: self.resolver.current_validity(),
            now: SystemTime::now(),
            injection_failing_passes: injection.failing_passes(),
            injection_error: injection.last_error(),
        }
    }
}

/// A plain-text client error. The body names the problem; the API server shows it to the user
/// as the webhook's failure.
fn bad_request(message: impl Into<String>) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        message.into(),
    )
        .into_response()
}

fn json(body: Vec<u8>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// A review refused for want of memory: 429 with a Retry-After when the budget had no room,
/// 413 when the review could never fit.
fn over_budget(refusal: Refusal) -> Response {
    let message = refusal.message();
    match refusal {
        Refusal::Busy { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            [
                (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                (header::RETRY_AFTER, "1"),
            ],
            message,
        )
            .into_response(),
        Refusal::TooLarge { .. } => (
            StatusCode::PAYLOAD_TOO_LARGE,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            message,
        )
            .into_response(),
    }
}

fn refusal_verdict(refusal: Refusal) -> &'static str {
    match refusal {
        Refusal::Busy { .. } => "throttled",
        Refusal::TooLarge { .. } => "too_large",
    }
}

/// A request whose body did not arrive in time: 408, and the connection is closed since the
/// rest of its body is never read.
fn body_timed_out(allowed: std::time::Duration) -> Response {
    (
        StatusCode::REQUEST_TIMEOUT,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CONNECTION, "close"),
        ],
        format!(
            "the request body did not arrive within {} ms",
            allowed.as_millis()
        ),
    )
        .into_response()
}

/// Reads a JSON review body within the size limit, the memory budget and the body deadline
/// ([`body::receive`]), or says why not (with the verdict label for metrics). The body is
/// charged as it arrives, then what decoding it will take; the charge must be held until the
/// answer is written.
async fn review_body(
    request: Request,
    limits: &Limits,
    budget: &Arc<Budget>,
) -> Result<(Bytes, Charge), (&'static str, Response)> {
    if !is_json(request.headers()) {
        return Err((
            "rejected",
            bad_request("the request body must be JSON (Content-Type: application/json)"),
        ));
    }
    let declared = request
        .body()
        .size_hint()
        .upper()
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let limit = limits.max_body_bytes;
    let unreadable = |e: &str| {
        bad_request(format!(
            "the request body could not be read within the {limit}-byte limit: {e}"
        ))
    };
    match body::receive(request.into_body(), declared, limits, budget).await {
        Ok(received) => Ok(received),
        Err(BodyError::Refused(refusal)) => Err((refusal_verdict(refusal), over_budget(refusal))),
        Err(BodyError::TimedOut { allowed }) => Err(("timed_out", body_timed_out(allowed))),
        Err(BodyError::TooLong { .. }) => Err(("rejected", unreadable("length limit exceeded"))),
        Err(BodyError::Unreadable(e)) => Err(("rejected", unreadable(&e))),
    }
}

/// A slot of the shared bound on reviews in flight, taken once the review's body and its
/// charge are in hand: a review holding a slot waits for nothing else, so slots always come
/// free, and a body still arriving holds none.
async fn in_flight_slot(slots: &Arc<Semaphore>) -> OwnedSemaphorePermit {
    // The semaphore is never closed; were it, no slot could ever be had.
    match slots.clone().acquire_owned().await {
        Ok(slot) => slot,
        Err(_) => std::future::pending().await,
    }
}

/// Why a body is not an AdmissionReview the endpoints can review.
#[derive(Debug)]
pub enum Malformed {
    /// It is not JSON of an AdmissionReview's shape.
    Json(serde_json::Error),
    /// It is an object of another apiVersion or kind.
    OtherType {
        /// Its apiVersion.
        api_version: String,
        /// Its kind.
        kind: String,
    },
    /// It carries no `request`.
    NoRequest,
}

impl std::fmt::Display for Malformed {
    /// The whole reason, for the caller, who sent the body. It may quote values from the body
    /// (serde_json names an unknown variant or an unexpected string by its value), so it is
    /// never logged; [`Malformed::failure`] and [`Malformed::position`] are.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Malformed::Json(e) => write!(f, "the body is not an AdmissionReview: {e}"),
            Malformed::OtherType { api_version, kind } => write!(
                f,
                "expected an admission.k8s.io/v1 AdmissionReview, got {api_version:?} {kind:?}"
            ),
            Malformed::NoRequest => f.write_str("the AdmissionReview carries no request"),
        }
    }
}

impl std::error::Error for Malformed {}

impl Malformed {
    /// The kind of failure, naming no value from the body.
    pub fn failure(&self) -> &'static str {
        match self {
            Malformed::Json(e) => match e.classify() {
                serde_json::error::Category::Syntax => "json_syntax",
                serde_json::error::Category::Eof => "json_eof",
                serde_json::error::Category::Data => "json_data",
                serde_json::error::Category::Io => "json_io",
            },
            Malformed::OtherType { .. } => "not_an_admission_review",
            Malformed::NoRequest => "no_request",
        }
    }

    /// Where in the body the JSON failed (line and column, from 1), when it did.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            Malformed::Json(e) if e.line() > 0 => Some((e.line(), e.column())),
            _ => None,
        }
    }
}

/// Decodes an HTTP body into the AdmissionRequest every admission endpoint reviews, or says why
/// it is not one.
pub fn parse_review(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, Malformed> {
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_slice(body).map_err(Malformed::Json)?;
    if review.types.kind != "AdmissionReview" || review.types.api_version != "admission.k8s.io/v1" {
        return Err(Malformed::OtherType {
            api_version: review.types.api_version,
            kind: review.types.kind,
        });
    }
    review.try_into().map_err(|_| Malformed::NoRequest)
}

/// Logs a review that did not parse by the kind of failure and its position only.
fn log_malformed(path: &str, malformed: &Malformed) {
    let (line, column) = malformed.position().unzip();
    tracing::info!(
        path,
        failure = malformed.failure(),
        line,
        column,
        "malformed admission request"
    );
}

/// [`parse_review`] with the reason as text. Public so that the fuzz targets feed untrusted
/// bytes through the very function the server uses rather than a copy of it.
pub fn decode_review(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, String> {
    parse_review(body).map_err(|e| e.to_string())
}

async fn admission<S: ContextSource + 'static>(
    State(state): State<Arc<AppState<S>>>,
    endpoint: Endpoint,
    request: Request,
) -> Response {
    let started = Instant::now();
    let path = endpoint.path();
    let (body, charge) = match review_body(request, &state.limits, &state.budget).await {
        Ok(read) => read,
        Err((verdict, response)) => {
            state.metrics.observe(path, verdict, started.elapsed());
            return response;
        }
    };
    let _slot = in_flight_slot(&state.in_flight).await;
    let request = match parse_review(&body) {
        Ok(request) => request,
        Err(malformed) => {
            log_malformed(path, &malformed);
            state.metrics.observe(path, "rejected", started.elapsed());
            return bad_request(malformed.to_string());
        }
    };
    let answer = dispatch::review(endpoint, &request, &state.source, &state.settings).await;
    let verdict = answer.outcome.as_str();
    let elapsed = started.elapsed();
    state.metrics.observe(path, verdict, elapsed);
    let namespace = request.namespace.as_deref().unwrap_or_default();
    let user = request.user_info.username.as_deref().unwrap_or_default();
    if answer.response.allowed {
        tracing::debug!(path, uid = %request.uid, namespace, name = %request.name, user, verdict, elapsed_ms = elapsed.as_millis() as u64, "reviewed");
    } else {
        tracing::info!(path, uid = %request.uid, namespace, name = %request.name, user, verdict, message = %answer.response.result.message, elapsed_ms = elapsed.as_millis() as u64, "denied");
    }
    drop(request);
    drop(body);
    charge.hold_until_sent(encoded(&answer.response.into_review()))
}

/// The JSON answer, or a 500 saying why it does not encode.
fn encoded(answer: &impl serde::Serialize) -> Response {
    match serde_json::to_vec(answer) {
        Ok(body) => json(body),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the response does not encode: {e}"),
        )
            .into_response(),
    }
}

async fn convert<S: ContextSource + 'static>(
    State(state): State<Arc<AppState<S>>>,
    request: Request,
) -> Response {
    let started = Instant::now();
    let (body, charge) = match review_body(request, &state.limits, &state.budget).await {
        Ok(read) => read,
        Err((verdict, response)) => {
            state
                .metrics
                .observe(CONVERT_PATH, verdict, started.elapsed());
            return response;
        }
    };
    let _slot = in_flight_slot(&state.in_flight).await;
    let review: ConversionReview = match serde_json::from_slice(&body) {
        Ok(review) => review,
        Err(e) => {
            state
                .metrics
                .observe(CONVERT_PATH, "rejected", started.elapsed());
            return bad_request(format!("the body is not a ConversionReview: {e}"));
        }
    };
    let answered = crate::convert::convert_review(review);
    let ok = answered
        .response
        .as_ref()
        .is_some_and(|r| r.result.status == Some(kube::core::response::StatusSummary::Success));
    if !ok {
        let message = answered
            .response
            .as_ref()
            .map(|r| r.result.message.clone())
            .unwrap_or_default();
        tracing::info!(%message, "conversion refused");
    }
    state.metrics.observe(
        CONVERT_PATH,
        if ok { "allowed" } else { "denied" },
        started.elapsed(),
    );
    drop(body);
    charge.hold_until_sent(encoded(&answered))
}

async fn readyz<S: ContextSource + 'static>(State(state): State<Arc<AppState<S>>>) -> Response {
    match readiness::decide(&state.readiness_inputs(), &Thresholds::default()) {
        Readiness::Ready => (StatusCode::OK, "ok").into_response(),
        Readiness::NotReady(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    }
}

async fn metrics<S: ContextSource + 'static>(State(state): State<Arc<AppState<S>>>) -> Response {
    let injection = state.signals.injection();
    state.metrics.record(&Snapshot {
        certificate_generation: state.resolver.generation(),
        certificate_not_after: state.resolver.current_validity().map(|v| v.not_after),
        now: SystemTime::now(),
        injection_failures: injection.failures_total(),
        injection_failing_passes: injection.failing_passes(),
        budget_total: state.budget.total(),
        budget_in_use: state.budget.in_use(),
    });
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(),
    )
        .into_response()
}

async fn overloaded(error: BoxError) -> Response {
    if error.is::<tower::timeout::error::Elapsed>() {
        (StatusCode::REQUEST_TIMEOUT, "the request took too long").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the webhook cannot take the request now: {error}"),
        )
            .into_response()
    }
}

/// Once shutdown has begun, every answer closes its connection, so that a client holding a
/// keep-alive connection to this replica opens its next one through the Service, to a replica
/// that stays.
async fn close_when_draining<S: ContextSource + 'static>(
    State(state): State<Arc<AppState<S>>>,
    mut response: Response,
) -> Response {
    if state.signals.is_draining() {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// The webhook's routes. Review endpoints share a timeout, the bound on reviews in flight
/// ([`AppState::in_flight`], taken in the handlers: a tower concurrency layer here would be
/// instantiated once per route, each with its own bound) and the memory budget; the probes and
/// metrics stay outside them so that a saturated webhook still answers them.
pub fn router<S: ContextSource + 'static>(state: Arc<AppState<S>>) -> Router {
    let limits = state.limits;
    let mut reviews = Router::new().route(CONVERT_PATH, post(convert::<S>));
    for endpoint in Endpoint::ALL {
        reviews = reviews.route(
            endpoint.path(),
            post(move |state: State<Arc<AppState<S>>>, request: Request| {
                admission(state, endpoint, request)
            }),
        );
    }
    let reviews = reviews.layer(
        ServiceBuilder::new()
            .layer(HandleErrorLayer::new(overloaded))
            .timeout(limits.request_timeout),
    );
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz::<S>))
        .route("/metrics", get(metrics::<S>))
        .merge(reviews)
        .fallback(|| async { (StatusCode::NOT_FOUND, "no such endpoint") })
        .layer(axum::middleware::map_response_with_state(
            state.clone(),
            close_when_draining::<S>,
        ))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "hunter2-S3CR3T";

    /// A review with `field` at `pointer` replaced.
    fn review_with(pointer: &str, field: serde_json::Value) -> Vec<u8> {
        let mut review = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u1",
                "kind": {"group": "g", "version": "v1", "kind": "K"},
                "resource": {"group": "g", "version": "v1", "resource": "ks"},
                "operation": "CREATE",
                "userInfo": {"username": "alice"}
            }
        });
        if let Some(slot) = review.pointer_mut(pointer) {
            *slot = field;
        }
        serde_json::to_vec(&review).unwrap()
    }

    /// Line 1, the column of the quote that closes the first `SECRET` in `body`: where
    /// serde_json stops at a bad string value.
    fn after_secret(body: &[u8]) -> Option<(usize, usize)> {
        let text = String::from_utf8_lossy(body);
        text.find(SECRET).map(|at| (1, at + SECRET.len() + 1))
    }

    #[test]
    fn a_malformed_review_is_described_for_the_log_without_its_values() {
        let truncated = format!("{{\"apiVersion\": \"{SECRET}\",\n \"kind\": ");
        let operation = review_with("/request/operation", SECRET.into());
        let user = review_with("/request/userInfo", SECRET.into());
        type Case = (&'static str, Vec<u8>, &'static str, Option<(usize, usize)>);
        // (case, body, failure, position)
        let cases: Vec<Case> = vec![
            (
                "unknown operation",
                operation.clone(),
                "json_data",
                after_secret(&operation),
            ),
            (
                "string where an object goes",
                user.clone(),
                "json_data",
                after_secret(&user),
            ),
            (
                "truncated",
                truncated.into_bytes(),
                "json_eof",
                Some((2, 9)),
            ),
            (
                "not JSON",
                SECRET.as_bytes().to_vec(),
                "json_syntax",
                Some((1, 1)),
            ),
            (
                "another type",
                review_with("/apiVersion", SECRET.into()),
                "not_an_admission_review",
                None,
            ),
            (
                "no request",
                review_with("/request", serde_json::Value::Null),
                "no_request",
                None,
            ),
        ];
        for (case, body, failure, position) in cases {
            let malformed = parse_review(&body).unwrap_err();
            assert_eq!(malformed.failure(), failure, "{case}: {malformed}");
            assert_eq!(malformed.position(), position, "{case}: {malformed}");
        }
        // The caller is told the whole reason, which quotes the body: that is why the log
        // line is built from the failure and position alone.
        let malformed = parse_review(&operation).unwrap_err();
        assert!(malformed.to_string().contains(SECRET), "{malformed}");
    }
}
