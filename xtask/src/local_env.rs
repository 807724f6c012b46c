//! The environment `cargo xtask demo` and `cargo xtask up` run: the local control plane
//! (tests/localcluster), simulated Nodes spread over three zones (tests/kubesim) and the
//! operator installed with its Helm chart, kubesim running this workspace's debug builds for
//! the operator's image.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use kube::Client;
use kubesim::{KubeSim, NodeSpec};
use localcluster::tools::Tool;
use localcluster::{LocalCluster, Options};

use crate::workspace_root;

/// The operator's Helm release.
const RELEASE: &str = "garage-operator";
/// The namespace the operator is installed in.
pub const OPERATOR_NS: &str = "garage-operator";
/// Node `i` (from 0) is in `ZONES[i % 3]`.
const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];
/// The operator's two binaries, which kubesim runs for the chart's image.
const BINARIES: [&str; 2] = ["garage-webhook", "garage-reconciler"];

/// Where the debug builds of garage-webhook and garage-reconciler are, after building them
/// when `build` is set. Without `build` they must already be there, as `cargo test
/// --workspace` leaves them: building again from inside a test would resolve the features of
/// two packages instead of the workspace's and compile shared crates a second time.
pub async fn operator_binaries(build: bool) -> Result<PathBuf> {
    if build {
        eprintln!("==> building garage-webhook and garage-reconciler");
        let status =
            tokio::process::Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .args(["build", "-p", "webhook", "-p", "reconciler", "--bins"])
                .current_dir(workspace_root())
                .kill_on_drop(true)
                .status()
                .await
                .context("running cargo build")?;
        ensure!(status.success(), "building the operator binaries failed");
    }
    let dir = crate::target_dir().join("debug");
    for name in BINARIES {
        ensure!(
            dir.join(name).is_file(),
            "{} is missing: build it with `cargo build -p webhook -p reconciler --bins` \
             (`cargo test --workspace` builds it too)",
            dir.join(name).display()
        );
    }
    Ok(dir)
}

/// A running control plane, its simulated Nodes and the operator. Dropping it kills
/// everything at once; [`LocalEnv::stop`] stops it gracefully.
pub struct LocalEnv {
    // Declared (and so dropped) before the control plane: pods stop while the API is there.
    sim: KubeSim,
    cluster: LocalCluster,
    client: Client,
    nodes: Vec<String>,
}

impl LocalEnv {
    /// Starts the control plane named `name` (state in `target/localcluster/<name>`), `nodes`
    /// Nodes called `<name>-1`, `<name>-2`, ... in zones `zone-a`, `zone-b`, `zone-c` round
    /// robin, and installs the chart with `bins` (see [`operator_binaries`]) as the
    /// operator's image. Progress goes to stderr, timed from `begin`.
    pub async fn start(name: &str, nodes: usize, bins: &Path, begin: Instant) -> Result<Self> {
        let helm = Tool::Helm.require()?;
        let env = Self::start_bare(name, nodes, Some(bins), begin).await?;
        install_operator(&helm, env.cluster.kubeconfig())
            .await
            .with_context(|| {
                format!(
                    "installing the operator (logs: {} and {})",
                    env.cluster.logs().display(),
                    env.pod_logs().display()
                )
            })?;
        eprintln!(
            "==> operator installed (helm chart; webhook x2 + reconciler Ready) after {:.0}s",
            begin.elapsed().as_secs_f64()
        );
        Ok(env)
    }

    /// The control plane and its Nodes as [`LocalEnv::start`] starts them, without the
    /// operator: kubesim runs `bins`' binaries for the operator's image when given.
    pub async fn start_bare(
        name: &str,
        nodes: usize,
        bins: Option<&Path>,
        begin: Instant,
    ) -> Result<Self> {
        let garage = Tool::Garage.require()?;
        let cluster = LocalCluster::start(Options {
            name: name.into(),
            ..Options::default()
        })
        .await
        .context("starting the local control plane")?;
        let client = cluster.client().await?;
        let mut options = kubesim::Options::new(
            cluster.dir().join("kubesim"),
            garage,
            cluster.server(),
            cluster.ca_pem(),
        );
        if let Some(bins) = bins {
            for binary in BINARIES {
                options = options.workspace_image("garage-operator", bins.join(binary));
            }
        }
        let names: Vec<String> = (1..=nodes).map(|i| format!("{name}-{i}")).collect();
        for (i, node) in names.iter().enumerate() {
            options = options.node(NodeSpec::new(node).zone(ZONES[i % ZONES.len()]));
        }
        let sim = KubeSim::start(client.clone(), options)
            .await
            .with_context(|| {
                format!(
                    "starting the simulated nodes (control plane logs: {})",
                    cluster.logs().display()
                )
            })?;
        let env = LocalEnv {
            sim,
            cluster,
            client,
            nodes: names,
        };
        eprintln!(
            "==> control plane and {nodes} nodes up after {:.0}s",
            begin.elapsed().as_secs_f64()
        );
        Ok(env)
    }

    /// The control plane.
    pub fn cluster(&self) -> &LocalCluster {
        &self.cluster
    }

    /// The control plane, to check that its components still run.
    pub fn cluster_mut(&mut self) -> &mut LocalCluster {
        &mut self.cluster
    }

    /// The node agent, for pod addresses and node directories.
    pub fn sim(&self) -> &KubeSim {
        &self.sim
    }

    /// A client authenticated as cluster admin.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The Nodes' names, in zone order (`zone-a`, `zone-b`, `zone-c`, `zone-a`, ...).
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// Where kubesim keeps every pod's directory and logs.
    pub fn pod_logs(&self) -> PathBuf {
        self.cluster.dir().join("kubesim")
    }

    /// Stops the pods gracefully (SIGTERM, SIGKILL after 5s), then the control plane.
    pub async fn stop(self) {
        let LocalEnv { sim, cluster, .. } = self;
        sim.shutdown().await;
        drop(cluster);
    }
}

/// `helm install` of the chart; each operator pod listens on its own address because every
/// simulated pod shares this machine's network namespace.
async fn install_operator(helm: &Path, kubeconfig: &Path) -> Result<()> {
    let chart = workspace_root().join("charts/garage-operator");
    let output = tokio::process::Command::new(helm)
        .arg("install")
        .arg(RELEASE)
        .arg(&chart)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--namespace", OPERATOR_NS, "--create-namespace"])
        .args(["--set", "webhook.listen=$(POD_IP):9443"])
        .args(["--set", "metrics.bindAddress=$(POD_IP):8080"])
        .args(["--wait", "--timeout", "180s"])
        // Out of the terminal's process group, so Ctrl-C reaches only us and we stop helm
        // (by dropping this future) along with everything else.
        .process_group(0)
        .kill_on_drop(true)
        .output()
        .await
        .context("running helm install")?;
    ensure!(
        output.status.success(),
        "helm install failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}
