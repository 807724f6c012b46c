//! Helpers every step shares: the webhook in-process, Admin API clients, waits on conditions,
//! object sets, and the S3 objects written and read back.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context as _, anyhow, ensure};
use garage_admin::{AdminClient, AdminToken, BucketPermissions, CreateBucket, KeySpec};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kubesim::KubeSim;
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

use crate::{DEDICATED_TAINT, LOST_NODE, LOST_ZONE, NAME, WEBHOOK_NS, World, ns};

/// The S3 endpoint of pod `pod`.
pub(crate) fn s3(sim: &KubeSim, pod: &str) -> anyhow::Result<String> {
    Ok(format!(
        "http://{}:3900",
        sim.pod_ip(ns(), pod).context("no pod ip")?
    ))
}

/// The webhook appliance in this process, self-managed certificates valid for 127.0.0.1, the
/// chart's install label.
pub(crate) async fn start_webhook(
    client: &Client,
    listen: std::net::SocketAddr,
) -> anyhow::Result<webhook::server::Running> {
    use certs::{InstallLabel, Lifetimes, Mode, SelfManagedConfig};
    use webhook::server::dispatch::Settings;
    use webhook::server::limits::Limits;
    certs::install_default_provider();
    let config = webhook::server::ServeConfig {
        listen,
        certificates: Mode::SelfManaged(SelfManagedConfig {
            secret_namespace: WEBHOOK_NS.into(),
            secret_name: "garage-operator-webhook-cert".into(),
            service_name: "garage-operator-webhook".into(),
            service_namespace: WEBHOOK_NS.into(),
            extra_sans: vec!["127.0.0.1".into()],
            lifetimes: Lifetimes::default(),
            install_label: InstallLabel::parse(chart_tests::RELEASE)?,
            check_interval: Duration::from_secs(5),
            bundle_propagation: Duration::from_secs(2),
        }),
        settings: Settings {
            // The reconcilers of this test run with the admin certificate, so that is the
            // identity the claim barrier lets release a reservation.
            controller_username: "localcluster-admin".into(),
            ..Settings::default()
        },
        limits: Limits::default(),
    };
    Ok(webhook::server::start(config, client.clone()).await?)
}

/// The chart's CRDs and webhook configurations, pointed at the in-process webhook; returns
/// once the webhook has written its CA into them and a GarageCluster passes admission.
pub(crate) async fn install_registrations(client: &Client, base: &str) -> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for object in chart_tests::registrations_by_url(base)? {
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let resource = match kind.as_str() {
            "CustomResourceDefinition" => {
                kube::core::ApiResource::erase::<CustomResourceDefinition>(&())
            }
            "ValidatingWebhookConfiguration" => {
                kube::core::ApiResource::erase::<ValidatingWebhookConfiguration>(&())
            }
            _ => kube::core::ApiResource::erase::<MutatingWebhookConfiguration>(&()),
        };
        Api::<kube::api::DynamicObject>::all_with(client.clone(), &resource)
            .patch(
                &name,
                &PatchParams::apply("e2e").force(),
                &Patch::Apply(&object),
            )
            .await
            .with_context(|| format!("applying {kind} {name}"))?;
    }
    for name in [
        "garageclusters.garage.rajsingh.info",
        "garagenodes.garage.rajsingh.info",
    ] {
        wait("CRD established", Duration::from_secs(30), || async {
            let crd = crds.get(name).await?;
            Ok(crd.status.and_then(|s| s.conditions).is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            }))
        })
        .await?;
    }
    wait_admission(client).await
}

/// Returns once a GarageCluster passes admission (a dry-run create in the site's namespace).
pub(crate) async fn wait_admission(client: &Client) -> anyhow::Result<()> {
    let probe: GarageCluster = serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
        "metadata": {"name": "admission-probe"},
        "spec": {"replication": {"factor": 3}, "storage": {
            "replicas": 3, "metadata": {"size": "1Gi"}, "data": {"size": "1Gi"},
        }},
    }))?;
    let clusters: Api<GarageCluster> = Api::namespaced(client.clone(), ns());
    let dry_run = PostParams {
        dry_run: true,
        field_manager: None,
    };
    wait(
        "the webhook's CA in the registrations (a GarageCluster passes admission)",
        Duration::from_secs(60),
        || async {
            clusters.create(&dry_run, &probe).await?;
            Ok(true)
        },
    )
    .await
}

pub(crate) async fn admin_client(
    client: &Client,
    sim: &KubeSim,
    ordinal: u32,
) -> anyhow::Result<AdminClient> {
    admin_client_at(client, sim, &format!("garage-storage-{ordinal}-0")).await
}

/// An Admin API client of pod `pod`, with the token of the Secret `garage-admin-token`, or
/// the token the pod mounts where the site names its Secret otherwise.
pub(crate) async fn admin_client_at(
    client: &Client,
    sim: &KubeSim,
    pod: &str,
) -> anyhow::Result<AdminClient> {
    let Some(secret) = Api::<Secret>::namespaced(client.clone(), ns())
        .get_opt("garage-admin-token")
        .await?
    else {
        return admin_client_as_mounted(client, sim, pod).await;
    };
    let token = String::from_utf8(secret.data.unwrap()["admin-token"].0.clone())?;
    let ip = sim.pod_ip(ns(), pod).context("pod has no address")?;
    Ok(AdminClient::new(
        &format!("http://{ip}:3903"),
        &AdminToken::new(token),
    )?)
}

/// An Admin API client of pod `pod` with the token that pod runs: the Secret and key its
/// `admin-token` volume mounts (a user-named token's immutable copy, once the cluster uses
/// one).
pub(crate) async fn admin_client_as_mounted(
    client: &Client,
    sim: &KubeSim,
    pod: &str,
) -> anyhow::Result<AdminClient> {
    let token = mounted_token(client, pod).await?;
    let ip = sim.pod_ip(ns(), pod).context("pod has no address")?;
    Ok(AdminClient::new(
        &format!("http://{ip}:3903"),
        &AdminToken::new(token),
    )?)
}

/// The admin token pod `pod` runs with: the Secret and key its `admin-token` volume mounts.
pub(crate) async fn mounted_token(client: &Client, pod: &str) -> anyhow::Result<String> {
    mounted(client, pod, "admin-token").await
}

/// The value pod `pod`'s Secret volume `volume` mounts (its first item's key).
pub(crate) async fn mounted(client: &Client, pod: &str, volume: &str) -> anyhow::Result<String> {
    let p = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), ns())
        .get(pod)
        .await?;
    let secret = p
        .spec
        .and_then(|s| s.volumes)
        .unwrap_or_default()
        .into_iter()
        .find(|v| v.name == volume)
        .and_then(|v| v.secret)
        .with_context(|| format!("the pod mounts no {volume}"))?;
    let key = secret
        .items
        .as_ref()
        .and_then(|i| i.first())
        .map_or_else(|| volume.to_owned(), |i| i.key.clone());
    let name = secret.secret_name.context("no Secret name")?;
    let data = Api::<Secret>::namespaced(client.clone(), ns())
        .get(&name)
        .await?
        .data
        .context("an empty Secret")?;
    Ok(
        String::from_utf8(data.get(&key).context("no such key")?.0.clone())?
            .trim()
            .to_owned(),
    )
}

pub(crate) async fn node_ids(gns: &Api<GarageNode>) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(gns
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|n| Some((n.name_any(), n.status?.node_id?)))
        .collect())
}

pub(crate) async fn scale(clusters: &Api<GarageCluster>, replicas: i32) -> anyhow::Result<()> {
    clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"storage": {"replicas": replicas}}})),
        )
        .await?;
    Ok(())
}

pub(crate) fn condition(c: &GarageCluster, type_: &str) -> Option<String> {
    condition_in(c.status.as_ref()?.conditions.as_deref(), type_)
}

/// The status of condition `type_` among `conditions`.
pub(crate) fn condition_in(
    conditions: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]>,
    type_: &str,
) -> Option<String> {
    conditions?
        .iter()
        .find(|x| x.type_ == type_)
        .map(|x| x.status.clone())
}

/// The reason of condition `type_`.
pub(crate) fn reason_of(c: &GarageCluster, type_: &str) -> Option<String> {
    cluster_condition(c, type_).map(|x| x.reason.clone())
}

/// The message of condition `type_`.
pub(crate) fn message_of(c: &GarageCluster, type_: &str) -> Option<String> {
    cluster_condition(c, type_).map(|x| x.message.clone())
}

fn cluster_condition<'c>(
    c: &'c GarageCluster,
    type_: &str,
) -> Option<&'c k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    c.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|x| x.type_ == type_)
}

pub(crate) async fn wait_ready(
    clusters: &Api<GarageCluster>,
    timeout: Duration,
) -> anyhow::Result<()> {
    wait_condition(clusters, "Ready", "True", None, timeout).await
}

/// Waits until `NodeLocalPoolsReady=True`, then `Ready=True`, each within `timeout`.
pub(crate) async fn wait_pools_ready(
    clusters: &Api<GarageCluster>,
    timeout: Duration,
) -> anyhow::Result<()> {
    let pools = shared_types::conditions::cluster::CONDITION_NODE_LOCAL_POOLS_READY;
    wait_condition(clusters, pools, "True", None, timeout).await?;
    wait_ready(clusters, timeout).await
}

/// Waits until condition `type_` has `status` (and `reason`, when given) with the status
/// observed at the current generation; on timeout the error carries the status.
pub(crate) async fn wait_condition(
    clusters: &Api<GarageCluster>,
    type_: &str,
    status: &str,
    reason: Option<&str>,
    timeout: Duration,
) -> anyhow::Result<()> {
    let what = match reason {
        Some(r) => format!("GarageCluster {type_}={status}/{r}"),
        None => format!("GarageCluster {type_}={status}"),
    };
    let result = wait(&what, timeout, || async {
        let c = clusters.get(NAME).await?;
        Ok(condition(&c, type_).as_deref() == Some(status)
            && reason.is_none_or(|r| reason_of(&c, type_).as_deref() == Some(r))
            && c.status.as_ref().and_then(|s| s.observed_generation) == c.metadata.generation)
    })
    .await;
    if let Err(e) = result {
        let c = clusters.get(NAME).await?;
        return Err(anyhow!(
            "{e:#}; status: {}",
            serde_json::to_string(&c.status)?
        ));
    }
    Ok(())
}

/// resourceVersions of every object the reconciler writes in the namespace.
pub(crate) async fn snapshot(client: &Client) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(crate::object_diff::bodies(client)
        .await?
        .into_iter()
        .map(|(k, v)| {
            let version = v["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            (k, version)
        })
        .collect())
}

/// Two user-written GarageNodes of the cluster.
pub(crate) async fn manual_nodes(client: &Client) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "manual-b-data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": kubesim::STORAGE_CLASS,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }))?;
    Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns())
        .create(&PostParams::default(), &claim)
        .await?;
    let gns: Api<GarageNode> = Api::namespaced(client.clone(), ns());
    for (name, zone, storage) in [
        (
            "manual-a",
            LOST_ZONE,
            json!({
                "metadata": {"size": "100Mi", "storageClassName": kubesim::STORAGE_CLASS},
                "data": {"size": "1Gi", "storageClassName": kubesim::STORAGE_CLASS},
            }),
        ),
        (
            "manual-b",
            "zone-b",
            json!({
                "metadata": {"type": "EmptyDir", "size": "100Mi"},
                "data": {"existingClaim": "manual-b-data"},
            }),
        ),
    ] {
        let mut gn = json!({
            "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageNode",
            "metadata": {"name": name},
            "spec": {
                "clusterRef": {"name": NAME},
                "zone": zone,
                "capacity": "1Gi",
                "storage": storage,
            },
        });
        // manual-a alone runs on the Kubernetes Node the lost-node step takes away.
        if zone == LOST_ZONE {
            gn["spec"]["nodeSelector"] = json!({"kubernetes.io/hostname": LOST_NODE});
            gn["spec"]["tolerations"] = json!([{
                "key": DEDICATED_TAINT, "operator": "Equal", "value": "lost", "effect": "NoSchedule"
            }]);
        }
        let gn: GarageNode = serde_json::from_value(gn)?;
        gns.create(&PostParams::default(), &gn)
            .await
            .with_context(|| format!("creating GarageNode {name}"))?;
    }
    Ok(())
}

/// `result`, the wait for a drain; when it failed, what the drain was waiting for is printed
/// first.
pub(crate) async fn or_dump_drain(
    result: anyhow::Result<()>,
    clusters: &Api<GarageCluster>,
    admin: &AdminClient,
) -> anyhow::Result<()> {
    if let Err(e) = result {
        dump_drain(clusters, admin).await;
        return Err(anyhow!("{e:#}"));
    }
    Ok(())
}

/// What a drain that did not finish was waiting for.
pub(crate) async fn dump_drain(clusters: &Api<GarageCluster>, admin: &AdminClient) {
    if let Ok(c) = clusters.get(NAME).await
        && let Some(st) = c.status
    {
        for cond in st.conditions.unwrap_or_default() {
            println!(
                "condition {} {} {}: {}",
                cond.type_, cond.status, cond.reason, cond.message
            );
        }
        println!(
            "storageDrain: {}",
            serde_json::to_string(&st.storage_drain).unwrap_or_default()
        );
    }
    if let Ok(h) = admin.layout_history().await {
        println!("history: {h:?}");
    }
    if let Ok(w) = admin
        .list_workers(&garage_admin::NodeTarget::All, Default::default())
        .await
    {
        for (node, workers) in w.into_parts().0 {
            for w in workers.iter().filter(|w| w.name.contains("Block")) {
                println!(
                    "{} {} #{} {:?} queue={:?} errors={} persistent={:?}",
                    node.short(),
                    w.name,
                    w.id,
                    w.state,
                    w.queue_length,
                    w.errors,
                    w.persistent_errors
                );
            }
        }
    }
}

/// `n` objects of pseudo-random content (1 to 64 KiB), from a fixed seed.
pub(crate) fn random_objects(n: usize, seed: u64) -> Vec<(String, Vec<u8>)> {
    use sha2::{Digest, Sha256};
    (0..n)
        .map(|i| {
            let mut block = Sha256::digest(format!("{seed}/{i}")).to_vec();
            let len = 1024 + usize::from(block[0]) * 252;
            let mut body = Vec::with_capacity(len + 32);
            while body.len() < len {
                body.extend_from_slice(&block);
                block = Sha256::digest(&block).to_vec();
            }
            body.truncate(len);
            (format!("random-{i}"), body)
        })
        .collect()
}

/// 200 objects of random content written through pod `via` with the e2e key, remembered with
/// their store in `w`, to be read back after every later change.
pub(crate) async fn write_checksummed(
    w: &mut World<'_>,
    admin: &AdminClient,
    via: &str,
) -> anyhow::Result<()> {
    let (key_id, secret) = e2e_key(admin).await?;
    let store = garage_fixture::s3::Objects::new("e2e", &key_id, &secret)?;
    write_through(w, store, via, 0x5eed).await
}

/// 200 objects of random content from `seed` written through pod `via` into `store`, both
/// remembered in `w`.
pub(crate) async fn write_through(
    w: &mut World<'_>,
    store: garage_fixture::s3::Objects,
    via: &str,
    seed: u64,
) -> anyhow::Result<()> {
    let checksummed = random_objects(200, seed);
    let via = s3(w.sim, via)?;
    for (name, body) in &checksummed {
        store.put(&via, name, body.clone()).await?;
    }
    w.checksummed = checksummed;
    w.store = Some(store);
    Ok(())
}

/// Whether the drain of GarageNode `name` is proven: the proof is the cluster's completed
/// drain record naming it; `DrainPrepared=True` on `node` (its current state) mirrors it,
/// though the node may be deleted before its controller publishes it.
pub(crate) async fn drain_proven(
    clusters: &Api<GarageCluster>,
    name: &str,
    node: Option<&GarageNode>,
) -> anyhow::Result<bool> {
    let record = clusters
        .get(NAME)
        .await?
        .status
        .and_then(|s| s.storage_drain)
        .filter(|d| {
            d.completed_at.is_some()
                && d.actor.as_ref().and_then(|a| a.name.as_deref()) == Some(name)
        });
    Ok(record.is_some()
        || node.is_some_and(|n| node_condition(n, "DrainPrepared") == Some("True".into())))
}

/// Reads every object through `endpoint` and compares its SHA-256 with what was written;
/// prints how many were lost (missing, unreadable or different), which must be none.
pub(crate) async fn verify(
    store: &garage_fixture::s3::Objects,
    endpoint: &str,
    objects: &[(String, Vec<u8>)],
) -> anyhow::Result<()> {
    use sha2::{Digest, Sha256};
    let mut lost = Vec::new();
    for (name, body) in objects {
        // A read cut off by a connection to a member that has just left is retried: Garage
        // notices the dead connection only at its next ping. What is read must still be
        // byte-identical, and a read that keeps failing counts the object as lost.
        let mut attempt = 0;
        let got = loop {
            match store.get(endpoint, name).await {
                Ok(got) => break Some(got),
                Err(e) if attempt < 3 => {
                    attempt += 1;
                    println!("read of {name} through {endpoint} failed ({e:#}); retry {attempt}");
                    tokio::time::sleep(std::time::Duration::from_secs(10)).await;
                }
                Err(e) => {
                    println!("read of {name} through {endpoint} failed for good: {e:#}");
                    break None;
                }
            }
        };
        if got.is_none_or(|got| Sha256::digest(&got) != Sha256::digest(body)) {
            lost.push(name.as_str());
        }
    }
    println!(
        "objects lost: {} of {} (read through {endpoint})",
        lost.len(),
        objects.len()
    );
    ensure!(
        lost.is_empty(),
        "{} of {} objects missing or different through {endpoint}: {lost:?}",
        lost.len(),
        objects.len()
    );
    Ok(())
}

/// The e2e key's ID and secret.
pub(crate) async fn e2e_key(admin: &AdminClient) -> anyhow::Result<(String, String)> {
    let listed = admin.list_keys().await?;
    let id = &listed
        .iter()
        .find(|k| k.name == "e2e")
        .context("the e2e key is gone")?
        .id;
    let key = admin.key_info(garage_admin::Lookup::Id(id), true).await?;
    let secret = key.secret_access_key.context("no secret")?;
    Ok((key.access_key_id, secret))
}

pub(crate) fn node_condition(n: &GarageNode, type_: &str) -> Option<String> {
    condition_in(n.status.as_ref()?.conditions.as_deref(), type_)
}

/// Names of the claims in the namespace.
pub(crate) async fn claim_names(client: &Client) -> anyhow::Result<Vec<String>> {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let mut names: Vec<String> = Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns())
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    names.sort();
    Ok(names)
}

/// Every object of a kind the operator writes that is still in the namespace.
pub(crate) async fn leftovers(client: &Client) -> anyhow::Result<Vec<String>> {
    let mut left: Vec<String> = snapshot(client).await?.into_keys().collect();
    for p in Api::<Pod>::namespaced(client.clone(), ns())
        .list(&ListParams::default())
        .await?
        .items
    {
        left.push(format!("Pod/{}", p.name_any()));
    }
    // The namespace's own ConfigMap is the API server's, not the operator's.
    left.retain(|k| k != "ConfigMap/kube-root-ca.crt");
    Ok(left)
}

/// The 200 objects of [`s3_round_trip`], read through another pod.
pub(crate) async fn read_back(admin: &AdminClient, sim: &KubeSim) -> anyhow::Result<()> {
    use garage_fixture::s3::Objects;
    let (key_id, secret) = e2e_key(admin).await?;
    let ip = sim
        .pod_ip(ns(), "garage-storage-2-0")
        .context("no pod ip")?;
    let objects = Objects::new("e2e", &key_id, &secret)?;
    verify(&objects, &format!("http://{ip}:3900"), &e2e_objects()).await
}

pub(crate) fn e2e_objects() -> Vec<(String, Vec<u8>)> {
    (0..200)
        .map(|i| (format!("obj-{i}"), format!("object {i}").into_bytes()))
        .collect()
}

pub(crate) async fn s3_round_trip(admin: &AdminClient, sim: &KubeSim) -> anyhow::Result<()> {
    use garage_fixture::s3::Objects;
    let (key_id, secret) = create_e2e_bucket(admin).await?;
    let endpoint = |ordinal: u32| -> anyhow::Result<String> {
        let ip = sim
            .pod_ip(ns(), &format!("garage-storage-{ordinal}-0"))
            .context("no pod ip")?;
        Ok(format!("http://{ip}:3900"))
    };
    let objects = e2e_objects();
    Objects::new("e2e", &key_id, &secret)?
        .round_trip(&endpoint(0)?, &endpoint(1)?, &objects)
        .await?;
    Ok(())
}

/// The key `e2e` with read and write on the bucket `e2e`, both new; returns the key's ID and
/// secret.
pub(crate) async fn create_e2e_bucket(admin: &AdminClient) -> anyhow::Result<(String, String)> {
    let key = admin
        .create_key(&KeySpec {
            name: Some("e2e".into()),
            ..Default::default()
        })
        .await?;
    let bucket = admin
        .create_bucket(&CreateBucket {
            global_alias: Some("e2e".into()),
            ..Default::default()
        })
        .await?;
    admin
        .allow_bucket_key(
            &bucket.id,
            &key.access_key_id,
            BucketPermissions {
                read: true,
                write: true,
                owner: false,
            },
        )
        .await?;
    let secret = key.secret_access_key.context("no secret")?;
    Ok((key.access_key_id, secret))
}

/// Waits until the completed drain record is released: `StorageDrainReady=True` and no
/// `status.storageDrain`. Admission refuses spec changes while a record exists.
pub(crate) async fn drain_idle(clusters: &Api<GarageCluster>) -> anyhow::Result<()> {
    wait(
        "StorageDrainReady back to Idle",
        Duration::from_secs(120),
        || async {
            let c = clusters.get(NAME).await?;
            Ok(condition(&c, "StorageDrainReady") == Some("True".into())
                && c.status
                    .as_ref()
                    .and_then(|s| s.storage_drain.as_ref())
                    .is_none())
        },
    )
    .await
}

/// Empties the directory behind GarageNode `node`'s metadata claim (a hostPath volume of the
/// local cluster), under whatever process runs on it.
pub(crate) async fn wipe_metadata(client: &kube::Client, node: &str) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    let claim = Api::<PersistentVolumeClaim>::namespaced(client.clone(), crate::ns())
        .get(&format!("metadata-{node}-0"))
        .await?;
    let volume = claim
        .spec
        .and_then(|s| s.volume_name)
        .context("metadata claim unbound")?;
    let dir = Api::<PersistentVolume>::all(client.clone())
        .get(&volume)
        .await?
        .spec
        .and_then(|s| s.host_path)
        .map(|h| h.path)
        .context("metadata volume is not a hostPath")?;
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}
