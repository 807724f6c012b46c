//! Prometheus metrics: reviews by path and verdict, and review latency by path.

use std::sync::Mutex;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Labels of the request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The endpoint path (unknown paths are counted as `other`, so a scanner cannot grow the
    /// label set without bound).
    pub path: String,
    /// `allowed`, `patched`, `denied`, `invalid`, `unavailable`, or `rejected` for a body
    /// refused before it became a review.
    pub verdict: String,
}

/// Labels of the latency histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PathLabels {
    /// The endpoint path.
    pub path: String,
}

fn latency_histogram() -> Histogram {
    // 1 ms to ~16 s: the API server gives a webhook 10 s by default.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// The webhook's metrics and their registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
    latency: Family<PathLabels, Histogram, fn() -> Histogram>,
    certificate_generation: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry holding every metric, at zero.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("garage_webhook");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency = Family::<PathLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        let certificate_generation = Gauge::default();
        registry.register(
            "requests",
            "Admission and conversion reviews by path and verdict",
            requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "Time from request to response by path",
            latency.clone(),
        );
        registry.register(
            "certificate_generation",
            "How many serving keypairs were installed since start",
            certificate_generation.clone(),
        );
        Metrics {
            registry: Mutex::new(registry),
            requests,
            latency,
            certificate_generation,
        }
    }

    /// Counts one request and its latency.
    pub fn observe(&self, path: &str, verdict: &str, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                path: path.to_owned(),
                verdict: verdict.to_owned(),
            })
            .inc();
        self.latency
            .get_or_create(&PathLabels {
                path: path.to_owned(),
            })
            .observe(elapsed.as_secs_f64());
    }

    /// Records the number of keypairs installed so far.
    pub fn set_certificate_generation(&self, generation: u64) {
        self.certificate_generation
            .set(i64::try_from(generation).unwrap_or(i64::MAX));
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let registry = match self.registry.lock() {
            Ok(r) => r,
            // A panic while rendering cannot leave the registry half-written: it is only read.
            Err(poisoned) => poisoned.into_inner(),
        };
        if encode(&mut out, &registry).is_err() {
            out.clear();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_histograms() {
        let m = Metrics::new();
        m.observe("/convert", "allowed", Duration::from_millis(3));
        let text = m.render();
        assert!(
            text.contains(r#"garage_webhook_requests_total{path="/convert",verdict="allowed"} 1"#),
            "{text}"
        );
        assert!(text.contains("garage_webhook_request_duration_seconds_bucket"));
    }
}
