//! Site A, four members: a pod-template change and then a Garage configuration change roll
//! out one identity-bearing pod at a time. With 200 checksummed objects written first, a
//! reader keeps fetching them through Ready pods and a sampler counts storage pods that are
//! not Ready, twice a second. Each change must replace every pod (new pod UIDs), keep every
//! Garage node ID, end with `StorageRolloutReady=True` at the new generation, never have two
//! pods down at once, and leave every object byte-identical; the reader must see no failed
//! GET. The second rollout survives a reconciler restart taken right after its first record;
//! it also turns `spec.k2vApi` on, and every pod then serves K2V behind the Service's port.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::conditions::cluster::CONDITION_STORAGE_ROLLOUT_READY;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::label::{LABEL_CLUSTER, LABEL_TIER};

use crate::support::*;
use crate::{NAME, World};

/// What happens once a rollout has recorded its first replacement.
pub(crate) enum Midway<'a> {
    /// Nothing: the rollout runs undisturbed.
    Nothing,
    /// The in-process reconciler is aborted and started again.
    RestartReconciler,
    /// A fault of the caller's (an API server restart, say).
    Fault(Pin<Box<dyn Future<Output = anyhow::Result<()>> + 'a>>),
}

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    if w.store.is_none() {
        crate::drain::write_objects(w).await?;
    }
    roll(
        w,
        "pod template (a storage env var)",
        json!({"spec": {"storage": {"env": [{"name": "E2E_ROLLOUT", "value": "1"}]}}}),
        Midway::Nothing,
    )
    .await?;
    roll(
        w,
        "Garage configuration (blocks.maxConcurrentReads, k2vApi)",
        json!({"spec": {"blocks": {"maxConcurrentReads": 8}, "k2vApi": {}}}),
        Midway::RestartReconciler,
    )
    .await?;
    k2v_served(w).await?;
    stuck_replacement(w).await
}

/// After the configuration rollout turned `spec.k2vApi` on: every storage pod answers on the
/// K2V port with Garage's K2V error body (an unsigned request is refused, which proves the
/// K2V server is the one listening), and the `<cluster>` Service publishes the port.
async fn k2v_served(w: &World<'_>) -> anyhow::Result<()> {
    let http = reqwest::Client::new();
    for pod in storage_pods(&w.pods).await?.keys() {
        let ip = w.sim.pod_ip(crate::ns(), pod).context("no pod ip")?;
        let answer = http
            .get(format!("http://{ip}:3904/e2e-bucket?search"))
            .send()
            .await
            .with_context(|| format!("nothing answers on the K2V port of {pod}"))?;
        let status = answer.status();
        let body = answer.text().await?;
        ensure!(
            status.is_client_error() && body.contains("\"code\""),
            "{pod}'s K2V port answered {status} {body:?}, not a K2V error"
        );
    }
    let services: Api<k8s_openapi::api::core::v1::Service> =
        Api::namespaced(w.client.clone(), crate::ns());
    let api = services.get(NAME).await?;
    let ports: Vec<(String, i32)> = api
        .spec
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .map(|p| (p.name.clone().unwrap_or_default(), p.port))
        .collect();
    ensure!(
        ports.contains(&("k2v".into(), 3904)),
        "the {NAME} Service has no k2v port: {ports:?}"
    );
    println!("rollout: every storage pod serves K2V on 3904, and the Service publishes it");
    Ok(())
}

/// A revision whose pods never become Ready (an image that is not a Garage server: its pods
/// run, but nothing answers Garage's health check): the first replacement stays not Ready,
/// the rollout stops there and says why, and no other pod is touched. A
/// `recover-storage-rollout` request makes that replacement again. Reverting the change
/// recovers: the failed replacement, now behind the current revision, is replaced again.
async fn stuck_replacement(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let before = storage_pods(&w.pods).await?;
    admitted(
        &w.clusters,
        json!({"spec": {"image": "registry.example.invalid/not-the-server:1"}}),
    )
    .await?;
    let actor = std::sync::Mutex::new(String::new());
    wait(
        "the first replacement running but never Ready",
        Duration::from_secs(300),
        || async {
            let c = w.clusters.get(NAME).await?;
            let Some(record) = c.status.as_ref().and_then(|s| s.storage_rollout.clone()) else {
                return Ok(false);
            };
            let name = record.garage_node_name.clone().unwrap_or_default();
            let pod = format!("{name}-0");
            let now = storage_pods(&w.pods).await?;
            let replaced = now
                .get(&pod)
                .is_some_and(|uid| Some(uid) != before.get(&pod));
            *actor.lock().unwrap() = pod;
            Ok(replaced)
        },
    )
    .await?;
    let pod = actor.into_inner().unwrap();
    // Long enough for a sequencer that did not wait to have taken the next pod.
    tokio::time::sleep(Duration::from_secs(40)).await;
    let now = storage_pods(&w.pods).await?;
    for (name, uid) in &before {
        if *name != pod {
            ensure!(
                now.get(name) == Some(uid),
                "{name} was replaced while {pod}'s replacement was not Ready"
            );
        }
    }
    let p = w.pods.get(&pod).await?;
    ensure!(
        !ready(&p),
        "{pod}'s replacement became Ready without a Garage server"
    );
    let c = w.clusters.get(NAME).await?;
    let message = c
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.type_ == CONDITION_STORAGE_ROLLOUT_READY)
        })
        .map(|c| format!("{} {}: {}", c.status, c.reason, c.message))
        .unwrap_or_default();
    ensure!(
        message.starts_with("False RollingOut") && message.contains("Ready"),
        "StorageRolloutReady does not say the rollout waits for the replacement: {message}"
    );
    println!(
        "rollout: a replacement that never becomes Ready stops the rollout at {pod} ({message}); nothing else touched ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    redo_requested(w, &pod, &before).await?;
    // Recovery: the change is reverted; the replacement, now on a revision that is no longer
    // current and not Ready, is replaced again by the rollout itself.
    let generation = admitted(&w.clusters, json!({"spec": {"image": null}})).await?;
    println!("rollout: the image change reverted (generation {generation})");
    wait(
        &format!("StorageRolloutReady=True at generation {generation} after the recovery"),
        Duration::from_secs(300),
        || async {
            let c = w.clusters.get(NAME).await?;
            let ok = rolled_out(&c, generation);
            Ok(ok
                && c.status
                    .as_ref()
                    .is_some_and(|s| s.storage_rollout.is_none()))
        },
    )
    .await?;
    wait_ready(&w.clusters, Duration::from_secs(300)).await?;
    let store = w.store.as_ref().context("no store")?;
    verify(store, &s3(w.sim, "garage-storage-1-0")?, &w.checksummed).await?;
    println!(
        "rollout: reverted: the failed replacement was replaced again, converged, Ready, every object read back ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `recover-storage-rollout` set to a new value while the replacement of `pod` is not Ready:
/// the request and that pod are recorded, the pod is made again (a new UID, same name), and
/// no other pod is touched.
async fn redo_requested(
    w: &World<'_>,
    pod: &str,
    before: &BTreeMap<String, String>,
) -> anyhow::Result<()> {
    let t = Instant::now();
    let stuck = storage_pods(&w.pods).await?.get(pod).cloned();
    w.clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {
                "garage.rajsingh.info/recover-storage-rollout": "e2e-redo-1"
            }}})),
        )
        .await?;
    wait(
        "the stuck replacement made again",
        Duration::from_secs(120),
        || async {
            let c = w.clusters.get(NAME).await?;
            let record = c.status.as_ref().and_then(|s| s.storage_rollout.clone());
            let recorded = record.is_some_and(|r| {
                r.recovery_request.as_deref() == Some("e2e-redo-1")
                    && r.recovery_pod_uid.is_some()
                    && r.recovery_pod_uid == stuck
            });
            let now = storage_pods(&w.pods).await?.get(pod).cloned();
            Ok(recorded && now.is_some() && now != stuck)
        },
    )
    .await?;
    let now = storage_pods(&w.pods).await?;
    for (name, uid) in before {
        ensure!(
            name == pod || now.get(name) == Some(uid),
            "{name} was replaced by a recovery request for {pod}"
        );
    }
    println!(
        "rollout: recover-storage-rollout recorded and made {pod}'s stuck replacement again, nothing else touched ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Applies `patch` and follows the rollout it causes to the end, with `midway` played once
/// the first replacement is recorded.
pub(crate) async fn roll(
    w: &mut World<'_>,
    what: &str,
    patch: serde_json::Value,
    midway: Midway<'_>,
) -> anyhow::Result<()> {
    let t = Instant::now();
    let before_pods = storage_pods(&w.pods).await?;
    let before_ids = node_ids(&w.gns).await?;
    let members = before_pods.len();
    let replicas = w
        .clusters
        .get(NAME)
        .await?
        .spec
        .storage
        .and_then(|s| s.replicas)
        .unwrap_or_default();
    ensure!(
        usize::try_from(replicas) == Ok(members),
        "{members} storage pods before the rollout, {replicas} replicas"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn(sample_not_ready(w.pods.clone(), members, stop.clone()));
    let reader = tokio::spawn(read_continuously(
        w.pods.clone(),
        "storage",
        w.store.clone().context("no objects were written")?,
        w.checksummed.clone(),
        stop.clone(),
    ));
    let generation = admitted(&w.clusters, patch)
        .await
        .with_context(|| format!("the {what} change"))?;
    println!(
        "rollout: {what}: admitted as generation {generation} ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    if !matches!(midway, Midway::Nothing) {
        wait(
            "the first rollout record",
            Duration::from_secs(180),
            || async {
                Ok(w.clusters
                    .get(NAME)
                    .await?
                    .status
                    .and_then(|s| s.storage_rollout)
                    .is_some())
            },
        )
        .await?;
        match midway {
            Midway::Nothing => {}
            Midway::RestartReconciler => {
                w.stop_reconciler().await;
                tokio::time::sleep(Duration::from_secs(3)).await;
                w.start_reconciler().await;
                println!("rollout: reconciler restarted with a replacement recorded");
            }
            Midway::Fault(fault) => fault.await?,
        }
    }
    let done = wait(
        &format!("StorageRolloutReady=True at generation {generation}"),
        Duration::from_secs(900),
        || async {
            let c = w.clusters.get(NAME).await?;
            let ok = rolled_out(&c, generation);
            Ok(ok && storage_pods(&w.pods).await?.len() == members)
        },
    )
    .await;
    stop.store(true, Ordering::SeqCst);
    println!(
        "rollout: {what}: StorageRolloutReady wait ended ({:.1}s); collecting the sampler and the reader",
        t.elapsed().as_secs_f64()
    );
    let max_down = sampler.await?;
    let Reads {
        reads,
        failed,
        first_failure,
    } = reader.await??;
    println!(
        "rollout: {what}: reader and sampler done ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    done?;
    let after_pods = storage_pods(&w.pods).await?;
    for (name, uid) in &before_pods {
        ensure!(
            after_pods.get(name) != Some(uid),
            "pod {name} was not replaced by the {what} rollout (UID {uid} before and after; pods before {before_pods:?}, after {after_pods:?})"
        );
    }
    let after_ids = node_ids(&w.gns).await?;
    ensure!(
        before_ids == after_ids,
        "node IDs changed across the rollout: {before_ids:?} -> {after_ids:?}"
    );
    ensure!(
        max_down <= 1,
        "{max_down} storage pods were not Ready at once during the {what} rollout"
    );
    ensure!(
        failed == 0,
        "{failed} of {reads} GETs failed during the {what} rollout; the first: {}",
        first_failure.unwrap_or_default()
    );
    let store = w.store.as_ref().context("no store")?;
    verify(store, &s3(w.sim, "garage-storage-1-0")?, &w.checksummed).await?;
    println!(
        "rollout: {what}: {members} pods replaced one at a time (at most {max_down} not Ready), same node IDs, {reads} GETs without a failure, every object read back ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Applies `patch` once admission lets it through; returns the new generation.
async fn admitted(clusters: &Api<GarageCluster>, patch: serde_json::Value) -> anyhow::Result<i64> {
    wait("the change admitted", Duration::from_secs(180), || {
        let patch = patch.clone();
        async move {
            clusters
                .patch(NAME, &PatchParams::default(), &Patch::Merge(patch))
                .await?;
            Ok(true)
        }
    })
    .await?;
    clusters
        .get(NAME)
        .await?
        .metadata
        .generation
        .context("no generation")
}

/// Storage pods of the cluster by name, with their UIDs.
pub(crate) async fn storage_pods(pods: &Api<Pod>) -> anyhow::Result<BTreeMap<String, String>> {
    Ok(pods
        .list(
            &ListParams::default().labels(&format!("{LABEL_CLUSTER}={NAME},{LABEL_TIER}=storage")),
        )
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| (p.name_any(), p.metadata.uid.unwrap_or_default()))
        .collect())
}

pub(crate) fn ready(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none()
        && p.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Twice a second until `stop`: how many of the members had no Ready pod, at most.
pub(crate) async fn sample_not_ready(
    pods: Api<Pod>,
    members: usize,
    stop: Arc<AtomicBool>,
) -> usize {
    let worst = AtomicUsize::new(0);
    let selector = format!("{LABEL_CLUSTER}={NAME},{LABEL_TIER}=storage");
    while !stop.load(Ordering::SeqCst) {
        if let Ok(list) = pods.list(&ListParams::default().labels(&selector)).await {
            let up = list.items.iter().filter(|p| ready(p)).count();
            worst.fetch_max(members.saturating_sub(up), Ordering::SeqCst);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    worst.load(Ordering::SeqCst)
}

/// GETs the objects in turn through a Ready pod of `tier` until `stop`, as a Service over
/// that tier would send them. A connection that breaks
/// because the pod it went to was just deleted is tried again through another Ready pod; an
/// answer that is an error or different bytes is a failed GET.
pub(crate) async fn read_continuously(
    pods: Api<Pod>,
    tier: &'static str,
    store: garage_fixture::s3::Objects,
    objects: Vec<(String, Vec<u8>)>,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<Reads> {
    use sha2::{Digest, Sha256};
    let selector = format!("{LABEL_CLUSTER}={NAME},{LABEL_TIER}={tier}");
    let (mut reads, mut failed) = (0usize, 0usize);
    let mut first_failure = None;
    let mut i = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let (name, body) = &objects[i % objects.len()];
        i += 1;
        let mut answered = false;
        for attempt in 0..5 {
            // An API server that is away (restarted under the rollout) is waited for; it
            // says nothing about Garage.
            let list = loop {
                match pods.list(&ListParams::default().labels(&selector)).await {
                    Ok(list) => break list,
                    Err(_) if !stop.load(Ordering::SeqCst) => {
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                    Err(_) => {
                        return Ok(Reads {
                            reads,
                            failed,
                            first_failure,
                        });
                    }
                }
            };
            let live: Vec<&Pod> = list.items.iter().filter(|p| ready(p)).collect();
            let Some(ip) = (!live.is_empty())
                .then(|| live[(i + attempt) % live.len()])
                .and_then(|p| p.status.as_ref()?.pod_ip.clone())
            else {
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            };
            // A connection to a pod that was just deleted can hang instead of failing: such a
            // GET is given up after a while and tried through another Ready pod.
            let got = tokio::time::timeout(
                Duration::from_secs(20),
                store.get(&format!("http://{ip}:3900"), name),
            )
            .await;
            let Ok(got) = got else {
                println!("rollout reader: GET {name} through {ip} timed out; trying another pod");
                continue;
            };
            match got {
                Ok(got) => {
                    reads += 1;
                    if Sha256::digest(&got) != Sha256::digest(body) {
                        failed += 1;
                        let why = format!("{name} read back different through {ip}");
                        println!("rollout reader: {why}");
                        first_failure.get_or_insert(why);
                    }
                    answered = true;
                    break;
                }
                Err(garage_fixture::s3::S3Error::Transport { .. }) => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => {
                    reads += 1;
                    failed += 1;
                    let why = format!("GET {name} through {ip} failed: {e:#}");
                    println!("rollout reader: {why}");
                    first_failure.get_or_insert(why);
                    answered = true;
                    break;
                }
            }
        }
        if !answered {
            reads += 1;
            failed += 1;
            let why = format!("no Ready pod answered a GET of {name}");
            println!("rollout reader: {why}");
            first_failure.get_or_insert(why);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(Reads {
        reads,
        failed,
        first_failure,
    })
}

/// What a continuous reader saw.
pub(crate) struct Reads {
    /// GETs answered (or given up on).
    pub(crate) reads: usize,
    /// Of those, the ones that failed.
    pub(crate) failed: usize,
    /// The first failure, to be named in the test's error.
    pub(crate) first_failure: Option<String>,
}

/// `StorageRolloutReady=True` observed at `generation`.
fn rolled_out(c: &GarageCluster, generation: i64) -> bool {
    c.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| {
            cs.iter()
                .find(|c| c.type_ == CONDITION_STORAGE_ROLLOUT_READY)
        })
        .is_some_and(|c| c.status == "True" && c.observed_generation == Some(generation))
}
