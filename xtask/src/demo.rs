//! `cargo xtask demo [--keep]`: the whole operator on a laptop.
//!
//! Builds the two operator binaries, starts the local control plane and three simulated
//! Nodes in three zones, installs the Helm chart (kubesim runs the workspace's binaries for
//! the operator's image), creates a 3-node GarageCluster, waits for Ready, declares a
//! GarageBucket and a GarageKey granted on it, and round-trips an object through S3 with the
//! credentials the operator wrote into the key's Secret. It prints the endpoint and
//! credentials and exits 0; with `--keep` everything stays up until Ctrl-C.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use localcluster::tools::Tool;
use localcluster::wait_until;
use serde_json::json;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_key::GarageKey;

use crate::local_env::{self, LocalEnv};

const USAGE: &str = "usage: cargo xtask demo [--keep]

  --keep  leave the cluster, the operator and Garage running until Ctrl-C";

const NS: &str = "demo";
const NAME: &str = "garage";
const BUCKET: &str = "demo";
/// The Secret the demo key's credentials are published in.
const CREDENTIALS: &str = "demo-credentials";

pub fn run(args: &[&str]) -> Result<()> {
    let keep = match args {
        [] => false,
        ["--keep"] => true,
        _ => bail!("{USAGE}"),
    };
    let begin = Instant::now();
    // On a fresh machine the first run builds the pinned tools; later runs find them cached.
    crate::tools::run(&[])?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(demo(keep, begin))
}

async fn demo(keep: bool, begin: Instant) -> Result<()> {
    let bins = local_env::operator_binaries(true).await?;
    let env = LocalEnv::start("demo", 3, &bins, begin).await?;
    let (cluster, client) = (env.cluster(), env.client());
    let result = async {
        create_cluster(client).await?;
        println!(
            "==> GarageCluster {NS}/{NAME} Ready (3 nodes, replication factor 3) after {:.0}s",
            begin.elapsed().as_secs_f64()
        );
        round_trip(client, env.sim()).await
    }
    .await;
    let summary = match result {
        Ok(summary) => summary,
        Err(e) => {
            println!("logs: {}", cluster.logs().display());
            env.stop().await;
            return Err(e);
        }
    };
    let kubectl = Tool::Kubectl.require()?;
    println!(
        "\nS3 round trip done in {:.0}s from start.\n\n\
         S3 endpoint:   {}   (also {} and {}; region garage, path-style)\n\
         bucket:        {BUCKET}\n\
         access key:    {}\n\
         secret key:    {}\n\n\
         export KUBECONFIG={}\n\
         {} get garageclusters,garagenodes,garagebuckets,garagekeys,pods -A\n\n\
         Logs: {} (control plane), {} (pods)",
        begin.elapsed().as_secs_f64(),
        summary.endpoints[0],
        summary.endpoints[1],
        summary.endpoints[2],
        summary.access_key,
        summary.secret_key,
        cluster.kubeconfig().display(),
        kubectl.display(),
        cluster.logs().display(),
        env.pod_logs().display(),
    );
    if keep {
        println!("\nEverything keeps running; Ctrl-C stops it.");
        localcluster::shutdown_signal().await?;
    }
    env.stop().await;
    Ok(())
}

/// Creates the GarageCluster once admission answers (the webhook first writes its CA into its
/// registrations), then waits for Ready.
async fn create_cluster(client: &Client) -> Result<()> {
    Api::<Namespace>::all(client.clone())
        .patch(
            NS,
            &PatchParams::apply("garage-operator-demo"),
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}),
            ),
        )
        .await?;
    let clusters: Api<GarageCluster> = Api::namespaced(client.clone(), NS);
    let cluster: GarageCluster = serde_json::from_value(kubesim::three_node_garage_cluster(NAME))?;
    wait_until(
        "admission to accept the GarageCluster",
        Duration::from_secs(90),
        || async {
            match clusters.create(&PostParams::default(), &cluster).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(e)) if e.is_already_exists() => Ok(true),
                Err(e) => Err(e.into()),
            }
        },
    )
    .await?;
    wait_until(
        "GarageCluster Ready=True",
        Duration::from_secs(300),
        || async {
            let c = clusters.get(NAME).await?;
            Ok(c.status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True"))
        },
    )
    .await
}

/// What the demo prints at the end.
struct Summary {
    endpoints: Vec<String>,
    access_key: String,
    secret_key: String,
}

/// A GarageBucket and a GarageKey granted on it; the object is PUT through one pod's S3 port
/// and read back through another's with the credentials from the key's Secret.
async fn round_trip(client: &Client, sim: &kubesim::KubeSim) -> Result<Summary> {
    use garage_fixture::s3::Objects;
    let bucket: GarageBucket = serde_json::from_value(json!({
        "metadata": {"name": BUCKET, "namespace": NS},
        "spec": {"clusterRef": {"name": NAME}},
    }))?;
    let key: GarageKey = serde_json::from_value(json!({
        "metadata": {"name": "demo", "namespace": NS},
        "spec": {
            "clusterRef": {"name": NAME},
            "bucketPermissions": [{"bucketRef": {"name": BUCKET}, "read": true, "write": true, "owner": true}],
            "secretTemplate": {"name": CREDENTIALS},
        },
    }))?;
    let buckets: Api<GarageBucket> = Api::namespaced(client.clone(), NS);
    let keys: Api<GarageKey> = Api::namespaced(client.clone(), NS);
    buckets.create(&PostParams::default(), &bucket).await?;
    keys.create(&PostParams::default(), &key).await?;
    let ready = |c: Option<&Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>>| {
        c.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    };
    wait_until(
        "GarageBucket and GarageKey Ready=True",
        Duration::from_secs(120),
        || async {
            let b = buckets.get(BUCKET).await?;
            let k = keys.get("demo").await?;
            Ok(ready(b.status.as_ref().and_then(|s| s.conditions.as_ref()))
                && ready(k.status.as_ref().and_then(|s| s.conditions.as_ref())))
        },
    )
    .await?;
    println!(
        "==> GarageBucket {NS}/{BUCKET} and GarageKey {NS}/demo Ready; credentials in Secret {NS}/{CREDENTIALS}"
    );
    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get(CREDENTIALS)
        .await
        .context("reading the credentials Secret of the GarageKey")?;
    let field = |k: &str| -> Result<String> {
        let v = secret
            .data
            .as_ref()
            .and_then(|d| d.get(k))
            .with_context(|| format!("the credentials Secret has no {k}"))?;
        Ok(String::from_utf8(v.0.clone())?)
    };
    let (access_key, secret_key) = (field("access-key-id")?, field("secret-access-key")?);
    let ips: Vec<String> = (0..3)
        .map(|i| {
            sim.pod_ip(NS, &format!("{NAME}-storage-{i}-0"))
                .map(|ip| ip.to_string())
                .context("a storage pod has no address")
        })
        .collect::<Result<_>>()?;
    let endpoints: Vec<String> = ips.iter().map(|ip| format!("http://{ip}:3900")).collect();
    let body = b"hello from garage-operator\n".to_vec();
    Objects::new(BUCKET, &access_key, &secret_key)?
        .round_trip(
            &endpoints[0],
            &endpoints[1],
            &[("hello.txt".to_owned(), body)],
        )
        .await?;
    println!(
        "==> PUT s3://{BUCKET}/hello.txt through {} and read it back through {}",
        endpoints[0], endpoints[1]
    );
    Ok(Summary {
        endpoints,
        access_key,
        secret_key,
    })
}
