//! One operator run: an N-member GarageCluster is created and brought to Ready, then
//! `spec.storage.env` gains a variable and the rollout is followed until `StorageRolloutReady`
//! is True at the new generation with every storage pod replaced; the cluster is deleted
//! afterwards.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context as _, Result, bail};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use shared_types::conditions::cluster::CONDITION_STORAGE_ROLLOUT_READY;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use super::cluster;
use super::gates::Admin;
use super::pods::{self, Tracker};
use super::stage::Stage;
use super::{ENV, POLL, settle};
use crate::bench_drain::milestones::{condition, without_digits};
use crate::bench_reconciler::process::Counters;
use crate::bench_reconciler::{NS, secs};

/// Generous: two minutes per member on two shared cores, and five more.
fn timeout(members: usize) -> Duration {
    Duration::from_secs(300 + 120 * members as u64)
}

/// What the operator did, as times from the patch.
#[derive(Debug, Clone)]
pub(crate) struct OperatorRun {
    /// Patch -> `StorageRolloutReady=True` at the new generation, every pod replaced.
    pub total: Duration,
    /// Each pod's replacement.
    pub pods: Tracker,
    /// When the rollout record named each member, and when it stopped naming it.
    pub records: Records,
    /// The reconciler's counters over the rollout.
    pub counters: Counters,
    /// Each replacement's creation and Ready transition as the API recorded them, seconds
    /// from the patch.
    pub api: BTreeMap<String, (Option<f64>, Option<f64>)>,
}

/// The rollout record (`status.storageRollout`) and `StorageRolloutReady`, as they changed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Records {
    /// The record first named the member (by GarageNode name).
    pub recorded: BTreeMap<String, Duration>,
    /// The record stopped naming it: its replacement was proven.
    pub cleared: BTreeMap<String, Duration>,
    /// The record's actor and the condition, each time they changed.
    pub changes: Vec<(Duration, String)>,
    actor: Option<String>,
    condition: String,
}

impl Records {
    fn observe(&mut self, elapsed: Duration, cluster: &GarageCluster) {
        let status = cluster.status.as_ref();
        let actor = status
            .and_then(|s| s.storage_rollout.as_ref())
            .and_then(|r| r.garage_node_name.clone());
        if actor != self.actor {
            if let Some(previous) = self.actor.take() {
                self.cleared.entry(previous).or_insert(elapsed);
            }
            if let Some(now) = &actor {
                self.recorded.entry(now.clone()).or_insert(elapsed);
            }
            self.changes.push((
                elapsed,
                actor
                    .as_ref()
                    .map_or_else(|| "record: none".into(), |a| format!("record: {a}")),
            ));
            self.actor = actor;
        }
        let current = condition(
            status.and_then(|s| s.conditions.as_deref()),
            CONDITION_STORAGE_ROLLOUT_READY,
        )
        .map(|c| {
            format!(
                "StorageRolloutReady {} {} (generation {}): {}",
                c.status,
                c.reason,
                c.observed_generation.unwrap_or_default(),
                c.message
            )
        })
        .unwrap_or_default();
        if without_digits(&current) != without_digits(&self.condition) {
            self.changes.push((elapsed, current.clone()));
            self.condition = current;
        }
    }
}

/// Creates cluster `name` with `members` members, rolls the change out through the operator
/// and returns what was seen; the cluster is deleted afterwards whatever happened.
pub(crate) async fn run_once(stage: &mut Stage, name: &str, members: usize) -> Result<OperatorRun> {
    cluster::create_ready(stage, name, members).await?;
    let result = drive(stage, name, members).await;
    let deleted = cluster::delete(stage, name).await;
    let run = result?;
    deleted?;
    Ok(run)
}

async fn drive(stage: &mut Stage, name: &str, members: usize) -> Result<OperatorRun> {
    let clusters: Api<GarageCluster> = Api::namespaced(stage.client.clone(), NS);
    let pods = cluster::storage_pods(stage, name).await?;
    let token = cluster::admin_token(stage, name).await?;
    let mut admin = Admin::new(token, &pods).await?;
    settle(stage, name, &mut admin).await?;
    let mut tracker = Tracker::new(&pods)?;
    let before = stage.reconciler()?.counters().await?;
    let patched_at = SystemTime::now();
    let patched = Instant::now();
    let generation = clusters
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"storage": {"env": [{"name": ENV, "value": "1"}]}}})),
        )
        .await
        .with_context(|| format!("patching spec.storage.env of {NS}/{name}"))?
        .metadata
        .generation
        .context("the patched cluster has no generation")?;
    let mut records = Records::default();
    let total = loop {
        stage.check_alive()?;
        let cluster = clusters.get(name).await?;
        let now = cluster::storage_pods(stage, name).await?;
        // Stamped after the reads, so a step counts against the operator, never for it.
        let elapsed = patched.elapsed();
        tracker.observe(elapsed, &now);
        records.observe(elapsed, &cluster);
        let converged = condition(
            cluster
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_deref()),
            CONDITION_STORAGE_ROLLOUT_READY,
        )
        .is_some_and(|c| c.status == "True" && c.observed_generation == Some(generation));
        if converged && tracker.all_ready() {
            break elapsed;
        }
        if elapsed > timeout(members) {
            bail!(
                "{NS}/{name} had not finished its rollout {} s after the patch; pods {:?}; \
                 status.storageRollout {}; last changes {:?}",
                timeout(members).as_secs(),
                tracker.at,
                serde_json::to_string(&cluster.status.and_then(|s| s.storage_rollout))?,
                records.changes.iter().rev().take(3).collect::<Vec<_>>()
            );
        }
        tokio::time::sleep(POLL).await;
    };
    let counters = before.since(&stage.reconciler()?.counters().await?);
    let after = cluster::storage_pods(stage, name).await?;
    pods::check_replaced(&tracker, &after, ENV)?;
    let run = OperatorRun {
        total,
        pods: tracker,
        records,
        counters,
        api: pods::api_times(&after, patched_at),
    };
    print_run(&run, generation);
    Ok(run)
}

/// The total, each pod's replacement with the record around it, and the changes of the
/// record and the condition on one timeline from the patch.
fn print_run(run: &OperatorRun, generation: i64) {
    println!(
        "    patch -> StorageRolloutReady=True at generation {generation}, every pod replaced: \
         {:.2} s; reconciler: {}",
        secs(run.total),
        run.counters
    );
    let at = |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.2}", secs(d)));
    let mut previous_cleared: Option<Duration> = None;
    for (pod, r) in run.pods.in_order() {
        let member = pod.strip_suffix("-0").unwrap_or(pod);
        let recorded = run.records.recorded.get(member).copied();
        let cleared = run.records.cleared.get(member).copied();
        let gap = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.2}", secs(b.saturating_sub(a))),
            _ => "-".into(),
        };
        let (api_created, api_ready) = run.api.get(pod).copied().unwrap_or_default();
        let api = |t: Option<f64>| t.map_or("-".into(), |t| format!("{t:.0}"));
        println!(
            "      {pod:<24} recorded {:>6} s, deleted {:>6} s, created {:>6} s, Ready {:>6} s, \
             cleared {:>6} s; delete -> Ready {:>5} s, Ready -> cleared {:>5} s, previous \
             clear -> recorded {:>5} s (API: created {} s, Ready {} s)",
            at(recorded),
            at(r.deleted),
            at(r.created),
            at(r.ready),
            at(cleared),
            gap(r.deleted, r.ready),
            gap(r.ready, cleared),
            gap(previous_cleared, recorded),
            api(api_created),
            api(api_ready),
        );
        previous_cleared = cleared;
    }
    let mut previous = Duration::ZERO;
    for (at, what) in &run.records.changes {
        println!(
            "      {:>7.2} s  (+{:.2} s)  {what}",
            secs(*at),
            secs(at.saturating_sub(previous))
        );
        previous = *at;
    }
}
