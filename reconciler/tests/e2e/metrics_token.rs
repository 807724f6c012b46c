//! `spec.admin.metricsTokenSecretRef`: the site's cluster is created with a metrics token.
//! Each Garage pod reads it from the same immutable credentials copy as its admin token (also
//! after the admin token was moved to another Secret and every pod replaced), and Garage's
//! `/metrics` answers only a request that carries it.

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use crate::{World, ns};

const SECRET: &str = "e2e-metrics-token";
/// The user's Secret as the teardown lists what it must leave.
pub(crate) const USER_MADE: &str = "Secret/e2e-metrics-token";
const KEY: &str = "token";
const TOKEN: &str = "e2e-metrics-bearer-0123456789";

/// The reference the cluster manifest carries.
pub(crate) fn reference() -> serde_json::Value {
    json!({"name": SECRET, "key": KEY})
}

/// Creates the user's Secret the reference names.
pub(crate) async fn create_secret(w: &World<'_>) -> anyhow::Result<()> {
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": SECRET},
        "stringData": {KEY: TOKEN},
    }))?;
    Api::<Secret>::namespaced(w.client.clone(), ns())
        .create(&PostParams::default(), &secret)
        .await?;
    Ok(())
}

/// The Secret a pod's volume `name` comes from.
fn volume_secret(pod: &Pod, name: &str) -> Option<String> {
    pod.spec
        .as_ref()?
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == name)?
        .secret
        .as_ref()?
        .secret_name
        .clone()
}

/// Every storage pod mounts both tokens from one credentials copy holding this token, and
/// `/metrics` refuses a request without it.
pub(crate) async fn guards_metrics(w: &World<'_>) -> anyhow::Result<()> {
    let pods = w
        .pods
        .list(&ListParams::default().labels("garage.rajsingh.info/tier=storage"))
        .await?
        .items;
    ensure!(!pods.is_empty(), "no storage pods");
    let secrets: Api<Secret> = Api::namespaced(w.client.clone(), ns());
    let http = reqwest::Client::new();
    for pod in &pods {
        let name = pod.name_any();
        let admin = volume_secret(pod, "admin-token");
        let metrics = volume_secret(pod, "metrics-token")
            .with_context(|| format!("pod {name} mounts no metrics token"))?;
        ensure!(
            admin.as_deref() == Some(metrics.as_str()) && metrics.contains("-credentials-"),
            "pod {name}: admin token from {admin:?}, metrics token from {metrics}, not one credentials copy"
        );
        let copy = secrets.get(&metrics).await?;
        let held = copy
            .data
            .as_ref()
            .and_then(|d| d.get("metrics-token"))
            .map(|b| b.0.clone());
        ensure!(
            held.as_deref() == Some(TOKEN.as_bytes()),
            "copy {metrics} does not hold the metrics token"
        );
        let ip = w.sim.pod_ip(ns(), &name).context("pod has no address")?;
        let url = format!("http://{ip}:3903/metrics");
        let with = http.get(&url).bearer_auth(TOKEN).send().await?;
        ensure!(
            with.status().is_success(),
            "pod {name}: /metrics with the token answered {}",
            with.status()
        );
        let without = http.get(&url).send().await?;
        ensure!(
            without.status().is_client_error(),
            "pod {name}: /metrics without a token answered {}",
            without.status()
        );
    }
    println!(
        "metrics token: {} pods read it from their credentials copy; /metrics answers with it and refuses without",
        pods.len()
    );
    Ok(())
}
