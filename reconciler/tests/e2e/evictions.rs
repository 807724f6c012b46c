//! Voluntary evictions against the storage PodDisruptionBudget, as `kubectl drain` of two
//! Nodes asks them: through the Eviction API, with the real disruption controller of
//! kube-controller-manager computing the budget. With every member healthy one storage pod is
//! evicted; a second, asked right after, is refused (429) until the first pod is back and
//! Ready, and then allowed, as a drain's retries find; a watcher sees at most one storage pod
//! down at any time; every checksummed object reads back after.
//!
//! Site B plays it on 3 Auto + 2 Manual members (a budget of Auto replicas − 1 would let three
//! go), site P on a pool-only cluster (DaemonSet pods, whose controller has no scale
//! subresource for a `maxUnavailable` budget to be resolved through).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Api;
use kube::api::{EvictParams, ListParams};
use localcluster::wait_until as wait;

use crate::support::verify;
use crate::{NAME, World, ns};

/// A client that hands a refusal back as it is: kube's default client retries a 429, which
/// is how an eviction the budget refuses answers, so with it a refused eviction would look
/// like a slow one.
async fn client_without_retries() -> anyhow::Result<kube::Client> {
    let path = crate::KUBECONFIG
        .get()
        .context("the kubeconfig is not known yet")?;
    let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    config.default_retry = false;
    Ok(kube::Client::try_from(config)?)
}

/// The budget's selector, as the live object has it.
async fn selector(pdbs: &Api<PodDisruptionBudget>) -> anyhow::Result<String> {
    let pdb = pdbs.get(NAME).await.context("the storage budget")?;
    let labels = pdb
        .spec
        .and_then(|s| s.selector)
        .and_then(|s| s.match_labels)
        .context("the storage budget has no matchLabels")?;
    Ok(labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(","))
}

/// Storage pods the budget selects that are not Ready (terminating ones included), and how
/// many are Ready.
async fn down_and_ready(pods: &Api<Pod>, selector: &str) -> anyhow::Result<(usize, usize)> {
    let list = pods.list(&ListParams::default().labels(selector)).await?;
    let ready = |p: &Pod| {
        p.metadata.deletion_timestamp.is_none()
            && p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
    };
    let up = list.items.iter().filter(|p| ready(p)).count();
    Ok((list.items.len() - up, up))
}

/// Waits until the budget, as the disruption controller computed it for its current
/// generation, allows exactly one eviction with all `members` healthy.
async fn settled(pdbs: &Api<PodDisruptionBudget>, members: u16) -> anyhow::Result<()> {
    wait(
        "the storage budget allowing one disruption with every member healthy",
        Duration::from_secs(240),
        || async {
            let pdb = pdbs.get(NAME).await?;
            let generation = pdb.metadata.generation;
            Ok(pdb.status.is_some_and(|s| {
                s.observed_generation == generation
                    && s.current_healthy == Some(i32::from(members))
                    && s.expected_pods == Some(i32::from(members))
                    && s.disruptions_allowed == Some(1)
            }))
        },
    )
    .await
}

/// Evicts `victims` one right after the other; see the module documentation. `members` is how many storage
/// pods the cluster runs; `read_via` names the pod whose S3 endpoint reads the objects back.
pub(crate) async fn two_at_once(
    w: &World<'_>,
    victims: [String; 2],
    members: u16,
    read_via: impl AsyncFn() -> anyhow::Result<String>,
) -> anyhow::Result<()> {
    let t = Instant::now();
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(w.client.clone(), ns());
    let selector = selector(&pdbs).await?;
    settled(&pdbs, members).await?;

    // The watcher: the most storage pods it ever saw down together.
    let most_down = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (pods, selector) = (w.pods.clone(), selector.clone());
        let (most_down, stop) = (most_down.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Ok((down, up)) = down_and_ready(&pods, &selector).await {
                    let missing = usize::from(members).saturating_sub(up);
                    most_down.fetch_max(down.max(missing), Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        })
    };

    let pods: Api<Pod> = Api::namespaced(client_without_retries().await?, ns());
    let result = async {
        let ep = EvictParams::default();
        let before = pdbs.get(NAME).await?;
        println!(
            "evictions: budget before: spec {:?}, status {:?}",
            before.spec.map(|s| (s.min_available, s.max_unavailable)),
            before.status
        );
        let (allowed, held) = (&victims[0], &victims[1]);
        pods.evict(allowed, &ep)
            .await
            .with_context(|| format!("evicting {allowed} with every member healthy"))?;
        // What a drain of a second Node asks right after the first: refused while the first
        // pod is away.
        let second = pods.evict(held, &ep).await;
        if !matches!(&second, Err(kube::Error::Api(s)) if s.code == 429) {
            let status = pdbs.get(NAME).await.ok().and_then(|p| p.status);
            println!("evictions: budget after both answered: {status:?}");
            anyhow::bail!(
                "evicting {held} right after {allowed}: expected a refusal with 429 from the budget, got {:?}",
                second.map(|_| "allowed")
            );
        }
        println!(
            "evictions: {allowed} evicted, {held} refused by the budget ({:.1}s)",
            t.elapsed().as_secs_f64()
        );
        settled(&pdbs, members).await?;
        // As a drain does: retry the refused eviction until the budget lets it through.
        wait(
            "the held eviction allowed once the first pod is back",
            Duration::from_secs(120),
            || async { Ok(pods.evict(held, &ep).await.is_ok()) },
        )
        .await?;
        println!(
            "evictions: {held} evicted once {allowed}'s replacement was Ready ({:.1}s)",
            t.elapsed().as_secs_f64()
        );
        settled(&pdbs, members).await
    }
    .await;
    stop.store(true, Ordering::Relaxed);
    watcher.await?;
    result?;
    let most = most_down.load(Ordering::Relaxed);
    ensure!(
        most <= 1,
        "{most} storage pods were down at once during the evictions; the budget must allow one"
    );
    let store = w.store.as_ref().context("no objects were written")?;
    let via = read_via().await?;
    verify(store, &crate::support::s3(w.sim, &via)?, &w.checksummed).await?;
    println!(
        "evictions: never more than {most} storage pod down; every object read back through {via} ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
