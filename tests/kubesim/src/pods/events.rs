//! Events about a pod, written as the kubelet writes them (source
//! component `kubelet`, host = the node).

use k8s_openapi::api::core::v1::Event;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use super::{PodCtx, Stop};

/// Records a Warning event.
pub(crate) async fn warn(ctx: &PodCtx, reason: &str, message: &str) {
    event(ctx, "Warning", reason, message).await;
}

/// Records an event of `kind` (Normal or Warning) about the pod.
pub(crate) async fn event(ctx: &PodCtx, kind: &str, reason: &str, message: &str) {
    if matches!(ctx.stop_mode(), Stop::Abandon | Stop::Shutdown(_)) {
        return;
    }
    let info = &ctx.info;
    let now = info.clock.now();
    let event: Result<Event, _> = serde_json::from_value(json!({
        "metadata": { "generateName": format!("{}.", info.name), "namespace": info.namespace },
        "involvedObject": {
            "apiVersion": "v1", "kind": "Pod",
            "namespace": info.namespace, "name": info.name, "uid": info.uid,
        },
        "reason": reason,
        "message": message,
        "type": kind,
        "source": { "component": "kubelet", "host": info.node },
        "reportingComponent": "kubelet",
        "reportingInstance": info.node,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }));
    let Ok(event) = event else { return };
    let events: Api<Event> = Api::namespaced(ctx.shared.client.clone(), &info.namespace);
    if let Err(e) = events.create(&PostParams::default(), &event).await {
        tracing::debug!(pod = %ctx.key(), "recording event {reason}: {e}");
    }
}
