//! HTTP routes: the admission and conversion endpoints, health, readiness and metrics.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::error_handling::HandleErrorLayer;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use certs::CertResolver;
use futures::StreamExt;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionReview};
use kube::core::conversion::ConversionReview;
use tower::{BoxError, ServiceBuilder};

use super::budget::{Budget, Charge, Refusal, decode_cost};
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
    /// Shutdown and caBundle injection state, for readiness.
    pub signals: Arc<Signals>,
}

impl<S> AppState<S> {
    /// State with a budget sized by `limits` and signals that report no shutdown and no
    /// injection failure.
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

/// Reads and discards up to `limit` bytes of `body`, one frame at a time, so that a refusal
/// sent before the body was read reaches the client instead of a reset connection.
async fn discard(body: Body, limit: usize) {
    let mut frames = body.into_data_stream();
    let mut seen = 0usize;
    while let Some(Ok(frame)) = frames.next().await {
        seen = seen.saturating_add(frame.len());
        if seen > limit {
            break;
        }
    }
}

/// Reads `body` into one buffer of `expected` bytes (grown if the body is longer), at most
/// `limit` bytes. Each piece is dropped once copied, so the body is held once, not as its
/// pieces and again as their concatenation.
async fn read_within(body: Body, limit: usize, expected: usize) -> Result<Bytes, String> {
    let mut frames = body.into_data_stream();
    let mut out = Vec::with_capacity(expected.min(limit));
    while let Some(frame) = frames.next().await {
        let frame = frame.map_err(|e| e.to_string())?;
        if out.len().saturating_add(frame.len()) > limit {
            return Err("length limit exceeded".to_owned());
        }
        out.extend_from_slice(&frame);
    }
    Ok(Bytes::from(out))
}

/// Reads a JSON review body within the size limit and the memory budget, or says why not
/// (with the verdict label for metrics). The body is charged before it is read (its declared
/// length, or the size limit when none is declared), then raised to what decoding it will
/// take; the charge must be held until the answer is written.
async fn review_body(
    request: Request,
    limit: usize,
    budget: &Arc<Budget>,
) -> Result<(Bytes, Charge), (&'static str, Response)> {
    if !is_json(request.headers()) {
        return Err((
            "rejected",
            bad_request("the request body must be JSON (Content-Type: application/json)"),
        ));
    }
    let declared = request.body().size_hint().upper().unwrap_or(u64::MAX);
    let declared = usize::try_from(declared).unwrap_or(usize::MAX).min(limit);
    let mut charge = match budget.charge(declared).await {
        Ok(charge) => charge,
        Err(refusal) => {
            discard(request.into_body(), limit).await;
            return Err((refusal_verdict(refusal), over_budget(refusal)));
        }
    };
    let body = read_within(request.into_body(), limit, declared)
        .await
        .map_err(|e| {
            (
                "rejected",
                bad_request(format!(
                    "the request body could not be read within the {limit}-byte limit: {e}"
                )),
            )
        })?;
    let needed = body.len().saturating_add(decode_cost(&body));
    if let Err(refusal) = charge.grow_to(needed).await {
        return Err((refusal_verdict(refusal), over_budget(refusal)));
    }
    Ok((body, charge))
}

/// Decodes an HTTP body into the AdmissionRequest every admission endpoint reviews, or says why
/// it is not one. Public so that the fuzz targets feed untrusted bytes through this very
/// function rather than a copy of it.
pub fn decode_review(body: &[u8]) -> Result<AdmissionRequest<DynamicObject>, String> {
    let review: AdmissionReview<DynamicObject> = serde_json::from_slice(body)
        .map_err(|e| format!("the body is not an AdmissionReview: {e}"))?;
    if review.types.kind != "AdmissionReview" || review.types.api_version != "admission.k8s.io/v1" {
        return Err(format!(
            "expected an admission.k8s.io/v1 AdmissionReview, got {:?} {:?}",
            review.types.api_version, review.types.kind
        ));
    }
    review
        .try_into()
        .map_err(|_| "the AdmissionReview carries no request".to_owned())
}

async fn admission<S: ContextSource + 'static>(
    State(state): State<Arc<AppState<S>>>,
    endpoint: Endpoint,
    request: Request,
) -> Response {
    let started = Instant::now();
    let path = endpoint.path();
    let (body, charge) =
        match review_body(request, state.limits.max_body_bytes, &state.budget).await {
            Ok(read) => read,
            Err((verdict, response)) => {
                state.metrics.observe(path, verdict, started.elapsed());
                return response;
            }
        };
    let request = match decode_review(&body) {
        Ok(request) => request,
        Err(message) => {
            tracing::info!(path, %message, "malformed admission request");
            state.metrics.observe(path, "rejected", started.elapsed());
            return bad_request(message);
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
    let (body, charge) =
        match review_body(request, state.limits.max_body_bytes, &state.budget).await {
            Ok(read) => read,
            Err((verdict, response)) => {
                state
                    .metrics
                    .observe(CONVERT_PATH, verdict, started.elapsed());
                return response;
            }
        };
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

/// The webhook's routes. Review endpoints share a timeout, a bound on concurrent reviews and
/// the memory budget; the probes and metrics stay outside them so that a saturated webhook
/// still answers them.
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
            .timeout(limits.request_timeout)
            .concurrency_limit(limits.max_in_flight),
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
