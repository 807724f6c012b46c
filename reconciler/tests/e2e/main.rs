//! End-to-end: one real control plane (localcluster), kubesim with four nodes in four zones
//! running real garage 2.5.0, the webhook appliance serving in this process behind the
//! chart's own CRDs and webhook registrations (pointed at it by URL, caBundle written by the
//! webhook itself), and the reconciler's controllers run in-process. Every write of the
//! scenario therefore passes admission. One scenario, in order:
//!
//! 1. a 3-member GarageCluster (replication factor 3, local-sim PVCs) is created; the
//!    reconciler is aborted mid-bootstrap and restarted; the cluster reaches Ready with
//!    exactly three roles;
//! 2. 200 objects PUT through one pod's S3 endpoint read back through another;
//! 3. five resyncs of the converged cluster make no API write;
//! 4. a deleted storage pod comes back with the same Garage node ID;
//! 5. two Manual GarageNodes (claim templates; emptyDir metadata and an existing claim) join
//!    the layout beside the Auto group; the objects of step 2 read back;
//! 6. 3 -> 4 adds exactly one role; 4 -> 3 is refused by admission (GC-S10, the old
//!    generation is not prepared), and with the validating webhook removed the reconciler
//!    still holds it with a condition and removes nothing;
//! 7. with admission back, deleting the GarageCluster tears everything down through the
//!    finalizers (no one touches one by hand) and leaves only the retained claims.
//!
//! `cargo test -p reconciler --test e2e`

// Test code: a panic is a failed step with a message.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, ensure};
use garage_admin::{AdminClient, AdminToken, BucketPermissions, CreateBucket, KeySpec};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kubesim::{KubeSim, NodeSpec};
use localcluster::LocalCluster;
use localcluster::tools::Tool;
use localcluster::wait_until as wait;
use reconciler::controller::{self, Metrics};
use serde_json::json;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

const NS: &str = "e2e";
const WEBHOOK_NS: &str = "garage-operator";
const NAME: &str = "garage";
const RESYNC: Duration = Duration::from_secs(3);

fn main() -> ExitCode {
    // Debug builds keep the large reconcile futures on the stack.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .thread_stack_size(16 << 20)
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run()) {
        Ok(()) => {
            println!("e2e passed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("e2e FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

struct Reconciler {
    handle: tokio::task::JoinHandle<()>,
}

fn start_reconciler(client: &Client, metrics: &Arc<Metrics>) -> Reconciler {
    let config = controller::Config {
        resync: RESYNC,
        short_requeue: Duration::from_secs(1),
        error_requeue: Duration::from_secs(2),
        admin_timeout: Duration::from_secs(5),
        ..controller::Config::default()
    };
    Reconciler {
        handle: tokio::spawn(controller::run(
            client.clone(),
            config,
            metrics.clone(),
            std::future::pending(),
        )),
    }
}

async fn run() -> anyhow::Result<()> {
    Tool::Garage.require()?;
    let begin = Instant::now();
    let cluster = LocalCluster::start(localcluster::Options {
        name: "reconciler-e2e".into(),
        ..localcluster::Options::default()
    })
    .await?;
    let client = cluster.client().await?;
    let mut options = kubesim::Options::new(
        cluster.dir().join("kubesim"),
        Tool::Garage.path(),
        cluster.server(),
        cluster.ca_pem(),
    );
    for (n, zone) in [
        ("n1", "zone-a"),
        ("n2", "zone-b"),
        ("n3", "zone-c"),
        ("n4", "zone-d"),
    ] {
        options = options.node(NodeSpec::new(n).zone(zone));
    }
    let sim = KubeSim::start(client.clone(), options).await?;
    println!(
        "cluster and kubesim up after {:.1}s",
        begin.elapsed().as_secs_f64()
    );
    let result = scenario(&client, &sim).await;
    if result.is_err() {
        println!("garage logs: {}", cluster.dir().join("kubesim").display());
    }
    sim.shutdown().await;
    drop(cluster);
    result
}

async fn scenario(client: &Client, sim: &KubeSim) -> anyhow::Result<()> {
    for ns in [NS, WEBHOOK_NS] {
        Api::<Namespace>::all(client.clone())
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
            )
            .await?;
    }
    let webhook = start_webhook(client).await?;
    let base = format!("https://127.0.0.1:{}", webhook.local_addr().port());
    install_registrations(client, &base).await?;
    let metrics = Arc::new(Metrics::default());
    let mut rec = start_reconciler(client, &metrics);
    let clusters: Api<GarageCluster> = Api::namespaced(client.clone(), NS);
    let gns: Api<GarageNode> = Api::namespaced(client.clone(), NS);
    let gc: GarageCluster = serde_json::from_value(kubesim::three_node_garage_cluster(NAME))?;
    clusters.create(&PostParams::default(), &gc).await?;

    // 1. Kill the reconciler once members have identities, before or during the first
    //    layout, then restart it.
    let t = Instant::now();
    wait(
        "two generated nodes with a node ID",
        Duration::from_secs(120),
        || async {
            let list = gns.list(&ListParams::default()).await?;
            Ok(list
                .items
                .iter()
                .filter(|n| n.status.as_ref().and_then(|s| s.node_id.as_ref()).is_some())
                .count()
                >= 2)
        },
    )
    .await?;
    rec.handle.abort();
    let _ = (&mut rec.handle).await;
    let layout_at_abort = match admin_client(client, sim, 0).await {
        Ok(a) => a
            .layout()
            .await
            .map(|l| (l.version, l.roles.len(), l.staged_role_changes.len()))
            .ok(),
        Err(_) => None,
    };
    println!(
        "reconciler aborted mid-bootstrap after {:.1}s; layout (version, roles, staged) = {layout_at_abort:?}",
        t.elapsed().as_secs_f64()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    rec = start_reconciler(client, &metrics);
    wait_ready(&clusters, Duration::from_secs(180)).await?;
    println!("Ready after {:.1}s", t.elapsed().as_secs_f64());
    let admin = admin_client(client, sim, 0).await?;
    let layout = admin.layout().await?;
    ensure!(
        layout.roles.len() == 3,
        "expected 3 roles, got {:?}",
        layout.roles
    );
    ensure!(layout.staged_role_changes.is_empty(), "left staged changes");
    let ids: BTreeMap<String, String> = node_ids(&gns).await?;
    ensure!(ids.len() == 3);

    // 2. S3 round trip of 200 objects through different pods.
    s3_round_trip(&admin, sim).await?;
    println!("200 objects round-tripped");

    // 3. Silence at steady state.
    tokio::time::sleep(RESYNC * 2).await;
    let before = snapshot(client).await?;
    let writes = metrics.api_writes();
    let reconciles = metrics.reconciles();
    tokio::time::sleep(RESYNC * 5 + Duration::from_secs(1)).await;
    let after = snapshot(client).await?;
    let reconciled = metrics.reconciles() - reconciles;
    ensure!(
        reconciled >= 5,
        "only {reconciled} reconciles in five resyncs"
    );
    ensure!(
        metrics.api_writes() == writes,
        "{} API writes at steady state",
        metrics.api_writes() - writes
    );
    ensure!(
        before == after,
        "resourceVersions moved at steady state:\n{before:?}\n{after:?}"
    );
    println!("steady state: {reconciled} reconciles, 0 writes");

    // 4. A deleted storage pod keeps its identity.
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let victim = "garage-storage-1-0";
    let old_uid = pods.get(victim).await?.uid();
    pods.delete(victim, &DeleteParams::default()).await?;
    wait(
        "the pod to come back and be re-identified",
        Duration::from_secs(120),
        || async {
            let Some(p) = pods.get_opt(victim).await? else {
                return Ok(false);
            };
            let gn = gns.get("garage-storage-1").await?;
            let st = gn.status.unwrap_or_default();
            Ok(p.uid() != old_uid && st.observed_pod_uid == p.uid())
        },
    )
    .await?;
    ensure!(
        node_ids(&gns).await? == ids,
        "a node ID changed after the pod restart"
    );
    wait_ready(&clusters, Duration::from_secs(120)).await?;
    println!("pod restart kept node IDs");

    // 5. Two Manual GarageNodes join beside the Auto group: one on claim templates, one on
    //    an emptyDir metadata volume and a claim the user made. The objects of step 2 read
    //    back afterwards.
    manual_nodes(client).await?;
    wait_ready(&clusters, Duration::from_secs(180)).await?;
    let layout = admin_client(client, sim, 0).await?.layout().await?;
    ensure!(
        layout.roles.len() == 5,
        "expected 5 roles with the Manual nodes, got {}",
        layout.roles.len()
    );
    for name in ["manual-a", "manual-b"] {
        let st = gns.get(name).await?.status.unwrap_or_default();
        let id = st.node_id.context("a Manual node without an ID")?;
        ensure!(
            layout.roles.iter().any(|r| r.id.as_str() == id),
            "{name} has no role"
        );
    }
    read_back(&admin, sim).await?;
    println!("two Manual nodes joined (5 roles); every object reads back");

    // 6a. Scale up by one.
    let version = admin_client(client, sim, 0).await?.layout().await?.version;
    scale(&clusters, 4).await?;
    wait_ready(&clusters, Duration::from_secs(180)).await?;
    let admin = admin_client(client, sim, 0).await?;
    let layout = admin.layout().await?;
    ensure!(
        layout.roles.len() == 4,
        "expected 4 roles, got {}",
        layout.roles.len()
    );
    ensure!(
        layout.version == version + 1,
        "scale-up took {} versions",
        layout.version - version
    );
    println!("scale 3 -> 4 added one role in one version");

    // 6b. Scale down is refused by admission: the old generation is not prepared.
    let refused = scale(&clusters, 3)
        .await
        .err()
        .context("scale 4 -> 3 was admitted")?;
    ensure!(
        refused.to_string().contains("GC-S10"),
        "unexpected refusal: {refused:#}"
    );
    println!("scale 4 -> 3 refused by admission: {refused:#}");

    // 6c. Without the validating webhook the reconciler still holds it.
    Api::<ValidatingWebhookConfiguration>::all(client.clone())
        .delete(
            &format!("{}-validating", chart_tests::RELEASE),
            &DeleteParams::default(),
        )
        .await?;
    wait(
        "scale 4 -> 3 to be admitted without the validating webhook",
        Duration::from_secs(30),
        || async { Ok(scale(&clusters, 3).await.is_ok()) },
    )
    .await?;
    wait(
        "StorageScaleDownBlocked=True",
        Duration::from_secs(60),
        || async {
            let c = clusters.get(NAME).await?;
            Ok(condition(&c, "StorageScaleDownBlocked") == Some("True".into()))
        },
    )
    .await?;
    tokio::time::sleep(RESYNC * 3).await;
    let layout = admin.layout().await?;
    ensure!(
        layout.roles.len() == 4 && layout.staged_role_changes.is_empty(),
        "scale-down touched the layout"
    );
    ensure!(
        gns.get_opt("garage-storage-3").await?.is_some(),
        "the fourth GarageNode was removed"
    );
    ensure!(
        pods.get_opt("garage-storage-3-0").await?.is_some(),
        "the fourth pod was removed"
    );
    println!("scale 4 -> 3 held, nothing removed");

    // 7. Deleting the cluster, with admission back in place, tears the whole store down
    //    without anyone touching a finalizer: every operator-made object goes, claims stay
    //    (the default retention policy is Retain).
    install_registrations(client, &base).await?;
    let claims_before = claim_names(client).await?;
    let t = Instant::now();
    clusters.delete(NAME, &DeleteParams::default()).await?;
    wait(
        "the GarageCluster to be gone",
        Duration::from_secs(240),
        || async { Ok(clusters.get_opt(NAME).await?.is_none()) },
    )
    .await?;
    let deleted_after = t.elapsed();
    wait(
        "no operator-made object left",
        Duration::from_secs(60),
        || async { Ok(leftovers(client).await?.is_empty()) },
    )
    .await
    .map_err(|e| anyhow!("{e:#}"))?;
    ensure!(
        claim_names(client).await? == claims_before,
        "claims changed on Destroy with the Retain policy"
    );
    println!(
        "cluster deleted in {:.1}s; nothing left but the {} retained claims",
        deleted_after.as_secs_f64(),
        claims_before.len()
    );
    rec.handle.abort();
    webhook.stop().await;
    Ok(())
}

/// The webhook appliance in this process, self-managed certificates valid for 127.0.0.1, the
/// chart's install label.
async fn start_webhook(client: &Client) -> anyhow::Result<webhook::server::Running> {
    use certs::{InstallLabel, Lifetimes, Mode, SelfManagedConfig};
    use webhook::server::dispatch::Settings;
    use webhook::server::limits::Limits;
    certs::install_default_provider();
    let config = webhook::server::ServeConfig {
        listen: "127.0.0.1:0".parse()?,
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
            controller_username: "system:serviceaccount:garage-operator:garage-operator-reconciler"
                .into(),
        },
        limits: Limits::default(),
    };
    Ok(webhook::server::start(config, client.clone()).await?)
}

/// The chart's CRDs and webhook configurations, pointed at the in-process webhook; returns
/// once the webhook has written its CA into them and a GarageCluster passes admission.
async fn install_registrations(client: &Client, base: &str) -> anyhow::Result<()> {
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
    let probe: GarageCluster = serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
        "metadata": {"name": "admission-probe"},
        "spec": {"replication": {"factor": 3}, "storage": {
            "replicas": 3, "metadata": {"size": "1Gi"}, "data": {"size": "1Gi"},
        }},
    }))?;
    let clusters: Api<GarageCluster> = Api::namespaced(client.clone(), NS);
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

async fn admin_client(client: &Client, sim: &KubeSim, ordinal: u32) -> anyhow::Result<AdminClient> {
    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get("garage-admin-token")
        .await?;
    let token = String::from_utf8(secret.data.unwrap()["admin-token"].0.clone())?;
    let ip = sim
        .pod_ip(NS, &format!("garage-storage-{ordinal}-0"))
        .context("pod has no address")?;
    Ok(AdminClient::new(
        &format!("http://{ip}:3903"),
        &AdminToken::new(token),
    )?)
}

async fn node_ids(gns: &Api<GarageNode>) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(gns
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|n| Some((n.name_any(), n.status?.node_id?)))
        .collect())
}

async fn scale(clusters: &Api<GarageCluster>, replicas: i32) -> anyhow::Result<()> {
    clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"storage": {"replicas": replicas}}})),
        )
        .await?;
    Ok(())
}

fn condition(c: &GarageCluster, type_: &str) -> Option<String> {
    c.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|x| x.type_ == type_)
        .map(|x| x.status.clone())
}

async fn wait_ready(clusters: &Api<GarageCluster>, timeout: Duration) -> anyhow::Result<()> {
    let result = wait("GarageCluster Ready=True", timeout, || async {
        let c = clusters.get(NAME).await?;
        Ok(condition(&c, "Ready") == Some("True".into())
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
async fn snapshot(client: &Client) -> anyhow::Result<BTreeMap<String, String>> {
    use k8s_openapi::api::apps::v1::StatefulSet;
    use k8s_openapi::api::core::v1::{ConfigMap, Service};
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    let mut out = BTreeMap::new();
    let lp = ListParams::default();
    macro_rules! add {
        ($k:ty) => {
            for o in Api::<$k>::namespaced(client.clone(), NS)
                .list(&lp)
                .await?
                .items
            {
                out.insert(
                    format!("{}/{}", stringify!($k), o.name_any()),
                    o.resource_version().unwrap_or_default(),
                );
            }
        };
    }
    add!(GarageCluster);
    add!(GarageNode);
    add!(StatefulSet);
    add!(Service);
    add!(ConfigMap);
    add!(Secret);
    add!(PodDisruptionBudget);
    Ok(out)
}

/// Two user-written GarageNodes of the cluster.
async fn manual_nodes(client: &Client) -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "manual-b-data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": kubesim::STORAGE_CLASS,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }))?;
    Api::<PersistentVolumeClaim>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &claim)
        .await?;
    let gns: Api<GarageNode> = Api::namespaced(client.clone(), NS);
    for (name, zone, storage) in [
        (
            "manual-a",
            "zone-a",
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
        let gn: GarageNode = serde_json::from_value(json!({
            "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageNode",
            "metadata": {"name": name},
            "spec": {
                "clusterRef": {"name": NAME},
                "zone": zone,
                "capacity": "1Gi",
                "storage": storage,
            },
        }))?;
        gns.create(&PostParams::default(), &gn)
            .await
            .with_context(|| format!("creating GarageNode {name}"))?;
    }
    Ok(())
}

/// Names of the claims in the namespace.
async fn claim_names(client: &Client) -> anyhow::Result<Vec<String>> {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let mut names: Vec<String> = Api::<PersistentVolumeClaim>::namespaced(client.clone(), NS)
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
async fn leftovers(client: &Client) -> anyhow::Result<Vec<String>> {
    let mut left: Vec<String> = snapshot(client).await?.into_keys().collect();
    for p in Api::<Pod>::namespaced(client.clone(), NS)
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
async fn read_back(admin: &AdminClient, sim: &KubeSim) -> anyhow::Result<()> {
    use garage_fixture::s3::Objects;
    let listed = admin.list_keys().await?;
    let id = &listed
        .iter()
        .find(|k| k.name == "e2e")
        .context("the e2e key is gone")?
        .id;
    let key = admin.key_info(garage_admin::Lookup::Id(id), true).await?;
    let secret = key.secret_access_key.as_deref().context("no secret")?;
    let ip = sim.pod_ip(NS, "garage-storage-2-0").context("no pod ip")?;
    let objects = Objects::new("e2e", &key.access_key_id, secret)?;
    for (name, body) in e2e_objects() {
        let got = objects.get(&format!("http://{ip}:3900"), &name).await?;
        ensure!(got == body, "object {name} changed");
    }
    Ok(())
}

fn e2e_objects() -> Vec<(String, Vec<u8>)> {
    (0..200)
        .map(|i| (format!("obj-{i}"), format!("object {i}").into_bytes()))
        .collect()
}

async fn s3_round_trip(admin: &AdminClient, sim: &KubeSim) -> anyhow::Result<()> {
    use garage_fixture::s3::Objects;
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
    let secret = key.secret_access_key.as_deref().context("no secret")?;
    let endpoint = |ordinal: u32| -> anyhow::Result<String> {
        let ip = sim
            .pod_ip(NS, &format!("garage-storage-{ordinal}-0"))
            .context("no pod ip")?;
        Ok(format!("http://{ip}:3900"))
    };
    let objects = e2e_objects();
    Objects::new("e2e", &key.access_key_id, secret)?
        .round_trip(&endpoint(0)?, &endpoint(1)?, &objects)
        .await?;
    Ok(())
}
