//! `cargo xtask demo`: a local cluster a newcomer can poke at.
//!
//! Today it starts the control plane and three simulated Nodes in three
//! zones, installs the CRDs, prints how to point kubectl at the cluster and
//! keeps everything running until Ctrl-C. Installing the operator and a
//! Garage cluster joins once the webhook and reconciler land.

use anyhow::{Context, Result, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::{Patch, PatchParams};
use localcluster::tools::Tool;
use localcluster::{LocalCluster, Options};

pub fn run(args: &[&str]) -> Result<()> {
    if !args.is_empty() {
        bail!("usage: cargo xtask demo");
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(demo())
}

async fn demo() -> Result<()> {
    let cluster = LocalCluster::start(Options {
        name: "demo".into(),
        ..Options::default()
    })
    .await
    .context("starting the local control plane")?;
    println!(
        "control plane ready in {:.1}s",
        cluster.started_in().as_secs_f64()
    );
    let client = cluster.client().await?;

    let mut options = kubesim::Options::new(
        cluster.dir().join("kubesim"),
        Tool::Garage.require()?,
        cluster.server(),
        cluster.ca_pem(),
    );
    for zone in ["a", "b", "c"] {
        options = options
            .node(kubesim::NodeSpec::new(format!("demo-{zone}")).zone(format!("zone-{zone}")));
    }
    let sim = kubesim::KubeSim::start(client.clone(), options)
        .await
        .context("starting the simulated nodes")?;

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in shared_types::crds::all()? {
        let name = crd.metadata.name.clone().unwrap_or_default();
        crds.patch(
            &name,
            &PatchParams::apply("garage-operator-demo").force(),
            &Patch::Apply(&crd),
        )
        .await
        .with_context(|| format!("installing CRD {name}"))?;
    }

    let kubectl = Tool::Kubectl.require()?;
    println!(
        "\nA Kubernetes 1.36 control plane with 3 nodes (zones a, b, c) and the garage-operator CRDs \
         is running.\n\n  export KUBECONFIG={}\n  {} get nodes,crds\n\nLogs: {}\n\
         The operator itself is not installed yet (the webhook and reconciler are in progress).\n\
         Ctrl-C stops everything.",
        cluster.kubeconfig().display(),
        kubectl.display(),
        cluster.logs().display()
    );
    localcluster::shutdown_signal().await?;
    sim.shutdown().await;
    drop(cluster);
    Ok(())
}
