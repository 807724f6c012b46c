//! A key an older Go operator release made. Before 0.7.4 the Go operator derived a key's
//! material from its Garage display name (`spec.name`) instead of its object name; the status
//! pins the ID it got. Such a key is replayed beside the recorded ones, its material computed
//! here from the recorded RPC secret the way those releases did (HMAC-SHA256 keyed by the 32
//! bytes the secret's hex encodes, over `ak:`/`sk:` and `<namespace>/<spec.name>`), imported
//! into Garage, its GarageKey and Secret made as the Go operator left them. Taken over, it
//! keeps its access key and secret: this operator infers the derivation from the ID and
//! records it, and its Secret still holds the same credentials.

use anyhow::{Context as _, ensure};
use garage_admin::{AdminClient, Lookup};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use localcluster::wait_until as wait;
use serde_json::{Value, json};
use shared_types::keys::annotation::ANNOTATION_KEY_DERIVATION;
use std::time::Duration;

use crate::{NAME, World, ns};

/// The GarageKey's name, and the display name its material was derived from.
pub(crate) const KEY: &str = "legacy-rw";
const DISPLAY: &str = "legacy-display";

/// The access key ID and secret a pre-0.7.4 Go operator gave key `spec.name = name` in
/// namespace `namespace` under the RPC secret `rpc_hex`.
fn go_material(rpc_hex: &str, namespace: &str, name: &str) -> anyhow::Result<(String, String)> {
    let bytes = (0..rpc_hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(rpc_hex.get(i..i + 2).unwrap_or("x"), 16))
        .collect::<Result<Vec<u8>, _>>()
        .context("the recorded RPC secret is not hex")?;
    let mac = |prefix: &str| {
        decide::names::hmac_sha256(&bytes, format!("{prefix}:{namespace}/{name}").as_bytes())
    };
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    Ok((format!("GK{}", hex(&mac("ak")[..12])), hex(&mac("sk"))))
}

fn keys(w: &World<'_>) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("garage.rajsingh.info", "v1beta1", "GarageKey");
    Api::namespaced_with(w.client.clone(), ns(), &ApiResource::from_gvk(&gvk))
}

/// Makes the key in Garage and in the namespace, as the Go operator left it; returns its
/// access key ID and secret.
pub(crate) async fn replay(
    w: &World<'_>,
    admin: &AdminClient,
    recorded: &[Value],
) -> anyhow::Result<(String, String)> {
    let rpc = recorded
        .iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["name"] == format!("{NAME}-rpc-secret"))
        .context("the recorded RPC secret")?;
    let (id, secret) = go_material(
        &super::replay::secret_value(rpc, "rpc-secret")?,
        ns(),
        DISPLAY,
    )?;
    admin.import_key(&id, &secret, Some(DISPLAY)).await?;
    let key: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageKey",
        "metadata": {"name": KEY, "namespace": ns(),
                     "finalizers": ["garagekey.garage.rajsingh.info/finalizer"]},
        "spec": {"clusterRef": {"name": NAME}, "name": DISPLAY, "neverExpires": false},
    }))?;
    let created = keys(w).create(&PostParams::default(), &key).await?;
    let uid = created.metadata.uid.clone().unwrap_or_default();
    let status = json!({"status": {
        "accessKeyId": id, "keyId": id, "phase": "Ready", "observedGeneration": 1,
        "secretRef": {"name": KEY, "namespace": ns()},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KeyReady",
                        "message": "Key is ready", "observedGeneration": 1,
                        "lastTransitionTime": "2026-12-06T11:55:20Z"}],
    }});
    keys(w)
        .patch_status(KEY, &PatchParams::default(), &Patch::Merge(status))
        .await?;
    let owned: Secret = serde_json::from_value(json!({
        "metadata": {"name": KEY, "namespace": ns(),
            "labels": {"app.kubernetes.io/managed-by": "garage-operator",
                       "garage.rajsingh.info/generated-key-secret-owner": uid,
                       "garage.rajsingh.info/key": KEY},
            "ownerReferences": [{"apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageKey",
                "name": KEY, "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
        "stringData": {"access-key-id": id, "secret-access-key": secret},
    }))?;
    Api::<Secret>::namespaced(w.client.clone(), ns())
        .create(&PostParams::default(), &owned)
        .await?;
    Ok((id, secret))
}

/// After the takeover: the key is Ready with its derivation recorded, the same ID in its
/// status and Garage, and its Secret holds the same credentials.
pub(crate) async fn kept(
    w: &World<'_>,
    admin: &AdminClient,
    material: &(String, String),
) -> anyhow::Result<()> {
    let (id, secret) = material;
    wait(
        "the pre-0.7.4 Go key Ready under this operator",
        Duration::from_secs(180),
        || async {
            let key = keys(w).get(KEY).await?;
            let recorded = key
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANNOTATION_KEY_DERIVATION))
                .cloned();
            let ready = key.data["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                // This operator's message, not the one the Go operator left.
                .any(|c| {
                    c["type"] == "Ready"
                        && c["status"] == "True"
                        && c["message"]
                            .as_str()
                            .is_some_and(|m| m.contains(id.as_str()))
                });
            Ok(ready
                && recorded.as_deref() == Some("rpc-secret-bytes-spec-name")
                && key.data["status"]["accessKeyId"] == json!(id))
        },
    )
    .await?;
    let data = Api::<Secret>::namespaced(w.client.clone(), ns())
        .get(KEY)
        .await?
        .data
        .unwrap_or_default();
    let text = |k: &str| {
        data.get(k)
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
    };
    ensure!(
        text("access-key-id").as_deref() == Some(id.as_str())
            && text("secret-access-key").as_deref() == Some(secret.as_str()),
        "the key's Secret no longer holds the credentials the Go operator gave it"
    );
    let info = admin.key_info(Lookup::Id(id), true).await?;
    ensure!(
        info.secret_access_key.as_deref() == Some(secret.as_str()),
        "Garage holds other material for {id}"
    );
    Ok(())
}
