//! Where the operator runs: a local control plane with the CRDs, kubesim with one Node per
//! zone running storage pods as real garage processes, and the `garage-reconciler` binary as
//! a child process, leading.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::PostParams;
use kube::{Api, Client};
use kubesim::{KubeSim, NodeSpec};
use localcluster::tools::Tool;
use localcluster::{LocalCluster, Options};
use serde_json::json;

use crate::bench_reconciler::process::Reconciler;
use crate::bench_reconciler::{NS, OPERATOR_NS};

/// One Kubernetes Node per zone, one storage member on each.
const ZONES: [&str; 4] = ["zone-a", "zone-b", "zone-c", "zone-d"];

/// The running parts; [`Stage::stop`] takes them down.
pub(crate) struct Stage {
    /// Admin client of the local control plane.
    pub client: Client,
    /// kubesim, for pod addresses.
    pub sim: KubeSim,
    /// The operator.
    pub reconciler: Reconciler,
    // Held so that dropping the stage stops the control plane last.
    cluster: LocalCluster,
}

impl Stage {
    /// Starts everything; the reconciler runs `binary` with `env` added and logs to `log`.
    pub(crate) async fn start(binary: &Path, env: &[(String, String)], log: &Path) -> Result<Self> {
        let garage = Tool::Garage
            .require()
            .context("kubesim runs the pinned garage (cargo xtask tools builds it)")?;
        let cluster = LocalCluster::start(Options {
            name: "drain-bench".into(),
            ..Options::default()
        })
        .await
        .context("starting the local cluster (cargo xtask tools builds its binaries)")?;
        let client = cluster.client().await?;
        crate::crds::install(&client).await?;
        let namespaces = Api::<Namespace>::all(client.clone());
        for name in [NS, OPERATOR_NS] {
            let namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
            namespaces
                .create(&PostParams::default(), &namespace)
                .await
                .with_context(|| format!("creating namespace {name}"))?;
        }
        let options = ZONES.iter().enumerate().fold(
            kubesim::Options::new(
                cluster.dir().join("kubesim"),
                &garage,
                cluster.server(),
                cluster.ca_pem(),
            ),
            |options, (i, zone)| options.node(NodeSpec::new(format!("n{}", i + 1)).zone(*zone)),
        );
        let sim = KubeSim::start(client.clone(), options)
            .await
            .context("starting kubesim (needs CAP_NET_ADMIN)")?;
        let started = async {
            let mut reconciler =
                Reconciler::start(binary, env, cluster.kubeconfig(), OPERATOR_NS, log)?;
            let took = reconciler.wait_leading(Duration::from_secs(60)).await?;
            println!(
                "garage-reconciler pid {} leading after {:.2} s; log {}",
                reconciler.pid(),
                took.as_secs_f64(),
                log.display()
            );
            anyhow::Ok(reconciler)
        }
        .await;
        match started {
            Ok(reconciler) => Ok(Self {
                client,
                sim,
                reconciler,
                cluster,
            }),
            Err(e) => {
                sim.shutdown().await;
                Err(e)
            }
        }
    }

    /// Kills the reconciler, then stops kubesim and the control plane.
    pub(crate) async fn stop(self) {
        drop(self.reconciler);
        self.sim.shutdown().await;
        drop(self.cluster);
    }
}
