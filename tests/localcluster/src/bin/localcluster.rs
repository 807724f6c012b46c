//! `localcluster`: starts the local control plane, prints how to use it, and
//! stops everything on Ctrl-C.

use anyhow::Result;
use localcluster::{LocalCluster, Options};

#[tokio::main]
async fn main() -> Result<()> {
    let mut options = Options::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--name" => options.name = args.next().unwrap_or_default(),
            "-h" | "--help" => {
                println!(
                    "usage: localcluster [--name NAME]\nStarts etcd, kube-apiserver, kube-controller-manager and kube-scheduler on loopback until Ctrl-C."
                );
                return Ok(());
            }
            other => anyhow::bail!("unknown argument {other}; see --help"),
        }
    }
    let cluster = LocalCluster::start(options).await?;
    println!(
        "control plane ready in {:.1}s\n  server:     {}\n  kubeconfig: export KUBECONFIG={}\n  logs:       {}\nCtrl-C stops it.",
        cluster.started_in().as_secs_f64(),
        cluster.server(),
        cluster.kubeconfig().display(),
        cluster.logs().display()
    );
    localcluster::shutdown_signal().await?;
    drop(cluster);
    Ok(())
}
