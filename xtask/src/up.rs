//! `cargo xtask up [--nodes N] [--name NAME] [--no-build]`: the local control plane, N
//! simulated Nodes and the operator, kept up until SIGINT or SIGTERM.
//!
//! Stdout carries only what a person or a test reads back, in this order:
//!
//! ```text
//! KUBECONFIG=<path>
//! NODE <node-name> <root-dir>      (one per Node; its hostPath /p is <root-dir>/p here)
//! READY
//! ```
//!
//! Progress and hints go to stderr. A signal at any point, before READY included, stops
//! everything started so far and exits 0.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use localcluster::tools::Tool;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

use crate::local_env::{self, LocalEnv};

const USAGE: &str = "usage: cargo xtask up [--nodes N] [--name NAME] [--no-build]

  --nodes N    simulated Nodes, in zones zone-a, zone-b, zone-c round robin (default 3)
  --name NAME  cluster name: state in target/localcluster/NAME, Nodes NAME-1..NAME-N (default up)
  --no-build   use the garage-webhook and garage-reconciler builds already in target/debug

prints KUBECONFIG=<path>, NODE <name> <root-dir> per Node, then READY; stops on SIGINT or SIGTERM";

/// How often a running control plane is checked for components that exited.
const CHECK_EVERY: Duration = Duration::from_secs(2);

#[derive(Debug)]
struct Args {
    nodes: usize,
    name: String,
    build: bool,
}

fn parse(args: &[&str]) -> Result<Args> {
    let mut parsed = Args {
        nodes: 3,
        name: "up".into(),
        build: true,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match *arg {
            "--nodes" => {
                let value = args.next().context(USAGE)?;
                parsed.nodes =
                    value.parse().ok().filter(|n| *n >= 1).with_context(|| {
                        format!("--nodes takes a count of 1 or more\n\n{USAGE}")
                    })?;
            }
            "--name" => parsed.name = (*args.next().context(USAGE)?).to_owned(),
            "--no-build" => parsed.build = false,
            _ => bail!("{USAGE}"),
        }
    }
    // The name becomes Node names, which are DNS subdomains, and a directory name.
    let name = &parsed.name;
    if name.is_empty()
        || name.len() > 40
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        || name.starts_with('-')
        || name.ends_with('-')
    {
        bail!("--name {name:?}: use 1 to 40 lowercase letters, digits and inner dashes\n\n{USAGE}");
    }
    Ok(parsed)
}

pub fn run(args: &[&str]) -> Result<()> {
    let args = parse(args)?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(up(args))
}

async fn up(args: Args) -> Result<()> {
    let begin = Instant::now();
    let mut stop = stop_requested()?;
    let started = tokio::select! {
        biased;
        _ = stop.wait_for(|asked| *asked) => None,
        started = start(&args, begin) => Some(started),
    };
    let mut env = match started {
        // Dropping the start future stopped whatever it had started.
        None => {
            eprintln!("==> stopped before READY");
            return Ok(());
        }
        Some(Err(e)) => {
            // Ctrl-C also reaches a cargo build in the terminal's process group, whose failure
            // can be seen before the signal is.
            if tokio::time::timeout(Duration::from_millis(500), stop.wait_for(|asked| *asked))
                .await
                .is_ok()
            {
                eprintln!("==> stopped before READY");
                return Ok(());
            }
            return Err(e);
        }
        Some(Ok(env)) => env,
    };
    println!(
        "KUBECONFIG={}",
        absolute(env.cluster().kubeconfig()).display()
    );
    for node in env.nodes() {
        let root = absolute(&env.sim().host_path(node, "/"));
        println!("NODE {node} {}", root.display());
    }
    println!("READY");
    eprintln!(
        "==> ready after {:.0}s; Ctrl-C or SIGTERM stops everything\n    \
         export KUBECONFIG={}\n    {} get nodes,pods -A\n    \
         logs: {} (control plane), {} (pods)",
        begin.elapsed().as_secs_f64(),
        absolute(env.cluster().kubeconfig()).display(),
        Tool::Kubectl.path().display(),
        env.cluster().logs().display(),
        env.pod_logs().display(),
    );
    let outcome = hold(&mut env, &mut stop).await;
    let stopping = Instant::now();
    env.stop().await;
    eprintln!("==> stopped in {:.1}s", stopping.elapsed().as_secs_f64());
    outcome
}

async fn start(args: &Args, begin: Instant) -> Result<LocalEnv> {
    // Before a build that can take minutes and would be wasted without them.
    for tool in Tool::ALL {
        tool.require()?;
    }
    let bins = local_env::operator_binaries(args.build).await?;
    LocalEnv::start(&args.name, args.nodes, &bins, begin).await
}

/// Until a stop is asked for (Ok) or a control-plane component exits (the error).
async fn hold(env: &mut LocalEnv, stop: &mut watch::Receiver<bool>) -> Result<()> {
    loop {
        tokio::select! {
            _ = stop.wait_for(|asked| *asked) => return Ok(()),
            _ = tokio::time::sleep(CHECK_EVERY) => {
                env.cluster_mut()
                    .check_running()
                    .context("the control plane failed; stopping everything")?;
            }
        }
    }
}

/// Turns true on the first SIGINT, SIGTERM or SIGHUP. The handlers are installed before this
/// returns, so a signal during start-up is seen too instead of killing the process and
/// leaving its children behind.
fn stop_requested() -> Result<watch::Receiver<bool>> {
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut hangup = signal(SignalKind::hangup())?;
    let (asked, receiver) = watch::channel(false);
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
        }
        asked.send_replace(true);
    });
    Ok(receiver)
}

/// `path` from the filesystem root, for readers in other working directories.
fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_flags() {
        let a = parse(&[]).unwrap();
        assert_eq!((a.nodes, a.name.as_str(), a.build), (3, "up", true));
        let a = parse(&["--nodes", "5", "--name", "e2e-2", "--no-build"]).unwrap();
        assert_eq!((a.nodes, a.name.as_str(), a.build), (5, "e2e-2", false));
    }

    #[test]
    fn refuses_bad_input() {
        for args in [
            &["--nodes", "0"][..],
            &["--nodes"],
            &["--nodes", "x"],
            &["--name", "Up"],
            &["--name", "-up"],
            &["--name", "a/b"],
            &["--keep"],
        ] {
            assert!(parse(args).is_err(), "{args:?} was accepted");
        }
    }
}
