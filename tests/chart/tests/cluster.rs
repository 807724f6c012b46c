//! The chart against a real control plane (tests/localcluster) with kubesim running the
//! workspace's binaries for the operator's image and real garage for Garage pods:
//!
//! 1. every object of every value combination passes a server-side dry-run;
//! 2. `helm install` in self-managed mode over the six CRDs as uninstalling the Go operator's
//!    release leaves them (kept, annotated as that release's): refused without
//!    `--take-ownership`, done with it; both operator Deployments become Ready, the API
//!    server reaches the webhook through its Service (an invalid GarageCluster is rejected with
//!    the rule's message), and a valid GarageCluster reaches Ready with real Garage;
//! 3. `helm uninstall` leaves no operator object behind; the CRDs and the GarageCluster with
//!    its claims stay.
//!
//! The operator binaries are the debug builds next to this test (`cargo test --workspace`
//! builds them); run `cargo build -p webhook -p reconciler --bins` first when running this
//! test alone.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use chart_tests::{NAMESPACE, RELEASE, WATCHED, combos, run_helm, template};
use k8s_openapi::api::core::v1::{Namespace, PersistentVolumeClaim};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope};
use kube::{Api, Client, ResourceExt};
use kubesim::{KubeSim, NodeSpec};
use localcluster::tools::Tool;
use localcluster::wait_until as wait;
use localcluster::{LocalCluster, Options};
use serde_json::{Value, json};

const MANAGER: &str = "chart-test";
const STORAGE_NS: &str = "storage";
const INSTANCE: &str = "app.kubernetes.io/instance";

fn main() -> ExitCode {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run()) {
        Ok(()) => {
            println!("chart cluster test passed");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("chart cluster test FAILED: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace binary `name` next to this test executable.
fn workspace_binary(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .context("locating the target directory")?;
    let path = profile_dir.join(name);
    ensure!(
        path.exists(),
        "{} is missing: build it with `cargo build -p webhook -p reconciler --bins` \
         (cargo test --workspace builds it)",
        path.display()
    );
    Ok(path)
}

async fn run() -> anyhow::Result<()> {
    let garage = Tool::Garage.require()?;
    let helm = Tool::Helm.require()?;
    let webhook = workspace_binary("garage-webhook")?;
    let reconciler = workspace_binary("garage-reconciler")?;
    let begin = Instant::now();
    let cluster = LocalCluster::start(Options {
        name: "chart".into(),
        ..Options::default()
    })
    .await?;
    let client = cluster.client().await?;
    let mut options = kubesim::Options::new(
        cluster.dir().join("kubesim"),
        garage,
        cluster.server(),
        cluster.ca_pem(),
    )
    .workspace_image("garage-operator", webhook)
    .workspace_image("garage-operator", reconciler);
    for (n, zone) in [("n1", "zone-a"), ("n2", "zone-b"), ("n3", "zone-c")] {
        options = options.node(NodeSpec::new(n).zone(zone));
    }
    let sim = KubeSim::start(client.clone(), options).await?;
    println!(
        "control plane and 3 nodes up after {:.1}s",
        begin.elapsed().as_secs_f64()
    );
    let result = scenario(&client, &cluster, &helm).await;
    if result.is_err() {
        println!(
            "logs: {} and {}",
            cluster.logs().display(),
            cluster.dir().join("kubesim").display()
        );
    }
    sim.shutdown().await;
    drop(cluster);
    result
}

async fn scenario(
    client: &Client,
    cluster: &LocalCluster,
    helm: &std::path::Path,
) -> anyhow::Result<()> {
    for ns in [NAMESPACE, STORAGE_NS].into_iter().chain(WATCHED) {
        namespace(client, ns).await?;
    }
    foreign_crds(client).await?;

    // 1. Every rendered object of every combination passes a server-side dry-run.
    let discovery = Discovery::new(client.clone()).run().await?;
    let t = Instant::now();
    let mut count = 0;
    for combo in combos() {
        for object in template(&combo.args)? {
            dry_run(client, &discovery, &object)
                .await
                .with_context(|| format!("combination {}", combo.name))?;
            count += 1;
        }
    }
    println!(
        "{count} rendered objects passed server-side dry-run in {:.1}s",
        t.elapsed().as_secs_f64()
    );

    // 2. helm install, self-managed certificates. Two webhook replicas share one host here,
    //    so each listens on its own pod address.
    left_by_go_release(client).await?;
    let kubeconfig = cluster.kubeconfig().to_string_lossy().into_owned();
    let t = Instant::now();
    // The release over the CRDs another release left: refused as Helm refuses any object
    // another release owns, then done with --take-ownership.
    let release = vec![
        RELEASE.to_owned(),
        chart_tests::chart().to_string_lossy().into_owned(),
        "--kubeconfig".into(),
        kubeconfig.clone(),
        "--namespace".into(),
        NAMESPACE.into(),
    ];
    match run_helm(&[vec!["install".to_owned()], release.clone()].concat()) {
        Ok(out) => bail!(
            "helm install over the Go release's CRDs succeeded without --take-ownership: {out}"
        ),
        Err(e) => ensure!(
            format!("{e:#}").contains("invalid ownership metadata"),
            "helm install over the Go release's CRDs failed otherwise: {e:#}"
        ),
    }
    let installed = run_helm(
        &[
            vec!["install".to_owned(), "--take-ownership".into()],
            release,
            [
                "--set",
                "webhook.listen=$(POD_IP):9443",
                "--set",
                "metrics.bindAddress=$(POD_IP):8080",
                "--wait",
                "--timeout",
                "180s",
            ]
            .map(String::from)
            .to_vec(),
        ]
        .concat(),
    )
    .with_context(|| format!("helm install with {}", helm.display()))?;
    ensure!(installed.contains("STATUS: deployed"), "{installed}");
    ensure!(
        installed.contains("NOTES:") && installed.contains("self-managed"),
        "{installed}"
    );
    println!(
        "helm install --wait: both Deployments Ready after {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let deployments = dynamic(client, "apps", "v1", "Deployment", Some(NAMESPACE));
    for d in deployments.list(&ListParams::default()).await? {
        let ready = d.data["status"]["readyReplicas"].as_i64().unwrap_or(0);
        let wanted = d.data["spec"]["replicas"].as_i64().unwrap_or(1);
        ensure!(ready == wanted, "{}: {ready}/{wanted} ready", d.name_any());
    }

    // The API server calls the webhook through its Service once the webhook has written its
    // CA into the configurations.
    let t = Instant::now();
    wait(
        "the admission chain to accept a valid GarageCluster",
        Duration::from_secs(90),
        || async {
            create(client, &garage_cluster("probe"), true)
                .await
                .map(|_| true)
        },
    )
    .await?;
    println!(
        "webhook reachable through its Service after {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let mut invalid = garage_cluster("invalid");
    invalid["spec"]["connectTo"] = json!({"clusterRef": {"name": "elsewhere"}});
    let message = match create(client, &invalid, false).await {
        Ok(_) => bail!("a GarageCluster with storage and connectTo was accepted"),
        Err(e) => e.to_string(),
    };
    ensure!(
        (message.contains("[GC-C14]") || message.contains("[G1-C14]"))
            && message.contains("spec.connectTo"),
        "unexpected rejection: {message}"
    );
    println!("invalid GarageCluster rejected: {message}");

    // A valid cluster reaches Ready with real Garage, reconciled by the installed reconciler.
    let t = Instant::now();
    create(client, &garage_cluster("garage"), false).await?;
    let clusters = dynamic(
        client,
        "garage.rajsingh.info",
        "v1beta2",
        "GarageCluster",
        Some(STORAGE_NS),
    );
    wait(
        "GarageCluster Ready=True",
        Duration::from_secs(240),
        || async {
            let c = clusters.get("garage").await?;
            Ok(c.data["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True"))
        },
    )
    .await?;
    let nodes = dynamic(
        client,
        "garage.rajsingh.info",
        "v1beta1",
        "GarageNode",
        Some(STORAGE_NS),
    );
    let identified = nodes
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|n| {
            n.data["status"]["nodeId"]
                .as_str()
                .is_some_and(|id| !id.is_empty())
        })
        .count();
    ensure!(
        identified == 3,
        "Ready with {identified} GarageNodes carrying a Garage node ID, expected 3"
    );
    println!(
        "GarageCluster Ready after {:.1}s (3 GarageNodes with Garage node IDs)",
        t.elapsed().as_secs_f64()
    );

    // A reconciler pod stopped gracefully hands its Lease over instead of letting it expire.
    let pods = dynamic(client, "", "v1", "Pod", Some(NAMESPACE));
    let selector = ListParams::default().labels("app.kubernetes.io/component=reconciler");
    let old = pods
        .list(&selector)
        .await?
        .items
        .into_iter()
        .next()
        .context("no reconciler pod")?
        .name_any();
    let leases = dynamic(
        client,
        "coordination.k8s.io",
        "v1",
        "Lease",
        Some(NAMESPACE),
    );
    let lease_name = format!("{RELEASE}-reconciler");
    let holder = |l: &DynamicObject| l.data["spec"]["holderIdentity"].as_str().map(str::to_owned);
    ensure!(
        holder(&leases.get(&lease_name).await?) == Some(old.clone()),
        "the Lease is not held by the running reconciler {old}"
    );
    pods.delete(&old, &Default::default()).await?;
    wait(
        "the old reconciler pod to stop",
        Duration::from_secs(60),
        || async { Ok(pods.get_opt(&old).await?.is_none()) },
    )
    .await?;
    let after = holder(&leases.get(&lease_name).await?);
    ensure!(
        after.as_deref() != Some(old.as_str()),
        "the stopped reconciler {old} still holds the Lease"
    );
    wait(
        "a new reconciler to lead",
        Duration::from_secs(60),
        || async { Ok(holder(&leases.get(&lease_name).await?).is_some_and(|h| h != old)) },
    )
    .await?;
    println!(
        "reconciler pod replaced: Lease released by {old} (holder then {after:?}) and taken over"
    );

    // 3. helm uninstall removes every operator object; CRDs and data stay.
    run_helm(&[
        "uninstall".into(),
        RELEASE.into(),
        "--kubeconfig".into(),
        kubeconfig,
        "--namespace".into(),
        NAMESPACE.into(),
        "--wait".into(),
        "--timeout".into(),
        "120s".into(),
    ])?;
    wait(
        "the operator's pods to be gone",
        Duration::from_secs(60),
        || async {
            let pods = dynamic(client, "", "v1", "Pod", Some(NAMESPACE));
            Ok(pods.list(&ListParams::default()).await?.items.is_empty())
        },
    )
    .await?;
    let left = leftovers(client, &discovery).await?;
    ensure!(
        left.is_empty(),
        "helm uninstall left operator objects behind: {left:?}"
    );
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let kept = crds
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|c| c.spec.group == "garage.rajsingh.info")
        .count();
    ensure!(kept == 6, "expected the 6 CRDs to be kept, found {kept}");
    clusters
        .get("garage")
        .await
        .context("the GarageCluster is gone after uninstall")?;
    let claims = Api::<PersistentVolumeClaim>::namespaced(client.clone(), STORAGE_NS)
        .list(&ListParams::default())
        .await?
        .items
        .len();
    ensure!(
        claims >= 6,
        "expected the cluster's claims to stay, found {claims}"
    );
    println!(
        "helm uninstall: no operator object left; 6 CRDs, the GarageCluster and {claims} claims kept"
    );
    Ok(())
}

fn garage_cluster(name: &str) -> Value {
    let mut cluster = kubesim::three_node_garage_cluster(name);
    cluster["metadata"]["namespace"] = json!(STORAGE_NS);
    cluster
}

async fn namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    api.patch(
        name,
        &PatchParams::apply(MANAGER),
        &Patch::Apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})),
    )
    .await?;
    Ok(())
}

/// cert-manager's Issuer and Certificate and Prometheus Operator's ServiceMonitor, without
/// their schemas: enough for the API server to accept the chart's objects of those kinds.
async fn foreign_crds(client: &Client) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    for (group, kind, plural) in [
        ("cert-manager.io", "Issuer", "issuers"),
        ("cert-manager.io", "Certificate", "certificates"),
        ("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
    ] {
        let name = format!("{plural}.{group}");
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase()},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                }],
            },
        });
        api.patch(&name, &PatchParams::apply(MANAGER), &Patch::Apply(crd))
            .await?;
        names.push(name);
    }
    established(&api, names).await
}

/// The chart's six CRDs as `helm uninstall` of the Go operator's release leaves them: kept
/// (`helm.sh/resource-policy: keep`), still annotated as that release's, their conversion
/// webhook pointing at its Service, which is gone.
async fn left_by_go_release(client: &Client) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let dir = chart_tests::chart().join("files/crds");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir)? {
        let path = entry?.path();
        let mut crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path)?)?;
        crd["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "Helm"});
        crd["metadata"]["annotations"] = json!({
            "meta.helm.sh/release-name": "garage-operator",
            "meta.helm.sh/release-namespace": "garage-operator-system",
            "helm.sh/resource-policy": "keep",
        });
        if crd["spec"]["conversion"]["strategy"] == "Webhook" {
            crd["spec"]["conversion"]["webhook"]["clientConfig"] = json!({"service": {
                "name": "garage-operator-webhook-service",
                "namespace": "garage-operator-system",
                "path": "/convert",
            }});
        }
        let crd: CustomResourceDefinition =
            serde_json::from_value(crd).with_context(|| format!("{}", path.display()))?;
        names.push(crd.name_any());
        api.create(&PostParams::default(), &crd).await?;
    }
    // Served before anything is dry-run against them.
    established(&api, names).await
}

/// Waits until each CRD of `names` is Established.
async fn established(
    api: &Api<CustomResourceDefinition>,
    names: Vec<String>,
) -> anyhow::Result<()> {
    for name in names {
        wait("CRD Established", Duration::from_secs(30), || async {
            let crd = api.get(&name).await?;
            Ok(crd.status.and_then(|s| s.conditions).is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            }))
        })
        .await?;
    }
    Ok(())
}

fn dynamic(
    client: &Client,
    group: &str,
    version: &str,
    kind: &str,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let resource = kube::core::ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// Server-side apply of `object` with dryRun=All.
async fn dry_run(client: &Client, discovery: &Discovery, object: &Value) -> anyhow::Result<()> {
    let api_version = object["apiVersion"].as_str().context("no apiVersion")?;
    let kind = object["kind"].as_str().context("no kind")?;
    let name = object["metadata"]["name"].as_str().context("no name")?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let (resource, caps) = discovery
        .resolve_gvk(&GroupVersionKind::gvk(group, version, kind))
        .with_context(|| format!("the API server does not serve {api_version} {kind}"))?;
    let api: Api<DynamicObject> = match caps.scope {
        Scope::Cluster => Api::all_with(client.clone(), &resource),
        Scope::Namespaced => {
            let ns = object["metadata"]["namespace"]
                .as_str()
                .unwrap_or(NAMESPACE);
            Api::namespaced_with(client.clone(), ns, &resource)
        }
    };
    api.patch(
        name,
        &PatchParams::apply(MANAGER).dry_run().force(),
        &Patch::Apply(object),
    )
    .await
    .with_context(|| format!("dry-run of {kind} {name}"))?;
    Ok(())
}

async fn create(client: &Client, object: &Value, dry_run: bool) -> anyhow::Result<DynamicObject> {
    let api = dynamic(
        client,
        "garage.rajsingh.info",
        "v1beta2",
        "GarageCluster",
        Some(STORAGE_NS),
    );
    let typed: DynamicObject = serde_json::from_value(object.clone())?;
    let params = PostParams {
        dry_run,
        field_manager: None,
    };
    Ok(api.create(&params, &typed).await?)
}

/// Every object still labelled as this release's, in every namespace, except the CRDs the
/// chart keeps on purpose; plus anything at all left in the release namespace besides what
/// Kubernetes puts in every namespace.
async fn leftovers(client: &Client, discovery: &Discovery) -> anyhow::Result<Vec<String>> {
    let mut left = Vec::new();
    let selector = ListParams::default().labels(&format!("{INSTANCE}={RELEASE}"));
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            if !caps.supports_operation(kube::discovery::verbs::LIST)
                || resource.kind == "CustomResourceDefinition"
                || resource.kind == "Event"
            {
                continue;
            }
            let all: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            for o in all.list(&selector).await?.items {
                left.push(format!(
                    "{} {}/{}",
                    resource.kind,
                    o.namespace().unwrap_or_default(),
                    o.name_any()
                ));
            }
            if caps.scope == Scope::Namespaced {
                let in_release: Api<DynamicObject> =
                    Api::namespaced_with(client.clone(), NAMESPACE, &resource);
                for o in in_release.list(&ListParams::default()).await?.items {
                    let name = o.name_any();
                    let expected = (resource.kind == "ConfigMap" && name == "kube-root-ca.crt")
                        || (resource.kind == "ServiceAccount" && name == "default");
                    let line = format!("{} {NAMESPACE}/{name}", resource.kind);
                    if !expected && !left.contains(&line) {
                        left.push(line);
                    }
                }
            }
        }
    }
    Ok(left)
}
