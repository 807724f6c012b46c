//! The reconciler's Prometheus metrics (`prometheus_client`), rendered on `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Which controller a figure belongs to.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabel {
    /// `garagecluster` or `garagenode`.
    pub controller: &'static str,
}

/// A failed pass: the controller and the error's label ([`super::Error::metric_label`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FailureLabels {
    /// Controller.
    pub controller: &'static str,
    /// Error label.
    pub error: &'static str,
}

/// One step of a multi-step transaction.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StepLabels {
    /// Transaction (`teardown`, `drain`, ...).
    pub machine: &'static str,
    /// Step taken.
    pub step: &'static str,
}

/// Every figure the reconciler exports.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reconciles: Family<ControllerLabel, Counter>,
    failures: Family<FailureLabels, Counter>,
    duration: Family<ControllerLabel, Histogram>,
    api_writes: Counter,
    layout_applies: Counter,
    steps: Family<StepLabels, Counter>,
    // Kept beside the counters so tests can read them without parsing the exposition.
    writes_seen: AtomicU64,
    passes_seen: AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("garage_reconciler");
        let reconciles = Family::<ControllerLabel, Counter>::default();
        let failures = Family::<FailureLabels, Counter>::default();
        let duration = Family::<ControllerLabel, Histogram>::new_with_constructor(|| {
            // 1 ms to ~65 s: a pass is a few reads and writes, or one Admin API timeout.
            Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
                0.001, 2.0, 17,
            ))
        });
        let api_writes = Counter::default();
        let layout_applies = Counter::default();
        let steps = Family::<StepLabels, Counter>::default();
        registry.register("reconciles", "Reconcile passes.", reconciles.clone());
        registry.register(
            "failures",
            "Reconcile passes that failed, by controller and error.",
            failures.clone(),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Duration of a reconcile pass.",
            duration.clone(),
        );
        registry.register(
            "api_writes",
            "Writes to the Kubernetes API.",
            api_writes.clone(),
        );
        registry.register(
            "layout_applies",
            "Garage layout versions applied.",
            layout_applies.clone(),
        );
        registry.register(
            "transaction_steps",
            "Steps taken by multi-step transactions (teardown, drain, rollout).",
            steps.clone(),
        );
        Self {
            registry,
            reconciles,
            failures,
            duration,
            api_writes,
            layout_applies,
            steps,
            writes_seen: AtomicU64::new(0),
            passes_seen: AtomicU64::new(0),
        }
    }
}

impl Metrics {
    /// Counts one pass of `controller` that took `elapsed`.
    pub fn reconciled(&self, controller: &'static str, elapsed: Duration) {
        let label = ControllerLabel { controller };
        self.reconciles.get_or_create(&label).inc();
        self.passes_seen.fetch_add(1, Ordering::Relaxed);
        self.duration
            .get_or_create(&label)
            .observe(elapsed.as_secs_f64());
    }

    /// Passes so far, over both controllers.
    pub fn reconciles(&self) -> u64 {
        self.passes_seen.load(Ordering::Relaxed)
    }

    /// Counts a failed pass.
    pub fn failed(&self, controller: &'static str, error: &'static str) {
        self.failures
            .get_or_create(&FailureLabels { controller, error })
            .inc();
    }

    /// Counts one write to the Kubernetes API.
    pub fn wrote(&self) {
        self.api_writes.inc();
        self.writes_seen.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes to the Kubernetes API so far.
    pub fn api_writes(&self) -> u64 {
        self.writes_seen.load(Ordering::Relaxed)
    }

    /// Counts one applied layout version.
    pub fn layout_applied(&self) {
        self.layout_applies.inc();
    }

    /// Layout versions applied so far.
    pub fn layout_applies(&self) -> u64 {
        self.layout_applies.get()
    }

    /// Counts one step of a transaction.
    pub fn step(&self, machine: &'static str, step: &'static str) {
        self.steps
            .get_or_create(&StepLabels { machine, step })
            .inc();
    }

    /// Failed passes so far, over every controller and error.
    pub fn failures(&self) -> u64 {
        let text = self.render();
        text.lines()
            .filter(|l| l.starts_with("garage_reconciler_failures_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    }

    /// Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_names_every_figure_with_its_labels() {
        let m = Metrics::default();
        m.reconciled("garagecluster", Duration::from_millis(3));
        m.failed("garagenode", "garage");
        m.wrote();
        m.layout_applied();
        m.step("teardown", "delete_nodes");
        let text = m.render();
        for line in [
            "garage_reconciler_reconciles_total{controller=\"garagecluster\"} 1",
            "garage_reconciler_failures_total{controller=\"garagenode\",error=\"garage\"} 1",
            "garage_reconciler_api_writes_total 1",
            "garage_reconciler_layout_applies_total 1",
            "garage_reconciler_transaction_steps_total{machine=\"teardown\",step=\"delete_nodes\"} 1",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        assert!(text.contains("garage_reconciler_reconcile_duration_seconds_bucket"));
        assert_eq!(
            (
                m.api_writes(),
                m.layout_applies(),
                m.failures(),
                m.reconciles()
            ),
            (1, 1, 1, 1)
        );
    }
}
