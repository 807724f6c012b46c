//! The ServiceMonitor of `spec.monitoring`: whether the API server serves the kind (asked at
//! most once a minute for all clusters, since it changes only when someone installs or removes
//! the prometheus-operator CRDs; no discovery call, so no permission beyond the kind's own),
//! and the write that carries a [`Plan`] out.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use kube::Api;
use kube::api::DeleteParams;

use crate::controller::events::Note;
use crate::controller::write::{self, ensure};
use crate::controller::{Context, Error};
use crate::desired::is_controlled_by;
use crate::desired::service_monitor::{Plan, ServiceMonitor, name};
use decide::conditions::Desired;
use shared_types::conditions::cluster::CONDITION_SERVICE_MONITOR_READY;
use shared_types::conditions::reason::REASON_APPLY_FAILED;

/// How long an answer about the kind is reused.
const KIND_CHECK_EVERY: Duration = Duration::from_secs(60);

/// The last answer about the kind, and when it was given.
#[derive(Debug, Default)]
pub struct KindCache(Mutex<Option<(Instant, bool)>>);

/// Whether the API server serves `monitoring.coreos.com/v1` ServiceMonitors, asked with a GET
/// of the cluster's own ServiceMonitor in `ns` (a kind that is not served answers "could not
/// find the requested resource", an absent object names itself). A failed check keeps the
/// last answer (none yet: not served), so a passing error does not flip the condition.
pub async fn installed(ctx: &Context, ns: &str, cluster: &str) -> bool {
    let cached = *ctx
        .monitoring_kind
        .0
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some((at, answer)) = cached
        && at.elapsed() < KIND_CHECK_EVERY
    {
        return answer;
    }
    let api: Api<ServiceMonitor> = Api::namespaced(ctx.client.clone(), ns);
    let answer = match api.get(&name(cluster)).await {
        Ok(_) => true,
        Err(kube::Error::Api(e)) if e.code == 404 => object_absent(&e),
        Err(e) => {
            // A 403 means the install's role lacks the kind: the chart grants it.
            tracing::warn!(error = %e, "ServiceMonitor check failed; keeping the last answer");
            return cached.is_some_and(|(_, answer)| answer);
        }
    };
    *ctx.monitoring_kind
        .0
        .lock()
        .unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), answer));
    answer
}

/// Reports a ServiceMonitor write that failed: `ServiceMonitorReady=False` (`ApplyFailed`)
/// with the API server's answer while monitoring is on, and a Warning Event either way.
pub fn failed(conditions: &mut [Desired], notes: &mut Vec<Note>, e: &Error) {
    let message = format!("the ServiceMonitor could not be written: {e}");
    tracing::warn!(error = %e, "ServiceMonitor write failed; the rest of the pass goes on");
    if let Some(c) = conditions
        .iter_mut()
        .find(|c| c.type_ == CONDITION_SERVICE_MONITOR_READY)
    {
        c.status = false;
        c.reason = REASON_APPLY_FAILED;
        c.message = format!(
            "{message}; fix spec.monitoring (interval, additionalLabels and metricRelabelings must \
             be valid for prometheus-operator) or remove a ServiceMonitor of that name the \
             cluster does not own"
        );
    }
    notes.push(Note::warning(
        REASON_APPLY_FAILED,
        "ServiceMonitor",
        message,
    ));
}

/// What the API server answers for a resource it does not serve.
const KIND_NOT_SERVED: &str = "could not find the requested resource";

/// True when a 404 says the object is absent (a Status `NotFound` about the object), false
/// when it says the kind is not served: a Status about the resource, or the plain-text
/// "404 page not found" of an API group the server does not know at all.
fn object_absent(e: &kube::core::Status) -> bool {
    e.reason == "NotFound" && !e.message.contains(KIND_NOT_SERVED)
}

/// Carries `plan` out in namespace `ns` for the cluster with `uid`. A removal deletes only a
/// ServiceMonitor that cluster controls.
pub async fn converge(plan: &Plan, ns: &str, uid: &str, ctx: &Context) -> Result<(), Error> {
    let api: Api<ServiceMonitor> = Api::namespaced(ctx.client.clone(), ns);
    match plan {
        Plan::Nothing => {}
        Plan::Ensure(monitor) => {
            ensure(
                &api,
                &ctx.metrics,
                monitor.as_ref(),
                uid,
                write::metadata_and_spec,
            )
            .await?;
        }
        Plan::Remove { name } => {
            let live = match api.get(name).await {
                Ok(live) => live,
                // Absent, or the kind went away since it was last asked about.
                Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
                Err(e) => return Err(e.into()),
            };
            if !is_controlled_by(&live, uid) || live.metadata.deletion_timestamp.is_some() {
                return Ok(());
            }
            if write::delete_if_present(&api, &ctx.metrics, name, &DeleteParams::background())
                .await?
            {
                tracing::info!(
                    namespace = ns,
                    name,
                    "ServiceMonitor deleted: monitoring is off"
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn not_found(reason: &str, message: &str) -> kube::core::Status {
        serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": 404, "reason": reason, "message": message,
        }))
        .unwrap()
    }

    #[test]
    fn a_404_tells_an_absent_object_from_a_kind_not_served() {
        let absent = not_found(
            "NotFound",
            "servicemonitors.monitoring.coreos.com \"garage-garage\" not found",
        );
        assert!(object_absent(&absent));
        // The group is served but not the resource.
        let resource = not_found(
            "NotFound",
            "the server could not find the requested resource",
        );
        assert!(!object_absent(&resource));
        // The group is not served at all: a plain-text body, which kube reports so.
        let group = not_found("Failed to parse error data", "404 page not found");
        assert!(!object_absent(&group));
    }
}
