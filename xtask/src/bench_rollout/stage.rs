//! Where both sides run: a local control plane with the CRDs, kubesim with one Node per member
//! of the largest cluster (storage pods as real garage processes), and the `garage-reconciler`
//! binary as a child process that the floor stops and starts again.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client};
use kubesim::{KubeSim, NodeSpec};
use localcluster::tools::Tool;
use localcluster::{LocalCluster, Options};
use serde_json::json;

use crate::bench_reconciler::process::Reconciler;
use crate::bench_reconciler::{LEASE, NS, OPERATOR_NS};

/// The running parts; [`Stage::stop`] takes them down.
pub(crate) struct Stage {
    /// Admin client of the local control plane.
    pub client: Client,
    /// The operator while it runs.
    reconciler: Option<Reconciler>,
    /// How many reconciler processes were started, to name each one's log.
    started: usize,
    binary: PathBuf,
    env: Vec<(String, String)>,
    dir: PathBuf,
    sim: KubeSim,
    // Held so that dropping the stage stops the control plane last.
    cluster: LocalCluster,
}

impl Stage {
    /// Starts the control plane and kubesim with `nodes` Nodes, then the reconciler (`binary`
    /// with `env` added, its logs in `dir`).
    pub(crate) async fn start(
        nodes: usize,
        binary: &Path,
        env: &[(String, String)],
        dir: &Path,
    ) -> Result<Self> {
        let garage = Tool::Garage
            .require()
            .context("kubesim runs the pinned garage (cargo xtask tools builds it)")?;
        let cluster = LocalCluster::start(Options {
            name: "rollout-bench".into(),
            ..Options::default()
        })
        .await
        .context("starting the local cluster (cargo xtask tools builds its binaries)")?;
        let client = cluster.client().await?;
        crate::crds::install(&client).await?;
        for name in [NS, OPERATOR_NS] {
            Api::<Namespace>::all(client.clone())
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(json!({"metadata": {"name": name}}))?,
                )
                .await
                .with_context(|| format!("creating namespace {name}"))?;
        }
        let options = (1..=nodes).fold(
            kubesim::Options::new(
                cluster.dir().join("kubesim"),
                &garage,
                cluster.server(),
                cluster.ca_pem(),
            ),
            |options, i| options.node(NodeSpec::new(format!("n{i}"))),
        );
        let sim = KubeSim::start(client.clone(), options)
            .await
            .context("starting kubesim (needs CAP_NET_ADMIN)")?;
        let mut stage = Self {
            client,
            reconciler: None,
            started: 0,
            binary: binary.to_path_buf(),
            env: env.to_vec(),
            dir: dir.to_path_buf(),
            sim,
            cluster,
        };
        if let Err(e) = stage.start_reconciler().await {
            stage.stop().await;
            return Err(e);
        }
        Ok(stage)
    }

    /// Starts a reconciler process and waits until it leads; its log is
    /// `garage-reconciler-<n>.log`, n counting the processes started.
    pub(crate) async fn start_reconciler(&mut self) -> Result<()> {
        self.started += 1;
        let log = self
            .dir
            .join(format!("garage-reconciler-{}.log", self.started));
        let mut reconciler = Reconciler::start(
            &self.binary,
            &self.env,
            self.cluster.kubeconfig(),
            OPERATOR_NS,
            &log,
        )?;
        let took = reconciler.wait_leading(Duration::from_secs(60)).await?;
        println!(
            "    garage-reconciler pid {} leading after {:.2} s; log {}",
            reconciler.pid(),
            took.as_secs_f64(),
            log.display()
        );
        self.reconciler = Some(reconciler);
        Ok(())
    }

    /// Kills the reconciler and deletes its Lease, so that the next one leads at once.
    pub(crate) async fn stop_reconciler(&mut self) -> Result<()> {
        if let Some(reconciler) = self.reconciler.take() {
            reconciler.stop()?;
        }
        match Api::<Lease>::namespaced(self.client.clone(), OPERATOR_NS)
            .delete(LEASE, &DeleteParams::default())
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(e).context("deleting the reconciler's Lease"),
        }
    }

    /// The running reconciler.
    pub(crate) fn reconciler(&mut self) -> Result<&mut Reconciler> {
        self.reconciler
            .as_mut()
            .context("the reconciler is stopped")
    }

    /// Fails when a reconciler that should run has exited; nothing to check while stopped.
    pub(crate) fn check_alive(&mut self) -> Result<()> {
        self.reconciler
            .as_mut()
            .map_or(Ok(()), Reconciler::check_alive)
    }

    /// Kills the reconciler, then stops kubesim and the control plane.
    pub(crate) async fn stop(self) {
        drop(self.reconciler);
        self.sim.shutdown().await;
        drop(self.cluster);
    }
}
