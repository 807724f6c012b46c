//! `cargo xtask record-go --manager PATH --source DIR [--out DIR]`: records what the Go
//! operator leaves behind, as test data for taking over one of its clusters.
//!
//! It starts the local control plane and three simulated Nodes with no operator, installs the
//! Go operator's CRDs and admission webhooks from its source tree's `config/` (pointed at the
//! manager run on this machine, [`install`]), runs the manager with its webhooks on, and
//! declares a 3-member GarageCluster, a GarageBucket and a GarageKey granted on it. Once the
//! Go operator reports them all ready it is stopped, and every object it made in the
//! namespace is written to `--out` (default `reconciler/tests/e2e/go_takeover/`) as JSON, with
//! the Garage layout it applied.
//!
//! The Go operator reaches Garage through Service names (`<cluster>.<ns>.svc.cluster.local`);
//! the local cluster has no DNS, so while it runs those names are written to `/etc/hosts`,
//! pointing at a Ready member's address, and removed afterwards.

mod dump;
mod hosts;
mod install;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::local_env::LocalEnv;

const USAGE: &str = "usage: cargo xtask record-go --manager PATH --source DIR [--out DIR]

  --manager PATH  the Go operator's manager binary (docs/development.md says how to build it)
  --source DIR    the source tree it was built from (its config/ holds the CRDs and webhooks)
  --out DIR       where the recording goes (default reconciler/tests/e2e/go_takeover)";

/// The namespace the recorded cluster lives in; the takeover e2e uses the same one.
pub const NS: &str = "go-takeover";
/// The GarageCluster's name.
const CLUSTER: &str = "garage";
/// How long the Go operator has to bring everything to ready.
const READY_WITHIN: Duration = Duration::from_secs(600);
/// How long it runs on after everything is ready, so that the statuses it writes on later
/// passes are in the recording too.
const SETTLE: Duration = Duration::from_secs(30);

struct Args {
    manager: PathBuf,
    source: PathBuf,
    out: PathBuf,
}

fn parse(args: &[&str]) -> Result<Args> {
    let (mut manager, mut source) = (None, None);
    let mut out = crate::workspace_root().join("reconciler/tests/e2e/go_takeover");
    for pair in args.chunks(2) {
        let [flag, value] = pair else {
            bail!("{USAGE}")
        };
        let value = PathBuf::from(value);
        match *flag {
            "--manager" => manager = Some(value),
            "--source" => source = Some(value),
            "--out" => out = value,
            _ => bail!("{USAGE}"),
        }
    }
    Ok(Args {
        manager: manager.context(USAGE)?,
        source: source.context(USAGE)?,
        out,
    })
}

/// Entry point.
pub fn run(args: &[&str]) -> Result<()> {
    let args = parse(args)?;
    crate::tools::run(&[])?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(record(args))
}

async fn record(args: Args) -> Result<()> {
    let begin = Instant::now();
    let env = LocalEnv::start_bare("record-go", 3, None, begin).await?;
    let result = record_in(&env, &args).await;
    let cleared = hosts::clear();
    env.stop().await;
    result.and(cleared)
}

async fn record_in(env: &LocalEnv, args: &Args) -> Result<()> {
    let client = env.client().clone();
    let dir = env.cluster().dir();
    let installed = install::install(
        &client,
        &args.source,
        env.cluster().server(),
        env.cluster().ca_pem(),
        dir,
    )
    .await?;
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}}))?,
        )
        .await?;
    let log = dir.join("go-manager.log");
    let mut manager = tokio::process::Command::new(&args.manager)
        .args([
            "--leader-elect=false",
            "--unsafe-allow-no-leader-election",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=127.0.0.1:0",
        ])
        .arg(format!(
            "--webhook-cert-path={}",
            installed.cert_dir.display()
        ))
        .arg(format!(
            "--controller-service-account-name={}",
            install::SERVICE_ACCOUNT
        ))
        .env("KUBECONFIG", &installed.kubeconfig)
        .env("POD_NAMESPACE", install::OPERATOR_NS)
        .stdout(std::fs::File::create(&log)?)
        .stderr(std::fs::File::create(log.with_extension("err"))?)
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", args.manager.display()))?;
    eprintln!("==> Go operator running (log: {})", log.display());
    for object in manifests() {
        create(&client, object).await?;
    }
    let ready = wait_ready(&client).await;
    let _ = manager.start_kill();
    let _ = manager.wait().await;
    ready.with_context(|| format!("the Go operator's log: {}", log.display()))?;
    dump::write(&client, env, NS, &args.out).await?;
    eprintln!("==> recorded into {}", args.out.display());
    Ok(())
}

/// What a Go user declares: the admin token, a 3-member cluster on the local StorageClass, a
/// bucket, and a key granted on it.
fn manifests() -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "garage-admin", "namespace": NS},
            "stringData": {"admin-token": "recorded-admin-token-0123456789abcdef"},
        }),
        json!({
            "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
            "metadata": {"name": CLUSTER, "namespace": NS},
            "spec": {
                "image": "dxflrs/garage:v2.5.0",
                "zone": "zone-a",
                "replication": {"factor": 3},
                "admin": {"adminTokenSecretRef": {"name": "garage-admin", "key": "admin-token"}},
                "storage": {
                    "replicas": 3,
                    "metadata": {"size": "1Gi", "storageClassName": kubesim::STORAGE_CLASS},
                    "data": {"size": "2Gi", "storageClassName": kubesim::STORAGE_CLASS},
                },
            },
        }),
        json!({
            "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageBucket",
            "metadata": {"name": "photos", "namespace": NS},
            "spec": {"clusterRef": {"name": CLUSTER}},
        }),
        json!({
            "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageKey",
            "metadata": {"name": "photos-rw", "namespace": NS},
            "spec": {
                "clusterRef": {"name": CLUSTER},
                "bucketPermissions": [
                    {"bucketRef": {"name": "photos"}, "read": true, "write": true},
                ],
            },
        }),
    ]
}

fn resource(object: &Value) -> Result<ApiResource> {
    let api_version = object["apiVersion"].as_str().context("apiVersion")?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().context("kind")?;
    Ok(ApiResource::from_gvk(&GroupVersionKind::gvk(
        group, version, kind,
    )))
}

async fn create(client: &Client, object: Value) -> Result<()> {
    let resource = resource(&object)?;
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), NS, &resource);
    api.create(&PostParams::default(), &serde_json::from_value(object)?)
        .await?;
    Ok(())
}

/// Waits until the cluster, its members, the bucket and the key are ready, keeping the
/// Service names pointed at a Ready member meanwhile.
async fn wait_ready(client: &Client) -> Result<()> {
    let deadline = Instant::now() + READY_WITHIN;
    let mut ready_since: Option<Instant> = None;
    loop {
        hosts::point(client, NS, CLUSTER).await?;
        let ready = dump::all_ready(client, NS).await?;
        match (ready, ready_since) {
            (true, None) => {
                eprintln!("==> the Go operator reports everything ready");
                ready_since = Some(Instant::now());
            }
            (true, Some(since)) if since.elapsed() >= SETTLE => return Ok(()),
            (false, _) => ready_since = None,
            _ => {}
        }
        if Instant::now() > deadline {
            bail!("the Go operator did not bring the cluster, bucket and key to ready");
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
}
