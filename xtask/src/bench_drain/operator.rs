//! One operator run: a four-member GarageCluster is created and brought to Ready, the
//! objects are written, `spec.storage.replicas` is patched to 3 and the drain of the fourth
//! member is followed until its GarageNode and pod are gone; then every object is read back
//! through a surviving pod and the cluster is deleted, so the next run starts from nothing.

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result, bail};
use garage_admin::{AdminClient, AdminToken};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use serde_json::json;
use shared_types::garage_cluster::common::ConsistencyMode;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::label::LABEL_CLUSTER;

use super::milestones::{Milestones, Poll, STEPS};
use super::stage::Stage;
use super::{MEMBERS, objects};
use crate::bench_reconciler::{NS, process, secs, timeline};

/// How often the bench reads the cluster, the node and the pods while the drain runs.
const POLL: Duration = Duration::from_millis(100);
const READY_TIMEOUT: Duration = Duration::from_secs(300);
/// Generous: the operator's own waits take over twenty minutes when Garage's delayed work
/// restarts the quiet window.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2700);
const DELETE_TIMEOUT: Duration = Duration::from_secs(180);
/// How long the reconciler holds a role removal after a member's pod started (reconciler
/// `controller::cluster::decide::RECONNECT_GRACE`). A fresh cluster is inside it; a cluster
/// that has run for a while, the drain this bench stands for, is not.
const RECONNECT_GRACE: Duration = Duration::from_secs(150);

/// Creates cluster `name`, drains its fourth member and returns what was seen, from the patch.
pub(crate) async fn run_once(
    stage: &mut Stage,
    name: &str,
    objects: &[(String, Vec<u8>)],
) -> Result<Milestones> {
    let clusters: Api<GarageCluster> = Api::namespaced(stage.client.clone(), NS);
    let began = Instant::now();
    clusters
        .create(&PostParams::default(), &manifest(name)?)
        .await
        .with_context(|| format!("creating GarageCluster {NS}/{name}"))?;
    wait_ready(stage, &clusters, name).await?;
    println!(
        "    {name}: Ready {:.2} s after the create",
        secs(began.elapsed())
    );
    let admin = admin_client(stage, name).await?;
    let store = objects::bucket(&admin).await?;
    let survivor = endpoint(stage, name, 0, 3900)?;
    let writing = Instant::now();
    objects::write(&store, &survivor, objects).await?;
    println!(
        "    {} objects written through {name}-storage-0-0 in {:.2} s",
        objects.len(),
        secs(writing.elapsed())
    );
    let waited = wait_out_grace(stage, name).await?;
    println!(
        "    waited {:.0} s more, until every pod had run {} s (the reconciler holds a role \
         removal that long after a member's pod starts)",
        secs(waited),
        RECONNECT_GRACE.as_secs()
    );

    let initial = clusters
        .get(name)
        .await?
        .status
        .and_then(|s| s.layout_version);
    let before = stage.reconciler.counters().await?;
    let patched_at = SystemTime::now();
    let patched = Instant::now();
    clusters
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"storage": {"replicas": MEMBERS - 1}}})),
        )
        .await
        .context("patching spec.storage.replicas to 3")?;
    let followed = follow(stage, &clusters, name, Milestones::new(initial), patched).await?;
    let counters = before.since(&stage.reconciler.counters().await?);
    let milestones = followed.milestones;
    print_timeline(stage.reconciler.log(), name, patched_at, &milestones)?;
    println!(
        "      reconciler from the patch on: {counters}; garage container restarts: {}",
        followed.restarts
    );
    if followed.restarts > 0 {
        println!(
            "      (garage processes restarted during the drain: Garage's worker IDs and \
             counters began again and the proof with them, so this run's figures are disturbed)"
        );
    }
    if let Some(stall) = followed.stall {
        bail!("{stall}");
    }

    objects::verify(&store, &survivor, objects)
        .await
        .context("the operator's drain lost data")?;
    println!("    every object read back identical through {name}-storage-0-0");
    delete(stage, &clusters, name).await?;
    Ok(milestones)
}

/// The bench reconciler's manifest (Auto layout, factor 3, local-sim claims) with four
/// members and the consistency mode a prepared drain requires spelled out.
fn manifest(name: &str) -> Result<GarageCluster> {
    let mut cluster = crate::bench_reconciler::manifest(name, false)?;
    cluster
        .spec
        .storage
        .as_mut()
        .context("the bench manifest has no storage section")?
        .replicas = Some(i32::try_from(MEMBERS)?);
    cluster
        .spec
        .replication
        .get_or_insert_default()
        .consistency_mode = Some(ConsistencyMode::Consistent);
    Ok(cluster)
}

async fn wait_ready(stage: &mut Stage, clusters: &Api<GarageCluster>, name: &str) -> Result<()> {
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        stage.reconciler.check_alive()?;
        let cluster = clusters.get(name).await?;
        if timeline::is_ready(&cluster) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{NS}/{name} was not Ready {} s after its creation; status {}",
                READY_TIMEOUT.as_secs(),
                serde_json::to_string(&cluster.status)?
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// `http://<pod address>:<port>` of member `ordinal`'s pod.
fn endpoint(stage: &Stage, name: &str, ordinal: usize, port: u16) -> Result<String> {
    let pod = format!("{name}-storage-{ordinal}-0");
    let ip = stage
        .sim
        .pod_ip(NS, &pod)
        .with_context(|| format!("kubesim knows no address of pod {pod}"))?;
    Ok(format!("http://{ip}:{port}"))
}

/// The Admin API of member 0, with the token the operator generated for the cluster.
async fn admin_client(stage: &Stage, name: &str) -> Result<AdminClient> {
    let secret_name = format!("{name}-admin-token");
    let secret = Api::<Secret>::namespaced(stage.client.clone(), NS)
        .get(&secret_name)
        .await
        .with_context(|| format!("reading Secret {secret_name}"))?;
    let token = secret
        .data
        .as_ref()
        .and_then(|d| d.get("admin-token"))
        .with_context(|| format!("Secret {secret_name} has no admin-token"))?;
    let token = String::from_utf8(token.0.clone())?;
    Ok(AdminClient::new(
        &endpoint(stage, name, 0, 3903)?,
        &AdminToken::new(token),
    )?)
}

/// Sleeps until every pod of the cluster started [`RECONNECT_GRACE`] ago, a second more for
/// the second-precise start times; returns how long it slept.
async fn wait_out_grace(stage: &Stage, name: &str) -> Result<Duration> {
    let members = ListParams::default().labels(&format!("{LABEL_CLUSTER}={name}"));
    let newest = Api::<Pod>::namespaced(stage.client.clone(), NS)
        .list(&members)
        .await?
        .items
        .iter()
        .filter_map(|p| p.status.as_ref()?.start_time.as_ref())
        .map(|t| SystemTime::from(t.0))
        .max()
        .with_context(|| format!("no pod of {NS}/{name} reports a start time"))?;
    let age = SystemTime::now()
        .duration_since(newest)
        .unwrap_or(Duration::ZERO);
    let left = (RECONNECT_GRACE + Duration::from_secs(1)).saturating_sub(age);
    tokio::time::sleep(left).await;
    Ok(left)
}

/// What [`follow`] saw.
struct Followed {
    milestones: Milestones,
    /// Container restarts of the cluster's pods, the most seen at once.
    restarts: i32,
    /// Why the drain did not finish in time, when it did not.
    stall: Option<String>,
}

/// Polls every [`POLL`] until the drained node and its pod are gone, or [`DRAIN_TIMEOUT`].
async fn follow(
    stage: &mut Stage,
    clusters: &Api<GarageCluster>,
    name: &str,
    mut milestones: Milestones,
    patched: Instant,
) -> Result<Followed> {
    let nodes: Api<GarageNode> = Api::namespaced(stage.client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(stage.client.clone(), NS);
    let members = ListParams::default().labels(&format!("{LABEL_CLUSTER}={name}"));
    let node_name = format!("{name}-storage-{}", MEMBERS - 1);
    let pod_name = format!("{node_name}-0");
    let mut restarts = 0;
    loop {
        stage.reconciler.check_alive()?;
        let cluster = clusters.get(name).await?;
        let node = nodes.get_opt(&node_name).await?;
        let listed = pods.list(&members).await?.items;
        // Stamped after the reads, so a step counts against the operator, never for it.
        let elapsed = patched.elapsed();
        restarts = restarts.max(restart_count(&listed));
        milestones.observe(
            elapsed,
            &Poll {
                cluster: &cluster,
                node: node.as_ref(),
                pod: listed.iter().any(|p| p.name_any() == pod_name),
            },
        );
        let stall = (elapsed > DRAIN_TIMEOUT).then(|| {
            format!(
                "the drain of {node_name} had not finished {} s after the patch; \
                 status.storageDrain {}",
                DRAIN_TIMEOUT.as_secs(),
                serde_json::to_string(&cluster.status.and_then(|s| s.storage_drain))
                    .unwrap_or_default()
            )
        });
        if milestones.finished() || stall.is_some() {
            return Ok(Followed {
                milestones,
                restarts,
                stall,
            });
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Container restarts summed over `pods`.
fn restart_count(pods: &[Pod]) -> i32 {
    pods.iter()
        .filter_map(|p| p.status.as_ref()?.container_statuses.as_ref())
        .flatten()
        .map(|c| c.restart_count)
        .sum()
}

/// The steps, the changes of the record and the condition, and the reconciler's log lines
/// about the cluster, on one timeline from the patch, with the gap before each.
fn print_timeline(log: &Path, name: &str, patched_at: SystemTime, m: &Milestones) -> Result<()> {
    let mut lines: Vec<(Duration, String)> = Vec::new();
    for (step, at) in STEPS.iter().zip(m.at) {
        match at {
            Some(at) => lines.push((at, (*step).to_owned())),
            None => println!("      {step}: not seen"),
        }
    }
    lines.extend(m.changes.iter().cloned());
    for (at, what) in process::log_events(log, name, NS, patched_at)?.lines {
        let at = at.duration_since(patched_at).unwrap_or(Duration::ZERO);
        lines.push((at, format!("reconciler log: {what}")));
    }
    lines.sort_by_key(|(at, _)| *at);
    let mut previous = Duration::ZERO;
    for (at, what) in lines {
        println!(
            "      {:>7.2} s  (+{:.2} s)  {what}",
            secs(at),
            secs(at.saturating_sub(previous))
        );
        previous = at;
    }
    Ok(())
}

/// Deletes the cluster and waits until the finalizers let it go and its pods are gone.
async fn delete(stage: &mut Stage, clusters: &Api<GarageCluster>, name: &str) -> Result<()> {
    clusters
        .delete(name, &DeleteParams::default())
        .await
        .with_context(|| format!("deleting GarageCluster {NS}/{name}"))?;
    let pods: Api<Pod> = Api::namespaced(stage.client.clone(), NS);
    let members = ListParams::default().labels(&format!("{LABEL_CLUSTER}={name}"));
    let deadline = Instant::now() + DELETE_TIMEOUT;
    loop {
        stage.reconciler.check_alive()?;
        if clusters.get_opt(name).await?.is_none() && pods.list(&members).await?.items.is_empty() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{NS}/{name} or its pods were still there {} s after the delete",
                DELETE_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
