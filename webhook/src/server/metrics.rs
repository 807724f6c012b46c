//! Prometheus metrics: reviews by path and verdict, review latency by path, the review memory
//! budget, connections refused by the connection caps, and certificate health (time left on
//! the served certificate, caBundle injection failures).

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, SystemTime};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};

/// Labels of the request counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The endpoint path (unknown paths are counted as `other`, so a scanner cannot grow the
    /// label set without bound).
    pub path: String,
    /// `allowed`, `patched`, `denied`, `invalid`, `unavailable`, `rejected` for a body
    /// refused before it became a review, `throttled` for one answered 429 because the review
    /// memory budget had no room, `too_large` for one that could not fit in it at all,
    /// `timed_out` for one whose body did not arrive by its deadline (408).
    pub verdict: String,
}

/// Labels of the refused-connection counter.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    /// `per_source` when the connection's source address held its cap, `total` when the
    /// server held its cap of open connections.
    pub reason: String,
}

/// Labels of the latency histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PathLabels {
    /// The endpoint path.
    pub path: String,
}

/// `metric`, registered in `registry` under `name`.
fn registered<M: Metric + Clone>(registry: &mut Registry, name: &str, help: &str, metric: M) -> M {
    registry.register(name, help, metric.clone());
    metric
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
    certificate_expiry: Gauge<f64, AtomicU64>,
    injection_failures: Counter,
    injection_failing_passes: Gauge,
    budget_total: Gauge,
    budget_in_use: Gauge,
    connections_refused: Family<RefusalLabels, Counter>,
}

/// What the metrics endpoint reads from elsewhere at each scrape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Keypairs installed since start.
    pub certificate_generation: u64,
    /// When the served certificate expires, if one is served.
    pub certificate_not_after: Option<SystemTime>,
    /// The clock.
    pub now: SystemTime,
    /// Injection passes that failed since start.
    pub injection_failures: u64,
    /// Injection passes that failed in a row, up to the last one.
    pub injection_failing_passes: u32,
    /// The review memory budget.
    pub budget_total: usize,
    /// Bytes of it charged now.
    pub budget_in_use: usize,
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
        let certificate_expiry = registered(
            &mut registry,
            "certificate_expiry_seconds",
            "Seconds until the served certificate expires (negative once expired)",
            Gauge::<f64, AtomicU64>::default(),
        );
        let injection_failures = registered(
            &mut registry,
            "ca_bundle_injection_failures",
            "caBundle injection passes that failed (self-managed certificates)",
            Counter::default(),
        );
        let injection_failing_passes = registered(
            &mut registry,
            "ca_bundle_injection_failing_passes",
            "caBundle injection passes that failed in a row, up to the last one",
            Gauge::default(),
        );
        let budget_total = registered(
            &mut registry,
            "review_budget_bytes",
            "Memory the reviews in flight may hold together",
            Gauge::default(),
        );
        let budget_in_use = registered(
            &mut registry,
            "review_budget_in_use_bytes",
            "Memory charged to the reviews in flight",
            Gauge::default(),
        );
        let connections_refused = registered(
            &mut registry,
            "connections_refused",
            "Connections closed at accept because a connection cap was reached, by cap",
            Family::<RefusalLabels, Counter>::default(),
        );
        Metrics {
            registry: Mutex::new(registry),
            connections_refused,
            requests,
            latency,
            certificate_generation,
            certificate_expiry,
            injection_failures,
            injection_failing_passes,
            budget_total,
            budget_in_use,
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

    /// Counts one connection closed at accept, for `reason` (`per_source` or `total`).
    pub fn refuse_connection(&self, reason: &'static str) {
        self.connections_refused
            .get_or_create(&RefusalLabels {
                reason: reason.to_owned(),
            })
            .inc();
    }

    /// Records the number of keypairs installed so far.
    pub fn set_certificate_generation(&self, generation: u64) {
        self.certificate_generation
            .set(i64::try_from(generation).unwrap_or(i64::MAX));
    }

    /// Records what a scrape reads from elsewhere.
    pub fn record(&self, snapshot: &Snapshot) {
        self.set_certificate_generation(snapshot.certificate_generation);
        let left = snapshot.certificate_not_after.map_or(0.0, |at| {
            match at.duration_since(snapshot.now) {
                Ok(left) => left.as_secs_f64(),
                Err(past) => -past.duration().as_secs_f64(),
            }
        });
        self.certificate_expiry.set(left);
        // The source counts up only; the counter follows it.
        let counted = self.injection_failures.get();
        if snapshot.injection_failures > counted {
            self.injection_failures
                .inc_by(snapshot.injection_failures - counted);
        }
        self.injection_failing_passes
            .set(i64::from(snapshot.injection_failing_passes));
        let bytes = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.budget_total.set(bytes(snapshot.budget_total));
        self.budget_in_use.set(bytes(snapshot.budget_in_use));
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
        m.refuse_connection("per_source");
        m.refuse_connection("per_source");
        let text = m.render();
        assert!(
            text.contains(r#"garage_webhook_connections_refused_total{reason="per_source"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"garage_webhook_requests_total{path="/convert",verdict="allowed"} 1"#),
            "{text}"
        );
        assert!(text.contains("garage_webhook_request_duration_seconds_bucket"));
    }

    #[test]
    fn renders_certificate_health_and_the_budget() {
        let m = Metrics::new();
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let mut snapshot = Snapshot {
            certificate_generation: 2,
            certificate_not_after: Some(now + Duration::from_secs(90)),
            now,
            injection_failures: 3,
            injection_failing_passes: 2,
            budget_total: 48 << 20,
            budget_in_use: 1 << 20,
        };
        m.record(&snapshot);
        snapshot.injection_failures = 4;
        snapshot.certificate_not_after = Some(now - Duration::from_secs(5));
        m.record(&snapshot);
        let text = m.render();
        for line in [
            "garage_webhook_certificate_generation 2",
            "garage_webhook_certificate_expiry_seconds -5.0",
            "garage_webhook_ca_bundle_injection_failures_total 4",
            "garage_webhook_ca_bundle_injection_failing_passes 2",
            "garage_webhook_review_budget_bytes 50331648",
            "garage_webhook_review_budget_in_use_bytes 1048576",
        ] {
            assert!(text.contains(line), "{line} missing from {text}");
        }
    }
}
