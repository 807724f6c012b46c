//! A Go user's own `GARAGE_RPC_SECRET`. Releases of the Go operator let `spec.storage.env` set
//! it; here the recorded pods read it from a Secret of the user's (`garage-legacy-rpc`, a copy
//! of the generated RPC secret) instead of the generated one, as such an override would. Before
//! this operator starts, that Secret is changed: the pods still run with the old bytes, and
//! nothing can show the operator that the generated secret it would mount is the one they run
//! with. It must take nothing over: no StatefulSet rewritten, no pod replaced, no layout
//! change, and the cluster saying why, naming the variable and the pods. Once the Secret
//! holds the pods' secret again, the takeover goes on.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::ensure;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt as _;
use kube::api::{Api, ListParams, Patch, PatchParams};
use localcluster::wait_until as wait;
use serde_json::{Value, json};
use shared_types::keys::annotation::ANNOTATION_RENDERED_HASH;
use shared_types::keys::label::LABEL_CLUSTER;

use crate::rollout::storage_pods;
use crate::support;
use crate::{NAME, RESYNC, World, ns};

/// The user's Secret the recorded pods read their RPC secret from.
pub(crate) const SECRET: &str = "garage-legacy-rpc";
/// The generated Secret the Go operator made, which this operator mounts.
const GENERATED: &str = "garage-rpc-secret";
/// A valid RPC secret the pods do not run with.
const OTHER: &str = "fefefefefefefefefefefefefefefefefefefefefefefefefefefefefefefefe";

/// The recorded `object` pointed at the user's Secret: a StatefulSet's `GARAGE_RPC_SECRET`
/// reads [`SECRET`]. Any other object is returned as it is.
pub(crate) fn overridden(mut object: Value) -> Value {
    if object["kind"] != "StatefulSet" {
        return object;
    }
    let containers = object["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .into_iter()
        .flatten();
    for env in containers.flat_map(|c| c["env"].as_array_mut().into_iter().flatten()) {
        if env["name"] == "GARAGE_RPC_SECRET" {
            env["valueFrom"]["secretKeyRef"]["name"] = json!(SECRET);
        }
    }
    object
}

/// The user's Secret, holding what the generated one holds: made before the StatefulSets.
pub(crate) fn user_secret(recorded: &[Value]) -> Option<Value> {
    let generated = recorded
        .iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["name"] == GENERATED)?;
    Some(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": ns()},
        "data": generated["data"].clone(),
    }))
}

/// Writes `value` as the user's Secret's RPC secret.
async fn set(w: &World<'_>, value: &str) -> anyhow::Result<()> {
    Api::<Secret>::namespaced(w.client.clone(), ns())
        .patch(
            SECRET,
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"rpc-secret": value}})),
        )
        .await?;
    Ok(())
}

/// Changes the user's Secret; returns what it held, to put back.
pub(crate) async fn drift(w: &World<'_>) -> anyhow::Result<String> {
    let secret = Api::<Secret>::namespaced(w.client.clone(), ns())
        .get(SECRET)
        .await?;
    let held = secret
        .data
        .and_then(|d| {
            d.get("rpc-secret")
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
        })
        .unwrap_or_default();
    set(w, OTHER).await?;
    Ok(held)
}

/// Waits for the refusal, then checks for a few passes that nothing was taken over; then
/// puts the pods' secret back.
pub(crate) async fn held_then_released(
    w: &World<'_>,
    pods: &BTreeMap<String, String>,
    version: u64,
    held: &str,
    via: &str,
) -> anyhow::Result<()> {
    let t = Instant::now();
    wait(
        "the cluster refusing the pods' own RPC secret",
        Duration::from_secs(120),
        || async {
            let c = w.clusters.get(NAME).await?;
            let said = support::message_of(&c, "Ready").unwrap_or_default();
            Ok(
                support::reason_of(&c, "Ready").as_deref() == Some("Unsupported")
                    && said.contains("spec.storage.env")
                    && said.contains("GARAGE_RPC_SECRET in pod garage-storage-0-0"),
            )
        },
    )
    .await?;
    let said = support::message_of(&w.clusters.get(NAME).await?, "Ready").unwrap_or_default();
    ensure!(
        !said.contains(OTHER) && !said.contains(held),
        "a secret was echoed: {said}"
    );
    tokio::time::sleep(RESYNC * 3).await;
    let sets = Api::<StatefulSet>::namespaced(w.client.clone(), ns())
        .list(&ListParams::default().labels(&format!("{LABEL_CLUSTER}={NAME}")))
        .await?
        .items;
    let rewritten: Vec<String> = sets
        .iter()
        .filter(|s| s.annotations().contains_key(ANNOTATION_RENDERED_HASH))
        .map(|s| s.name_any())
        .collect();
    ensure!(
        rewritten.is_empty(),
        "StatefulSets rewritten while refused: {rewritten:?}"
    );
    ensure!(
        storage_pods(&w.pods).await? == *pods,
        "a pod was replaced while the RPC secret was not proven"
    );
    let layout = super::replay::admin(w, via)?.layout().await?;
    ensure!(
        layout.version == version,
        "layout {version} -> {}",
        layout.version
    );
    println!(
        "go takeover: pods reading GARAGE_RPC_SECRET from a Secret that no longer holds the generated secret: refused ({said:.120}...), no StatefulSet rewritten, no pod replaced, layout {version} ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    set(w, held).await
}
