//! Site D, after the buckets: management handles in front of the site's running Garage.
//!
//! The upstream handle sample (its Admin API URL pointed at a storage pod, its token Secret
//! holding the token that pod runs) becomes Running and creates nothing; a second handle
//! reaches the same Garage through `connectTo.clusterRef`. The sample's bucket and imported
//! key apply through the first; the key is refused until its Secret stops asking for an S3
//! endpoint the operator cannot know, then works with an ordinary S3 client (checksummed
//! objects read back). A key through the second handle gets the sibling's S3 endpoint in its
//! Secret; one without a grant is refused. Deleting both handles and then their dependents
//! changes nothing in Garage: the bucket and every object are still there.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service};
use kube::api::{DeleteParams, ListParams};
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::{Value, json};
use shared_types::common::ClusterPhase;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_key::GarageKey;
use shared_types::keys::finalizer::FINALIZER_CLUSTER;

use crate::buckets::{create, ready, refused, samples, store_of};
use crate::support::*;
use crate::{NAME, World, ns};

/// The sample's handle, reached through its Admin API URL.
const BY_URL: &str = "existing-garage";
/// The credentials the sample key imports.
const IMPORTED: (&str, &str) = (
    "GK0a1b2c3d4e5f60718293a4b5",
    "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90",
);
/// The handle reached through `clusterRef`.
const BY_REF: &str = "sibling-handle";

pub(crate) async fn run(w: &World<'_>) -> anyhow::Result<()> {
    let client = &w.client;
    let t = Instant::now();
    let via = "garage-storage-0-0";
    let ip = w.sim.pod_ip(ns(), via).context("no pod ip")?.to_string();
    let token = mounted_token(client, via).await?;
    let docs = samples("garage_v1beta2_garagecluster_management_handle.yaml")?;
    let of_kind = |kind: &str| -> Value {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .cloned()
            .unwrap_or_default()
    };
    let mut handle = of_kind("GarageCluster");
    ensure!(handle["metadata"]["name"] == BY_URL, "the sample changed");
    let token_ref = handle["spec"]["connectTo"]["adminTokenSecretRef"].clone();
    handle["spec"]["connectTo"]["adminApiEndpoint"] = json!(format!("http://{ip}:3903"));
    create::<Secret>(
        client,
        json!({"metadata": {"name": token_ref["name"]},
               "stringData": {token_ref["key"].as_str().unwrap_or("admin-token"): token}}),
    )
    .await?;
    create::<GarageCluster>(client, handle).await?;
    create::<GarageCluster>(
        client,
        // With the finalizer an earlier version gave every cluster: the handle drops it, so
        // its deletion can never run a cluster teardown.
        json!({"metadata": {"name": BY_REF, "finalizers": [FINALIZER_CLUSTER]},
               "spec": {"connectTo": {"clusterRef": {"name": NAME}}}}),
    )
    .await?;
    let clusters = &w.clusters;
    for name in [BY_URL, BY_REF] {
        wait(
            &format!("handle {name} Running"),
            Duration::from_secs(60),
            || async move {
                let c = clusters.get(name).await?;
                Ok(
                    c.status.as_ref().and_then(|s| s.phase) == Some(ClusterPhase::Running)
                        && condition(&c, "ManagementHandleReady") == Some("True".into()),
                )
            },
        )
        .await?;
    }
    let by_url = clusters.get(BY_URL).await?;
    ensure!(
        by_url
            .status
            .as_ref()
            .and_then(|s| s.endpoints.as_ref())
            .and_then(|e| e.admin.as_deref())
            == Some(format!("http://{ip}:3903").as_str()),
        "the handle's status does not name its Admin API"
    );
    for name in [BY_URL, BY_REF] {
        let c = clusters.get(name).await?;
        ensure!(
            c.finalizers().is_empty(),
            "handle {name} holds a finalizer: {:?}",
            c.finalizers()
        );
    }
    nothing_created(w).await?;
    println!(
        "handles: the sample handle (by URL) and one by clusterRef are Running and created nothing ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    dependents(w, &ip).await?;
    released(w, &ip).await
}

/// No workload, Service, config or Secret of the operator carries a handle's name.
async fn nothing_created(w: &World<'_>) -> anyhow::Result<()> {
    let client = &w.client;
    let mut found = Vec::new();
    for name in [BY_URL, BY_REF] {
        let sel = format!("app.kubernetes.io/instance={name}");
        found.extend(labelled::<StatefulSet>(client, &sel).await?);
        found.extend(labelled::<Service>(client, &sel).await?);
        found.extend(labelled::<ConfigMap>(client, &sel).await?);
        found.extend(labelled::<Secret>(client, &sel).await?);
        let pods = format!("garage.rajsingh.info/cluster={name}");
        found.extend(labelled::<k8s_openapi::api::core::v1::Pod>(client, &pods).await?);
    }
    ensure!(found.is_empty(), "a handle got objects: {found:?}");
    Ok(())
}

/// `Kind/name` of every object of kind `K` in the site's namespace that `selector` selects.
async fn labelled<K>(client: &kube::Client, selector: &str) -> anyhow::Result<Vec<String>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    Ok(Api::<K>::namespaced(client.clone(), ns())
        .list(&ListParams::default().labels(selector))
        .await?
        .items
        .iter()
        .map(|o| format!("{}/{}", K::kind(&()), o.name_any()))
        .collect())
}

/// The sample's bucket and key through the URL handle, a key through the clusterRef handle.
async fn dependents(w: &World<'_>, ip: &str) -> anyhow::Result<()> {
    let client = &w.client;
    let t = Instant::now();
    let docs = samples("garage_v1beta2_garagecluster_management_handle.yaml")?;
    let of_kind = |kind: &str| -> Value {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .cloned()
            .unwrap_or_default()
    };
    let key = of_kind("GarageKey");
    let source = key["spec"]["importKey"]["secretRef"]["name"].clone();
    create::<Secret>(
        client,
        json!({"metadata": {"name": source}, "stringData": {
            // The sample's comment names underscored keys; the field's default (in the Go
            // operator's API too) is the dashed form.
            "access-key-id": IMPORTED.0,
            "secret-access-key": IMPORTED.1,
        }}),
    )
    .await?;
    create::<GarageBucket>(client, of_kind("GarageBucket")).await?;
    create::<GarageKey>(client, key).await?;
    let keys: Api<GarageKey> = Api::namespaced(client.clone(), ns());
    // The sample key's Secret would name an S3 endpoint: refused, naming the field.
    wait(
        "the sample key refused for its endpoint",
        Duration::from_secs(60),
        || async {
            let k = keys.get("photos-app").await?;
            let cs = k.status.as_ref().and_then(|s| s.conditions.as_deref());
            ensure!(
                !ready(cs)
                    && cs.is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c.message.contains("spec.secretTemplate.includeEndpoint"))
                    }),
                "status {}",
                serde_json::to_string(&k.status)?
            );
            Ok(true)
        },
    )
    .await?;
    keys.patch(
        "photos-app",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"spec": {"secretTemplate": {"includeEndpoint": false}}})),
    )
    .await?;
    create::<GarageKey>(
        client,
        json!({"metadata": {"name": "sibling-key"}, "spec": {
            "clusterRef": {"name": BY_REF},
            "bucketPermissions": [{"globalAlias": "photos", "read": true}],
        }}),
    )
    .await?;
    create::<GarageKey>(
        client,
        json!({"metadata": {"name": "handle-stranger"}, "spec": {"clusterRef": {"name": BY_REF}}}),
    )
    .await?;
    let buckets: Api<GarageBucket> = Api::namespaced(client.clone(), ns());
    wait(
        "the handles' bucket and keys Ready",
        Duration::from_secs(120),
        || async {
            let b = buckets.get("photos").await?;
            let mut all = ready(b.status.as_ref().and_then(|s| s.conditions.as_deref()));
            for name in ["photos-app", "sibling-key", "handle-stranger"] {
                let k = keys.get(name).await?;
                all &= ready(k.status.as_ref().and_then(|s| s.conditions.as_deref()));
            }
            Ok(all)
        },
    )
    .await?;
    let endpoint = format!("http://{ip}:3900");
    let app = store_of(
        client,
        ns(),
        "photos-app",
        "access-key-id",
        "secret-access-key",
        "photos",
    )
    .await?;
    let data = Api::<Secret>::namespaced(client.clone(), ns())
        .get("photos-app")
        .await?
        .data
        .unwrap_or_default();
    ensure!(
        !data.contains_key("endpoint") && !data.contains_key("host"),
        "the URL handle's key Secret names an endpoint"
    );
    let objects = random_objects(20, 31);
    for (name, body) in &objects {
        app.put(&endpoint, name, body.clone()).await?;
    }
    let sibling = store_of(
        client,
        ns(),
        "sibling-key",
        "access-key-id",
        "secret-access-key",
        "photos",
    )
    .await?;
    for (name, body) in &objects {
        ensure!(
            &sibling.get(&endpoint, name).await? == body,
            "{name} read back different"
        );
    }
    let sibling_data = Api::<Secret>::namespaced(client.clone(), ns())
        .get("sibling-key")
        .await?
        .data
        .unwrap_or_default();
    let host = String::from_utf8(sibling_data.get("host").context("no host")?.0.clone())?;
    ensure!(
        host == format!("{NAME}.{}.svc:3900", ns()),
        "the clusterRef handle's key names {host}, not the sibling's S3 Service"
    );
    let stranger = store_of(
        client,
        ns(),
        "handle-stranger",
        "access-key-id",
        "secret-access-key",
        "photos",
    )
    .await?;
    ensure!(
        refused(stranger.get(&endpoint, &objects[0].0).await),
        "a key without a grant reads photos"
    );
    println!(
        "handles: the sample bucket and key (once its Secret names no endpoint) and a clusterRef key serve {} checksummed objects; a key without a grant is refused ({:.1}s)",
        objects.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Deleting the handles, then their dependents, leaves Garage as it is.
async fn released(w: &World<'_>, ip: &str) -> anyhow::Result<()> {
    let client = &w.client;
    let t = Instant::now();
    let admin = admin_client_as_mounted(client, w.sim, "garage-storage-0-0").await?;
    let before = admin
        .list_buckets()
        .await?
        .into_iter()
        .find(|b| b.global_aliases.iter().any(|a| a == "photos"))
        .context("no photos bucket in Garage")?;
    for name in [BY_URL, BY_REF] {
        w.clusters.delete(name, &DeleteParams::default()).await?;
    }
    let clusters = &w.clusters;
    wait("the handles gone", Duration::from_secs(30), || async {
        Ok(clusters.get_opt(BY_URL).await?.is_none() && clusters.get_opt(BY_REF).await?.is_none())
    })
    .await?;
    let keys: Api<GarageKey> = Api::namespaced(client.clone(), ns());
    let buckets: Api<GarageBucket> = Api::namespaced(client.clone(), ns());
    for name in ["photos-app", "sibling-key", "handle-stranger"] {
        keys.delete(name, &DeleteParams::default()).await?;
    }
    buckets.delete("photos", &DeleteParams::default()).await?;
    wait(
        "the handles' dependents released",
        Duration::from_secs(60),
        || async {
            Ok(buckets.get_opt("photos").await?.is_none()
                && keys.get_opt("photos-app").await?.is_none()
                && keys.get_opt("sibling-key").await?.is_none()
                && keys.get_opt("handle-stranger").await?.is_none())
        },
    )
    .await?;
    let after = admin
        .list_buckets()
        .await?
        .into_iter()
        .find(|b| b.global_aliases.iter().any(|a| a == "photos"))
        .context("the photos bucket left Garage with its handle")?;
    ensure!(before.id == after.id, "the photos bucket changed");
    // The imported key left Garage with nothing either: it still reads every object.
    let reader = garage_fixture::s3::Objects::new("photos", IMPORTED.0, IMPORTED.1)?;
    for (name, body) in &random_objects(20, 31) {
        ensure!(
            &reader.get(&format!("http://{ip}:3900"), name).await? == body,
            "{name} is not what was written"
        );
    }
    // The Secrets this step made as the user would.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns());
    for name in ["garage-admin", "photos-app-existing-creds"] {
        secrets.delete(name, &DeleteParams::default()).await?;
    }
    ensure!(
        condition(&w.clusters.get(NAME).await?, "Ready") == Some("True".into()),
        "the site's cluster is not Ready after the handles went"
    );
    println!(
        "handles: deleting the handles and their dependents left the bucket and every object in Garage ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
