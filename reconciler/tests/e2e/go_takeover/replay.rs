//! The recorded cluster made again: every object the Go operator left, and the Garage state
//! behind them. The objects are created as recorded (their owners' new UIDs put in), the
//! pods start on fresh claims with fresh Garage identities, and the Garage side is then
//! rebuilt the way the Go operator built it: the members connected, the recorded layout
//! applied with the new node IDs, the key imported with its recorded credentials, the bucket
//! created under its alias and granted. Last, the recorded statuses are written with every
//! recorded UID and ID replaced by its new counterpart.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context as _;
use garage_admin::RoleChange;
use garage_admin::{AdminClient, AdminToken};
use garage_admin::{BucketPermissions, CreateBucket};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use localcluster::wait_until;
use serde_json::{Value, json};

use crate::{World, ns};

/// What the recorder wrote (`cargo xtask record-go`).
const OBJECTS: &str = include_str!("objects.json");
const PODS: &str = include_str!("pods.json");
const LAYOUT: &str = include_str!("layout.json");

/// Recorded strings and what replaced them here: UIDs of objects and pods, node IDs, the
/// bucket ID.
#[derive(Default)]
pub(crate) struct Renames(BTreeMap<String, String>);

impl Renames {
    fn insert(&mut self, old: &str, new: &str) {
        if !old.is_empty() && old != new {
            self.0.insert(old.to_owned(), new.to_owned());
        }
    }

    /// `value` with every recorded string replaced.
    pub(crate) fn apply(&self, value: &Value) -> Value {
        let mut text = value.to_string();
        for (old, new) in &self.0 {
            text = text.replace(old, new);
        }
        serde_json::from_str(&text).expect("a replaced UID keeps the JSON whole")
    }
}

/// The recorded objects, by kind and name.
pub(crate) fn recorded() -> Vec<Value> {
    serde_json::from_str(OBJECTS).expect("objects.json")
}

fn resource(object: &Value) -> ApiResource {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().unwrap_or_default();
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind))
}

fn dynamic(w: &World<'_>, object: &Value) -> Api<DynamicObject> {
    Api::namespaced_with(w.client.clone(), ns(), &resource(object))
}

/// The object as it can be created again: no identity, version or status of the old cluster,
/// no address or volume the old cluster had bound.
fn creatable(object: &Value, renames: &Renames) -> Value {
    let mut object = renames.apply(object);
    let meta = object["metadata"].as_object_mut().expect("metadata");
    for field in ["uid", "resourceVersion", "creationTimestamp", "generation"] {
        meta.remove(field);
    }
    if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
        annotations.retain(|k, _| !k.starts_with("pv.kubernetes.io/") && !k.starts_with("volume."));
    }
    object.as_object_mut().expect("object").remove("status");
    let spec = &mut object["spec"];
    if spec["clusterIP"] != "None"
        && let Some(spec) = spec.as_object_mut()
    {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    if let Some(spec) = object["spec"].as_object_mut() {
        spec.remove("volumeName");
    }
    object
}

/// Creates every recorded object, owners before what they own, and waits for the three
/// Garage processes to answer. Returns the renames of the objects' UIDs.
pub(crate) async fn objects(w: &World<'_>) -> anyhow::Result<Renames> {
    let recorded = recorded();
    let mut renames = Renames::default();
    // Owners first: the cluster, then what it owns, then what they own.
    for round in [
        &["GarageCluster"][..],
        &["GarageNode", "GarageKey", "GarageBucket"],
        &[
            "Secret",
            "ConfigMap",
            "Service",
            "PersistentVolumeClaim",
            "PodDisruptionBudget",
        ],
        &["StatefulSet"],
    ] {
        if round == ["StatefulSet"] {
            let user = super::legacy_rpc::user_secret(&recorded).context("no RPC Secret")?;
            dynamic(w, &user)
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(user.clone())?,
                )
                .await?;
        }
        for object in recorded
            .iter()
            .filter(|o| round.contains(&o["kind"].as_str().unwrap_or_default()))
        {
            let object_now = super::legacy_rpc::overridden(creatable(object, &renames));
            let created = dynamic(w, object)
                .create(&PostParams::default(), &serde_json::from_value(object_now)?)
                .await
                .with_context(|| {
                    format!(
                        "creating the recorded {} {}",
                        object["kind"], object["metadata"]["name"]
                    )
                })?;
            let old = object["metadata"]["uid"].as_str().unwrap_or_default();
            renames.insert(old, created.metadata.uid.as_deref().unwrap_or_default());
        }
    }
    println!("go takeover: {} recorded objects created", recorded.len());
    Ok(renames)
}

/// The recorded admin token (the user's Secret the cluster names).
fn admin_token(recorded: &[Value]) -> anyhow::Result<AdminToken> {
    let secret = recorded
        .iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["name"] == "garage-admin")
        .context("the recorded admin token Secret")?;
    Ok(AdminToken::new(secret_value(secret, "admin-token")?))
}

pub(crate) fn secret_value(secret: &Value, key: &str) -> anyhow::Result<String> {
    use base64::Engine as _;
    let data = secret["data"][key]
        .as_str()
        .with_context(|| format!("no {key}"))?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data)?;
    Ok(String::from_utf8(bytes)?.trim().to_owned())
}

/// The recorded key's Secret: access key ID and secret.
pub(crate) fn key_credentials() -> anyhow::Result<(String, String)> {
    let recorded = recorded();
    let secret = recorded
        .iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["name"] == "photos-rw")
        .context("the recorded key Secret")?;
    Ok((
        secret_value(secret, "access-key-id")?,
        secret_value(secret, "secret-access-key")?,
    ))
}

/// The Admin API of pod `pod`, with the recorded admin token.
pub(crate) fn admin(w: &World<'_>, pod: &str) -> anyhow::Result<AdminClient> {
    let ip = w
        .sim
        .pod_ip(ns(), pod)
        .with_context(|| format!("{pod} has no address"))?;
    Ok(AdminClient::new(
        &format!("http://{ip}:3903"),
        &admin_token(&recorded())?,
    )?)
}

/// The member pods, as the recording names them: GarageNode name -> pod name.
fn members(recorded: &[Value]) -> BTreeMap<String, String> {
    recorded
        .iter()
        .filter(|o| o["kind"] == "GarageNode")
        .filter_map(|o| {
            let name = o["metadata"]["name"].as_str()?;
            Some((name.to_owned(), format!("{name}-0")))
        })
        .collect()
}

/// Rebuilds Garage as the Go operator left it, then writes the recorded statuses.
pub(crate) async fn garage(w: &World<'_>, renames: &mut Renames) -> anyhow::Result<()> {
    let recorded = recorded();
    let members = members(&recorded);
    wait_until(
        "the recreated members answer their Admin API",
        Duration::from_secs(240),
        || async {
            for pod in members.values() {
                let Ok(admin) = admin(w, pod) else {
                    return Ok(false);
                };
                if admin.local_node_id().await.is_err() {
                    return Ok(false);
                }
            }
            Ok(true)
        },
    )
    .await?;
    // Recorded node ID -> new one, through the GarageNode that recorded it.
    let mut peers = Vec::new();
    for (node, pod) in &members {
        let new = admin(w, pod)?.local_node_id().await?;
        let old = recorded
            .iter()
            .find(|o| o["kind"] == "GarageNode" && o["metadata"]["name"] == node.as_str())
            .and_then(|o| o["status"]["nodeId"].as_str())
            .context("a recorded GarageNode without a node ID")?;
        renames.insert(old, new.as_str());
        let ip = w.sim.pod_ip(ns(), pod).context("no address")?;
        peers.push(format!("{new}@{ip}:3901"));
    }
    let first = admin(w, members.values().next().context("no member")?)?;
    first.connect_nodes(&peers).await?;
    layout(&first, renames).await?;
    bucket_and_key(&first, &recorded, renames).await?;
    pod_uids(w, renames).await?;
    statuses(w, &recorded, renames).await
}

/// The recorded layout, staged with the new node IDs (and the new cluster UID in its tags)
/// and applied as version 1, the version the recording shows.
async fn layout(admin: &AdminClient, renames: &Renames) -> anyhow::Result<()> {
    let recorded: Value = renames.apply(&serde_json::from_str(LAYOUT)?);
    anyhow::ensure!(
        recorded["version"] == 1,
        "the recording holds layout version 1"
    );
    let mut roles = Vec::new();
    for role in recorded["roles"].as_array().context("roles")? {
        let tags = serde_json::from_value(role["tags"].clone())?;
        roles.push(RoleChange::storage(
            role["id"].as_str().context("id")?.parse()?,
            role["zone"].as_str().context("zone")?,
            role["capacity"].as_u64().context("capacity")?,
            tags,
        ));
    }
    admin.stage_layout(&roles, None).await?;
    admin.apply_layout(1).await?;
    Ok(())
}

async fn bucket_and_key(
    admin: &AdminClient,
    recorded: &[Value],
    renames: &mut Renames,
) -> anyhow::Result<()> {
    let (id, secret) = key_credentials()?;
    admin.import_key(&id, &secret, Some("photos-rw")).await?;
    let bucket = admin
        .create_bucket(&CreateBucket {
            global_alias: Some("photos".into()),
            local_alias: None,
        })
        .await?;
    let old = recorded
        .iter()
        .find(|o| o["kind"] == "GarageBucket")
        .and_then(|o| o["status"]["bucketId"].as_str())
        .context("the recorded bucket ID")?;
    renames.insert(old, &bucket.id);
    let permissions = BucketPermissions {
        read: true,
        write: true,
        owner: false,
    };
    admin.allow_bucket_key(&bucket.id, &id, permissions).await?;
    Ok(())
}

/// The recorded pods' UIDs (GarageNode statuses name them) -> the new pods'.
async fn pod_uids(w: &World<'_>, renames: &mut Renames) -> anyhow::Result<()> {
    let pods: Vec<Value> = serde_json::from_str(PODS)?;
    let now = Api::<Pod>::namespaced(w.client.clone(), ns())
        .list(&ListParams::default())
        .await?;
    for old in &pods {
        let name = old["metadata"]["name"].as_str().unwrap_or_default();
        if let Some(new) = now
            .items
            .iter()
            .find(|p| p.metadata.name.as_deref() == Some(name))
        {
            renames.insert(
                old["metadata"]["uid"].as_str().unwrap_or_default(),
                new.metadata.uid.as_deref().unwrap_or_default(),
            );
        }
    }
    Ok(())
}

/// The recorded statuses of the operator's own kinds, renamed.
async fn statuses(w: &World<'_>, recorded: &[Value], renames: &Renames) -> anyhow::Result<()> {
    for object in recorded.iter().filter(|o| {
        o["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("garage.rajsingh.info/"))
    }) {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let status = renames.apply(&object["status"]);
        dynamic(w, object)
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .with_context(|| format!("writing the recorded status of {} {name}", object["kind"]))?;
    }
    Ok(())
}

/// The recorded objects no longer there, as `Kind/name`.
pub(crate) async fn missing(w: &World<'_>) -> anyhow::Result<Vec<String>> {
    let mut gone = Vec::new();
    for object in recorded() {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        if dynamic(w, &object).get_opt(name).await?.is_none() {
            gone.push(format!(
                "{}/{name}",
                object["kind"].as_str().unwrap_or_default()
            ));
        }
    }
    Ok(gone)
}
