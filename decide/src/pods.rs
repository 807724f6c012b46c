//! What a pod's status says about reaching it: running (and at which IP), ready.

use k8s_openapi::api::core::v1::Pod;

/// The IP of a pod that runs and is not being deleted.
pub fn running_ip(pod: &Pod) -> Option<String> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Running") {
        return None;
    }
    status.pod_ip.clone().filter(|ip| !ip.is_empty())
}

/// True when the pod reports the Ready condition.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
