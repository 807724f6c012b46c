//! HTTP routes: the admission and conversion endpoints, health, readiness and metrics.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::Bytes;
use axum::error_handling::HandleErrorLayer;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use certs::CertResolver;
use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionReview};
use kube::core::conversion::ConversionReview;
use tower::{BoxError, ServiceBuilder};

use super::context_reader::ContextSource;
use super::dispatch::{self, CONVERT_PATH, Endpoint, Settings};
use super::limits::Limits;
use super::metrics::Metrics;

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

/// Reads a JSON body within the size limit, or says why not.
async fn json_body(request: Request, limit: usize) -> Result<Bytes, Response> {
    if !is_json(request.headers()) {
        return Err(bad_request(
            "the request body must be JSON (Content-Type: application/json)",
        ));
    }
    axum::body::to_bytes(request.into_body(), limit)
        .await
        .map_err(|e| {
            bad_request(format!(
                "the request body could not be read within the {limit}-byte limit: {e}"
            ))
        })
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
    let body = match json_body(request, state.limits.max_body_bytes).await {
        Ok(body) => body,
        Err(response) => {
            state.metrics.observe(path, "rejected", started.elapsed());
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
    match serde_json::to_vec(&answer.response.into_review()) {
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
    let body = match json_body(request, state.limits.max_body_bytes).await {
        Ok(body) => body,
        Err(response) => {
            state
                .metrics
                .observe(CONVERT_PATH, "rejected", started.elapsed());
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
    match serde_json::to_vec(&answered) {
        Ok(body) => json(body),
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the response does not encode: {e}"),
        )
            .into_response(),
    }
}

async fn readyz<S: ContextSource + 'static>(State(state): State<Arc<AppState<S>>>) -> Response {
    if state.resolver.is_ready() {
        (StatusCode::OK, "ok").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "no serving certificate is loaded yet",
        )
            .into_response()
    }
}

async fn metrics<S: ContextSource + 'static>(State(state): State<Arc<AppState<S>>>) -> Response {
    state
        .metrics
        .set_certificate_generation(state.resolver.generation());
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

/// The webhook's routes. Review endpoints share a timeout and a bound on concurrent reviews;
/// the probes and metrics stay outside both so that a saturated webhook still answers them.
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
        .with_state(state)
}
