//! The floor: the same change rolled out by hand on a cluster the operator brought up, with
//! the reconciler stopped. Every member's StatefulSet gets the variable in its pod template
//! directly; then one pod at a time is deleted (UID precondition), and the next only once its
//! replacement is Ready and the gates hold ([`super::gates`]). The floor's figure is the sum of
//! those waits, each from its delete call; the template patch is not counted.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, Preconditions};
use kube::{Api, ResourceExt as _};
use serde_json::json;
use shared_types::keys::label::LABEL_CLUSTER;

use super::cluster::{self, pod_ready};
use super::gates::{Admin, Gates};
use super::pods::{self, Replacement, Tracker};
use super::stage::Stage;
use super::{ENV, POLL, settle};
use crate::bench_reconciler::{NS, secs};

/// How long one replacement may take before the floor gives up.
const STEP_TIMEOUT: Duration = Duration::from_secs(300);
const OBSERVE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the floor tells the others where a replacement runs, from the moment it has an
/// address (the operator's passes come every half second while a rollout acts).
const INTRODUCE_EVERY: Duration = Duration::from_secs(1);

/// One pod's replacement by hand, each time from its delete call.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// The pod.
    pub pod: String,
    /// Replacement created and Ready (its `deleted` is the delete call, zero).
    pub replacement: Replacement,
    /// The first reading after Ready in which each gate held.
    pub gates: [Option<Duration>; 4],
    /// Every gate held at once: the next pod may go.
    pub done: Duration,
}

/// One floor run.
#[derive(Debug, Clone)]
pub(crate) struct FloorRun {
    /// Each replacement, in the order done.
    pub steps: Vec<Step>,
}

impl FloorRun {
    /// The sum of the waits: the floor's figure.
    pub(crate) fn total(&self) -> Duration {
        self.steps.iter().map(|s| s.done).sum()
    }
}

/// Creates cluster `name` with `members` members under the operator, stops the reconciler and
/// rolls the change out by hand; the cluster is deleted afterwards whatever happened.
pub(crate) async fn run_once(stage: &mut Stage, name: &str, members: usize) -> Result<FloorRun> {
    cluster::create_ready(stage, name, members).await?;
    let result = drive(stage, name).await;
    let deleted = cluster::delete(stage, name).await;
    let run = result?;
    deleted?;
    Ok(run)
}

async fn drive(stage: &mut Stage, name: &str) -> Result<FloorRun> {
    let pods = cluster::storage_pods(stage, name).await?;
    let token = cluster::admin_token(stage, name).await?;
    let mut admin = Admin::new(token, &pods).await?;
    settle(stage, name, &mut admin).await?;
    stage.stop_reconciler().await?;
    println!("    reconciler stopped (killed, its Lease deleted)");
    let patched = patch_templates(stage, name).await?;
    println!(
        "    {ENV} added to every member's StatefulSet template; observed by the StatefulSet \
         controller after {:.2} s (not counted)",
        secs(patched)
    );
    let mut tracker = Tracker::new(&pods)?;
    let began = Instant::now();
    let mut steps = Vec::new();
    for pod in &pods {
        let step = replace(stage, name, &mut admin, &mut tracker, pod, began).await?;
        print_step(&step);
        steps.push(step);
    }
    pods::check_replaced(&tracker, &cluster::storage_pods(stage, name).await?, ENV)?;
    Ok(FloorRun { steps })
}

/// Adds [`ENV`] to the garage container of every member's StatefulSet and waits until each
/// has observed it as a new update revision; returns how long that took.
async fn patch_templates(stage: &Stage, name: &str) -> Result<Duration> {
    let sets: Api<StatefulSet> = Api::namespaced(stage.client.clone(), NS);
    let selector = ListParams::default().labels(&format!("{LABEL_CLUSTER}={name}"));
    let began = Instant::now();
    let patch = json!({"spec": {"template": {"spec": {"containers": [
        {"name": "garage", "env": [{"name": ENV, "value": "1"}]},
    ]}}}});
    for set in sets.list(&selector).await?.items {
        sets.patch(
            &set.name_any(),
            &PatchParams::default(),
            &Patch::Strategic(&patch),
        )
        .await
        .with_context(|| format!("patching the template of StatefulSet {}", set.name_any()))?;
    }
    loop {
        let observed = sets.list(&selector).await?.items.iter().all(|s| {
            s.status.as_ref().is_some_and(|st| {
                st.observed_generation == s.metadata.generation
                    && st.update_revision.is_some()
                    && st.update_revision != st.current_revision
            })
        });
        if observed {
            return Ok(began.elapsed());
        }
        if began.elapsed() > OBSERVE_TIMEOUT {
            bail!(
                "the StatefulSets of {NS}/{name} had not observed their new template after {} s",
                OBSERVE_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Deletes `old` and polls until its replacement is Ready and every gate holds.
async fn replace(
    stage: &Stage,
    name: &str,
    admin: &mut Admin,
    tracker: &mut Tracker,
    old: &Pod,
    began: Instant,
) -> Result<Step> {
    let pod = old.name_any();
    let members = tracker.at.len();
    let deleted = Instant::now();
    let offset = began.elapsed();
    Api::<Pod>::namespaced(stage.client.clone(), NS)
        .delete(
            &pod,
            &DeleteParams {
                preconditions: Some(Preconditions {
                    uid: old.metadata.uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            },
        )
        .await
        .with_context(|| format!("deleting pod {pod}"))?;
    let mut gates: [Option<Duration>; 4] = [None; 4];
    let mut last = Gates::default();
    let mut introduced: Option<Instant> = None;
    loop {
        let pods = cluster::storage_pods(stage, name).await?;
        tracker.observe(began.elapsed(), &pods);
        let replaced = tracker.at.get(&pod).is_some_and(|r| r.ready.is_some());
        // By hand as by the operator: until Garage sees the member up at its new address,
        // another member is told where it runs, at the pace of the operator's passes.
        let new_pod = tracker.at.get(&pod).is_some_and(|r| r.created.is_some());
        if new_pod
            && !last.up
            && introduced.is_none_or(|t| t.elapsed() >= INTRODUCE_EVERY)
            && admin.introduce(&pods, &pod).await
        {
            introduced = Some(Instant::now());
        }
        if replaced && pods.len() == members && pods.iter().all(pod_ready) {
            last = admin.read(&pods).await;
            // Stamped after the reads, so the reads count against the floor.
            let now = deleted.elapsed();
            let seen = [last.identity, last.up, last.healthy, last.settled];
            for (slot, held) in gates.iter_mut().zip(seen) {
                if held && slot.is_none() {
                    *slot = Some(now);
                }
            }
            if last.hold() {
                let mut replacement = tracker.at.get(&pod).copied().unwrap_or_default();
                let from_delete = |d: Option<Duration>| d.map(|d| d.saturating_sub(offset));
                replacement.deleted = Some(Duration::ZERO);
                replacement.created = from_delete(replacement.created);
                replacement.ready = from_delete(replacement.ready);
                return Ok(Step {
                    pod,
                    replacement,
                    gates,
                    done: now,
                });
            }
        }
        if deleted.elapsed() > STEP_TIMEOUT {
            bail!(
                "the replacement of {pod} had not passed the gates {} s after its delete \
                 (replacement Ready: {replaced}; last reading {last:?})",
                STEP_TIMEOUT.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

fn print_step(s: &Step) {
    let at = |d: Option<Duration>| d.map_or("-".into(), |d| format!("{:.2}", secs(d)));
    println!(
        "      {:<24} created {:>6} s, Ready {:>6} s; identity {:>6} s, up at its address {:>6} s, \
         every view healthy {:>6} s, settled {:>6} s; next pod may go {:.2} s",
        s.pod,
        at(s.replacement.created),
        at(s.replacement.ready),
        at(s.gates[0]),
        at(s.gates[1]),
        at(s.gates[2]),
        at(s.gates[3]),
        secs(s.done)
    );
}
