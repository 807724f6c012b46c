//! One way to start a controller: its passes run inside a span naming the object, under the
//! pass deadline, with a panic turned into that pass's failure; failures are counted and
//! requeued by one error policy; the watch failures the runner reports are logged at a
//! bounded rate; and the controller stops taking new passes once shutdown begins.

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt as _, StreamExt as _};
use kube::runtime::Controller;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tracing::Instrument as _;

use super::{Context, Error, triggers};

/// Runs `controller` until `stop` turns true, each pass calling `reconcile` for one object.
/// `name` labels its metrics and log lines.
pub async fn start<K, F, Fut>(
    name: &'static str,
    controller: Controller<K>,
    reconcile: F,
    ctx: Arc<Context>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Debug + Eq + Hash + Clone + Unpin + Send + Sync,
    F: Fn(Arc<K>, Arc<Context>) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<Action, Error>> + Send + 'static,
{
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    controller
        .graceful_shutdown_on(stopped)
        .run(
            move |o, x| Box::pin(instrumented(name, o, x, reconcile.clone())),
            move |o, e, x| error_policy(name, o, e, x),
            ctx,
        )
        .for_each(drain_controller(name))
        .await;
}

/// Consumes a controller's stream, logging what error_policy does not see: a watch or list
/// that failed (it is retried with its own back-off, but until then its objects are not seen
/// to change; at most one line per [`triggers::FAILURE_LOG_WINDOW`], counting the others) and
/// the runner's own failures. Failed passes are logged by error_policy.
fn drain_controller<T, R: std::fmt::Display, Q: std::fmt::Display>(
    controller: &'static str,
) -> impl FnMut(Result<T, kube::runtime::controller::Error<R, Q>>) -> futures::future::Ready<()> {
    use kube::runtime::controller::Error as E;
    let mut failures = triggers::FailureLog::default();
    move |result| {
        match result {
            Err(E::QueueError(e)) => {
                if let Some(not_logged) = failures.admit(Instant::now()) {
                    tracing::warn!(
                        controller,
                        error = %e,
                        not_logged,
                        "watch failed; retrying (not_logged: failures since the last such line)"
                    );
                }
            }
            Err(E::RunnerError(e)) => {
                tracing::warn!(controller, error = %e, "controller runner failed");
            }
            _ => {}
        }
        futures::future::ready(())
    }
}

/// Runs one reconcile inside a span naming the object, counting it and timing it.
async fn instrumented<K, F, Fut>(
    controller: &'static str,
    object: Arc<K>,
    ctx: Arc<Context>,
    reconcile: F,
) -> Result<Action, Error>
where
    K: ResourceExt,
    F: FnOnce(Arc<K>, Arc<Context>) -> Fut,
    Fut: Future<Output = Result<Action, Error>>,
{
    let span = tracing::info_span!(
        "reconcile",
        controller,
        namespace = %object.namespace().unwrap_or_default(),
        name = %object.name_any(),
    );
    let start = Instant::now();
    let object_name = object.name_any();
    let object_namespace = object.namespace().unwrap_or_default();
    // A panic in one pass is that pass's failure, retried with back-off like any other; it
    // must not end the controller (and with it every other object's reconciliation).
    let limit = ctx.config.pass_timeout;
    let pass = std::panic::AssertUnwindSafe(reconcile(object, ctx.clone()).instrument(span))
        .catch_unwind();
    let result = tokio::time::timeout(limit, pass)
        .await
        .unwrap_or(Ok(Err(Error::TimedOut(limit))))
        .unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(Error::Panicked(what))
        });
    let took = start.elapsed();
    ctx.metrics.reconciled(controller, took);
    if took >= SLOW_PASS {
        tracing::info!(
            controller,
            object = %object_name,
            namespace = %object_namespace,
            seconds = took.as_secs_f64(),
            "slow pass"
        );
    }
    result
}

/// A pass at least this long is logged: it holds one of its controller's few slots.
const SLOW_PASS: Duration = Duration::from_secs(10);

fn error_policy<K: ResourceExt>(
    controller: &'static str,
    obj: Arc<K>,
    error: &Error,
    ctx: Arc<Context>,
) -> Action {
    ctx.metrics.failed(controller, error.metric_label());
    if let Error::Stale(_) = error {
        // Expected under concurrent writers; the requeue re-reads and decides again.
        tracing::info!(controller, object = %obj.name_any(), error = %error, "stale write refused; retrying");
        return Action::requeue(ctx.config.short_requeue);
    }
    tracing::warn!(
        controller,
        object = %obj.name_any(),
        namespace = obj.namespace().unwrap_or_default(),
        error = %error,
        reason = error.reason(),
        "reconcile failed; retrying"
    );
    Action::requeue(ctx.config.error_requeue)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::controller::{Config, Events, Metrics};
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::Client;

    /// A context with `config` and no API server behind it, and an object to pass.
    fn offline(config: Config) -> (Arc<Context>, Arc<ConfigMap>) {
        let client =
            Client::try_from(kube::Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
        let ctx = Arc::new(Context {
            client: client.clone(),
            config,
            metrics: Arc::new(Metrics::default()),
            events: Events::new(client),
            gate_evidence: decide::pools::capability::EvidenceCache::default(),
            volume_class_refusals: std::sync::Mutex::default(),
            expansion_refusals: std::sync::Mutex::default(),
            ownership_warnings: decide::ownership::Warnings::default(),
            monitoring_kind: Default::default(),
        });
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "x", "namespace": "ns"}
        }))
        .unwrap();
        (ctx, Arc::new(cm))
    }

    #[tokio::test]
    async fn a_pass_that_never_returns_is_stopped_and_failed() {
        let (ctx, cm) = offline(Config {
            pass_timeout: Duration::from_millis(50),
            ..Config::default()
        });
        let result = instrumented("test", cm, ctx.clone(), |_, _| {
            std::future::pending::<Result<Action, Error>>()
        })
        .await;
        match result {
            Err(e @ Error::TimedOut(_)) => {
                assert_eq!(e.metric_label(), "timeout");
                let action = error_policy("test", Arc::new(ConfigMap::default()), &e, ctx);
                assert_eq!(action, Action::requeue(Config::default().error_requeue));
            }
            other => panic!("expected the pass to time out, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_panicking_pass_is_a_failed_pass() {
        let (ctx, cm) = offline(Config::default());
        let result = instrumented("test", cm, ctx, |_, _| async {
            panic!("boom");
            #[allow(unreachable_code)]
            Ok(Action::await_change())
        })
        .await;
        match result {
            Err(e @ Error::Panicked(_)) => {
                assert!(e.to_string().contains("boom"), "{e}");
                assert_eq!(e.metric_label(), "panic");
            }
            other => panic!("expected the panic as an error, got {other:?}"),
        }
    }
}
