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
//! 6. 3 -> 4 adds exactly one role; with 200 random objects written, 4 -> 3 drains the
//!    fourth member (its pod runs until DrainPrepared=True) and every object reads back; a
//!    Manual node's DELETE is refused before its drain proof and allowed after;
//! 7. deleting the GarageCluster tears everything down through the finalizers (no one
//!    touches one by hand) and leaves only the retained claims.
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
        // Long enough to see a changing counter twice, short enough for a test.
        drain_quiet: Duration::from_secs(5),
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
    // Failed passes are logged (to stderr, shown when the test fails).
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("reconciler=warn")),
        )
        .try_init();
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
    // Ready was already True: wait for the members first, then for Ready again.
    wait(
        "the Manual nodes' roles in the layout",
        // One version per member after bootstrap, each after Garage's table sync settles.
        Duration::from_secs(720),
        || async {
            Ok(admin_client(client, sim, 0)
                .await?
                .layout()
                .await?
                .roles
                .len()
                == 5)
        },
    )
    .await?;
    wait_ready(&clusters, Duration::from_secs(120)).await?;
    let layout = admin_client(client, sim, 0).await?.layout().await?;
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
        layout.roles.len() == 6,
        "expected 6 roles (4 Auto, 2 Manual), got {}",
        layout.roles.len()
    );
    ensure!(
        layout.version == version + 1,
        "scale-up took {} versions",
        layout.version - version
    );
    println!("scale 3 -> 4 added one role in one version");

    // 6b. Scale 4 -> 3 with 200 objects of random content written first: the fourth
    //     member drains, its pod runs until DrainPrepared=True, then it goes; every object
    //     reads back byte-identical.
    let checksummed = random_objects(200, 0x5eed);
    let (key_id, secret) = e2e_key(&admin).await?;
    let store = garage_fixture::s3::Objects::new("e2e", &key_id, &secret)?;
    let s3 = |pod: &str| -> anyhow::Result<String> {
        Ok(format!(
            "http://{}:3900",
            sim.pod_ip(NS, pod).context("no pod ip")?
        ))
    };
    for (name, body) in &checksummed {
        store
            .put(&s3("garage-storage-3-0")?, name, body.clone())
            .await?;
    }
    let t = Instant::now();
    scale(&clusters, 3)
        .await
        .context("scale 4 -> 3 not admitted")?;
    // A restart in the middle: once the intent is recorded, the reconciler is aborted and a
    // new one resumes from the record.
    wait(
        "the drain intent recorded",
        Duration::from_secs(180),
        || async {
            let c = clusters.get(NAME).await?;
            Ok(c.status.and_then(|s| s.storage_drain).is_some())
        },
    )
    .await?;
    rec.handle.abort();
    let _ = (&mut rec.handle).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    rec = start_reconciler(client, &metrics);
    println!("reconciler restarted with the drain recorded");
    use std::sync::atomic::{AtomicBool, Ordering};
    let prepared_seen = Arc::new(AtomicBool::new(false));
    let pod_gone_early = Arc::new(AtomicBool::new(false));
    // Garage retries a table sync that failed on a reconnecting peer only at its next
    // anti-entropy pass (10 minutes); the timeouts leave room for one.
    let drained = wait(
        "garage-storage-3 drained and removed",
        Duration::from_secs(900),
        || {
            let (gns, pods, clusters) = (gns.clone(), pods.clone(), clusters.clone());
            let (seen, early) = (prepared_seen.clone(), pod_gone_early.clone());
            async move {
                let node = gns.get_opt("garage-storage-3").await?;
                // The proof is the completed record naming the node; DrainPrepared mirrors
                // it, though the node may be deleted before its controller publishes it.
                let record = clusters
                    .get(NAME)
                    .await?
                    .status
                    .and_then(|s| s.storage_drain)
                    .filter(|d| {
                        d.completed_at.is_some()
                            && d.actor.as_ref().and_then(|a| a.name.as_deref())
                                == Some("garage-storage-3")
                    });
                if record.is_some()
                    || node
                        .as_ref()
                        .is_some_and(|n| node_condition(n, "DrainPrepared") == Some("True".into()))
                {
                    seen.store(true, Ordering::SeqCst);
                }
                let pod = pods.get_opt("garage-storage-3-0").await?;
                if pod.is_none() && !seen.load(Ordering::SeqCst) {
                    early.store(true, Ordering::SeqCst);
                }
                Ok(node.is_none() && pod.is_none())
            }
        },
    )
    .await
    .map_err(|e| anyhow!("{e:#}"));
    if let Err(e) = drained {
        dump_drain(&clusters, &admin).await;
        return Err(e);
    }
    ensure!(
        !pod_gone_early.load(Ordering::SeqCst),
        "the fourth pod went before DrainPrepared=True"
    );
    ensure!(
        prepared_seen.load(Ordering::SeqCst),
        "no completed drain proof was seen before the pod went"
    );
    let layout = admin.layout().await?;
    ensure!(
        layout.roles.len() == 5,
        "expected 5 roles after the drain, got {}",
        layout.roles.len()
    );
    verify(&store, &s3("garage-storage-0-0")?, &checksummed).await?;
    println!(
        "scale 4 -> 3: drained, proven and removed in {:.1}s; 200 random objects read back identical",
        t.elapsed().as_secs_f64()
    );

    // 6c. A Manual node: DELETE before the proof is refused; after drain=true and
    //     DrainPrepared=True it is allowed and the node goes.
    let refused = gns
        .delete("manual-b", &DeleteParams::default())
        .await
        .err()
        .context("an unprepared Manual node was deleted")?;
    ensure!(
        refused.to_string().contains("GN-D7"),
        "unexpected refusal: {refused}"
    );
    gns.patch(
        "manual-b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {"garage.rajsingh.info/drain": "true"}}})),
    )
    .await?;
    wait(
        "manual-b DrainPrepared=True",
        Duration::from_secs(900),
        || async {
            let n = gns.get("manual-b").await?;
            Ok(node_condition(&n, "DrainPrepared") == Some("True".into()))
        },
    )
    .await?;
    ensure!(
        pods.get_opt("manual-b-0").await?.is_some(),
        "manual-b's pod went before its deletion"
    );
    gns.delete("manual-b", &DeleteParams::default())
        .await
        .context("deleting the prepared Manual node")?;
    wait(
        "manual-b and its pod gone",
        Duration::from_secs(120),
        || async {
            Ok(gns.get_opt("manual-b").await?.is_none()
                && pods.get_opt("manual-b-0").await?.is_none())
        },
    )
    .await?;
    verify(&store, &s3("garage-storage-1-0")?, &checksummed).await?;
    wait(
        "StorageDrainReady back to Idle",
        Duration::from_secs(60),
        || async {
            let c = clusters.get(NAME).await?;
            Ok(condition(&c, "StorageDrainReady") == Some("True".into())
                && c.status
                    .as_ref()
                    .and_then(|s| s.storage_drain.as_ref())
                    .is_none())
        },
    )
    .await?;
    println!("Manual node: DELETE refused before the proof, allowed after; objects read back");

    // 7. Deleting the cluster, with admission back in place, tears the whole store down
    //    without anyone touching a finalizer: every operator-made object goes, claims stay
    //    (the default retention policy is Retain).
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
    condition_in(c.status.as_ref()?.conditions.as_deref(), type_)
}

/// The status of condition `type_` among `conditions`.
fn condition_in(
    conditions: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]>,
    type_: &str,
) -> Option<String> {
    conditions?
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

/// What a drain that did not finish was waiting for.
async fn dump_drain(clusters: &Api<GarageCluster>, admin: &AdminClient) {
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
fn random_objects(n: usize, seed: u64) -> Vec<(String, Vec<u8>)> {
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

/// Reads every object through `endpoint` and compares its SHA-256 with what was written.
async fn verify(
    store: &garage_fixture::s3::Objects,
    endpoint: &str,
    objects: &[(String, Vec<u8>)],
) -> anyhow::Result<()> {
    use sha2::{Digest, Sha256};
    for (name, body) in objects {
        let got = store.get(endpoint, name).await?;
        ensure!(
            Sha256::digest(&got) == Sha256::digest(body),
            "object {name} read back different through {endpoint}"
        );
    }
    Ok(())
}

/// The e2e key's ID and secret.
async fn e2e_key(admin: &AdminClient) -> anyhow::Result<(String, String)> {
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

fn node_condition(n: &GarageNode, type_: &str) -> Option<String> {
    condition_in(n.status.as_ref()?.conditions.as_deref(), type_)
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
    let (key_id, secret) = e2e_key(admin).await?;
    let ip = sim.pod_ip(NS, "garage-storage-2-0").context("no pod ip")?;
    let objects = Objects::new("e2e", &key_id, &secret)?;
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
