//! `cargo xtask demo [--keep]`: the whole operator on a laptop.
//!
//! Builds the two operator binaries, starts the local control plane and three simulated
//! Nodes in three zones, installs the Helm chart (kubesim runs the workspace's binaries for
//! the operator's image), creates a 3-node GarageCluster, waits for Ready, and round-trips an
//! object through S3 with a key and bucket made through Garage's Admin API. It prints the
//! endpoint and credentials and exits 0; with `--keep` everything stays up until Ctrl-C.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use garage_admin::{AdminClient, AdminToken, BucketPermissions, CreateBucket, KeySpec};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use localcluster::tools::Tool;
use localcluster::wait_until;
use serde_json::json;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use crate::local_env::{self, LocalEnv};

const USAGE: &str = "usage: cargo xtask demo [--keep]

  --keep  leave the cluster, the operator and Garage running until Ctrl-C";

const NS: &str = "demo";
const NAME: &str = "garage";
const BUCKET: &str = "demo";

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
         {} get garageclusters,garagenodes,pods -A\n\n\
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

/// A key and a bucket through the Admin API of one pod, an object PUT through one pod's S3
/// port and read back through another's.
async fn round_trip(client: &Client, sim: &kubesim::KubeSim) -> Result<Summary> {
    use garage_fixture::s3::Objects;
    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get(&format!("{NAME}-admin-token"))
        .await
        .context("reading the admin token Secret the operator made")?;
    let token = secret
        .data
        .as_ref()
        .and_then(|d| d.get("admin-token"))
        .context("the admin token Secret has no admin-token")?;
    let token = String::from_utf8(token.0.clone())?;
    let ips: Vec<String> = (0..3)
        .map(|i| {
            sim.pod_ip(NS, &format!("{NAME}-storage-{i}-0"))
                .map(|ip| ip.to_string())
                .context("a storage pod has no address")
        })
        .collect::<Result<_>>()?;
    let admin = AdminClient::new(&format!("http://{}:3903", ips[0]), &AdminToken::new(token))?;
    let key = admin
        .create_key(&KeySpec {
            name: Some("demo".into()),
            ..Default::default()
        })
        .await?;
    let bucket = admin
        .create_bucket(&CreateBucket {
            global_alias: Some(BUCKET.into()),
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
                owner: true,
            },
        )
        .await?;
    let secret_key = key
        .secret_access_key
        .clone()
        .context("Garage returned no secret key")?;
    let endpoints: Vec<String> = ips.iter().map(|ip| format!("http://{ip}:3900")).collect();
    let body = b"hello from garage-operator\n".to_vec();
    Objects::new(BUCKET, &key.access_key_id, &secret_key)?
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
        access_key: key.access_key_id,
        secret_key,
    })
}
