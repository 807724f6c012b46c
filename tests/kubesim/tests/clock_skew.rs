//! A Node whose clock is an hour off, against a real control plane: what it
//! writes carries its own clock, and the real node lifecycle controller still
//! keeps it Ready, because it judges a Node by whether its heartbeats change,
//! not by the times they carry.
//!
//! `cargo test -p kubesim --test clock_skew`

// A test reports failure by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail, ensure};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Api;
use kube::api::PostParams;
use kubesim::{KubeSim, NodeSpec};
use localcluster::LocalCluster;
use localcluster::tools::Tool;
use serde_json::json;

const PLAIN: &str = "clock-plain";
const SKEWED: &str = "clock-skewed";
/// Behind rather than ahead: a reader that trusted the Node's clock would
/// find its Lease (renewed "an hour ago", 40 s duration) long expired and call
/// the Node dead at once, so staying Ready shows nobody does. A clock ahead
/// would only hide a dead Node for an hour, which this test could not see
/// without waiting that long.
const SKEW: i64 = -3600;
/// How far from exactly [`SKEW`] a difference may be: the two readings are
/// taken at different moments, and `Time` has whole seconds.
const TOLERANCE: i64 = 60;
/// How long the skewed Node must stay Ready beyond the node-monitor grace
/// period.
const READY_MARGIN: Duration = Duration::from_secs(30);
const NAMESPACE: &str = "default";

#[tokio::test]
async fn a_skewed_node_clock_shows_in_its_writes_and_does_not_make_it_not_ready()
-> anyhow::Result<()> {
    let options = localcluster::Options {
        name: "kubesim-clock-skew".into(),
        ..Default::default()
    };
    let grace = options.node_monitor_grace;
    let cluster = LocalCluster::start(options).await?;
    let client = cluster.client().await?;
    // No Garage image runs here; the path is never used.
    let sim_options = kubesim::Options::new(
        cluster.dir().join("kubesim"),
        Tool::Garage.path(),
        cluster.server(),
        cluster.ca_pem(),
    )
    .node(NodeSpec::new(PLAIN))
    .node(NodeSpec::new(SKEWED).clock_skew(SKEW));
    let sim = KubeSim::start(client.clone(), sim_options).await?;
    let registered = Instant::now();

    // The Leases.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-node-lease");
    let renew_time = |lease: Lease| -> anyhow::Result<Timestamp> {
        Ok(lease
            .spec
            .and_then(|s| s.renew_time)
            .context("Lease has no renewTime")?
            .0)
    };
    let plain = renew_time(leases.get(PLAIN).await?)?;
    let skewed = renew_time(leases.get(SKEWED).await?)?;
    ensure_skewed("Lease renewTime", skewed, plain)?;

    // A pod on each node.
    let pods: Api<Pod> = Api::namespaced(client.clone(), NAMESPACE);
    for node in [PLAIN, SKEWED] {
        pods.create(&PostParams::default(), &pod(node)).await?;
    }
    let plain_pod = running(&pods, PLAIN).await?;
    let skewed_pod = running(&pods, SKEWED).await?;
    let start_time = |pod: &Pod| -> anyhow::Result<Timestamp> {
        Ok(pod
            .status
            .as_ref()
            .and_then(|s| s.start_time.as_ref())
            .context("no startTime")?
            .0)
    };
    let created = |pod: &Pod| -> anyhow::Result<Timestamp> {
        Ok(pod
            .metadata
            .creation_timestamp
            .as_ref()
            .context("no creationTimestamp")?
            .0)
    };
    ensure_skewed(
        "pod startTime",
        start_time(&skewed_pod)?,
        start_time(&plain_pod)?,
    )?;
    // Against the API server's own clock, too.
    ensure_skewed(
        "pod startTime against its creationTimestamp",
        start_time(&skewed_pod)?,
        created(&skewed_pod)?,
    )?;
    let started_at = |pod: &Pod| -> anyhow::Result<Timestamp> {
        Ok(pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .and_then(|c| c.first())
            .and_then(|c| c.state.as_ref())
            .and_then(|s| s.running.as_ref())
            .and_then(|r| r.started_at.as_ref())
            .context("no running startedAt")?
            .0)
    };
    ensure_skewed(
        "container startedAt",
        started_at(&skewed_pod)?,
        started_at(&plain_pod)?,
    )?;

    // Ready throughout, well past the point where a controller that read
    // the Node's clock would have given up on it.
    let nodes: Api<Node> = Api::all(client.clone());
    let until = registered + grace + READY_MARGIN;
    let mut checks = 0;
    while Instant::now() < until {
        for name in [SKEWED, PLAIN] {
            let node = nodes.get(name).await?;
            ensure!(
                ready(&node).as_deref() == Some("True"),
                "{name} is not Ready {:.0}s after registration (grace period {}s): {:?}",
                registered.elapsed().as_secs_f64(),
                grace.as_secs(),
                node.status.and_then(|s| s.conditions),
            );
            let taints: Vec<String> = node
                .spec
                .and_then(|s| s.taints)
                .unwrap_or_default()
                .into_iter()
                .map(|t| t.key)
                .collect();
            ensure!(
                !taints
                    .iter()
                    .any(|k| k.starts_with("node.kubernetes.io/not-ready")
                        || k.starts_with("node.kubernetes.io/unreachable")),
                "{name} was tainted {taints:?}"
            );
        }
        checks += 1;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    println!(
        "{SKEWED} stayed Ready for {:.0}s ({checks} checks)",
        registered.elapsed().as_secs_f64()
    );

    // The controller is watching this Node: once it stops heartbeating, it
    // goes NotReady after the grace period, skew or not.
    sim.lose_node(SKEWED).await?;
    let lost = Instant::now();
    wait(
        "the lost skewed node NotReady",
        grace + Duration::from_secs(30),
        || {
            let nodes = nodes.clone();
            async move { Ok(ready(&nodes.get(SKEWED).await?).as_deref() != Some("True")) }
        },
    )
    .await?;
    println!(
        "{SKEWED} NotReady {:.0}s after its loss",
        lost.elapsed().as_secs_f64()
    );
    ensure!(
        ready(&nodes.get(PLAIN).await?).as_deref() == Some("True"),
        "{PLAIN} went NotReady too"
    );

    sim.shutdown().await;
    drop(cluster);
    Ok(())
}

/// Fails unless `skewed - reference` is [`SKEW`] within [`TOLERANCE`].
fn ensure_skewed(what: &str, skewed: Timestamp, reference: Timestamp) -> anyhow::Result<()> {
    let off = skewed.duration_since(reference);
    let want = SignedDuration::from_secs(SKEW);
    ensure!(
        (off - want).abs() <= SignedDuration::from_secs(TOLERANCE),
        "{what}: skewed {skewed}, reference {reference}: {off:?} apart, want {SKEW}s ± {TOLERANCE}s"
    );
    println!("{what}: {}s apart", off.as_secs());
    Ok(())
}

fn pod_name(node: &str) -> String {
    format!("on-{node}")
}

fn pod(node: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": pod_name(node), "namespace": NAMESPACE },
        "spec": {
            "nodeSelector": { "kubernetes.io/hostname": node },
            "containers": [{ "name": "main", "image": "example.invalid/placeholder:1" }],
        },
    }))
    .expect("pod manifest")
}

/// Waits for the pod on `node` to run its container.
async fn running(pods: &Api<Pod>, node: &str) -> anyhow::Result<Pod> {
    let name = pod_name(node);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pod = pods.get(&name).await?;
        let running = pod
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .all(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
            });
        if running {
            return Ok(pod);
        }
        if Instant::now() > deadline {
            bail!("{name} not Running within 30s: {:?}", pod.status);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn ready(node: &Node) -> Option<String> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone())
}

async fn wait<F, Fut>(what: &str, limit: Duration, mut check: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + limit;
    loop {
        match check().await {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(e) if Instant::now() > deadline => return Err(e.context(what.to_owned())),
            Err(_) => {}
        }
        if Instant::now() > deadline {
            bail!("{what} not reached within {}s", limit.as_secs());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
