//! `spec.workers`: the three variables reach every member through the Admin API, with no pod
//! replaced (they are not part of garage.toml), and a value changed behind the operator's back
//! on one node is set again.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use garage_admin::{AdminClient, NodeTarget};
use kube::api::{Patch, PatchParams};
use localcluster::wait_until as wait;
use serde_json::json;

use crate::support::*;
use crate::{NAME, World};

const WANTED: [(&str, &str); 3] = [
    ("scrub-tranquility", "7"),
    ("resync-worker-count", "2"),
    ("resync-tranquility", "3"),
];

/// Every node's value of each wanted variable, as Garage reports it.
async fn reported(
    admin: &AdminClient,
) -> anyhow::Result<BTreeMap<String, BTreeMap<String, String>>> {
    let (ok, _) = admin
        .worker_variables(&NodeTarget::All, None)
        .await?
        .into_parts();
    Ok(ok
        .into_iter()
        .map(|(id, vars)| (id.to_string(), vars))
        .collect())
}

fn holds(all: &BTreeMap<String, BTreeMap<String, String>>, members: usize) -> bool {
    all.len() >= members
        && all.values().all(|vars| {
            WANTED
                .iter()
                .all(|(k, v)| vars.get(*k).map(|x| x.trim()) == Some(*v))
        })
}

/// Sets `spec.workers`, waits until every member reports the values, changes one on one node
/// by hand and waits until it is set back; no pod is replaced meanwhile.
pub(crate) async fn variables(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let pods_before = crate::volumes::pod_uids(w).await?;
    let members = pods_before.len();
    ensure!(members > 0, "no storage pods");
    w.clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"workers": {
                "scrubTranquility": 7, "resyncWorkerCount": 2, "resyncTranquility": 3,
            }}})),
        )
        .await?;
    let admin = admin_client_as_mounted(&w.client, w.sim, &format!("{NAME}-storage-0-0")).await?;
    wait(
        "spec.workers on every member",
        Duration::from_secs(120),
        || async { Ok(holds(&reported(&admin).await?, members)) },
    )
    .await?;
    let first = reported(&admin)
        .await?
        .into_keys()
        .next()
        .context("no node reports")?;
    let (_, failed) = admin
        .set_worker_variable(&NodeTarget::Node(first.parse()?), "resync-tranquility", "9")
        .await?
        .into_parts();
    ensure!(failed.is_empty(), "the hand-made change failed: {failed:?}");
    wait(
        "the variable changed by hand set again",
        Duration::from_secs(120),
        || async { Ok(holds(&reported(&admin).await?, members)) },
    )
    .await?;
    let pods_after = crate::volumes::pod_uids(w).await?;
    ensure!(
        pods_before == pods_after,
        "spec.workers replaced pods: {pods_before:?} -> {pods_after:?}"
    );
    println!(
        "workers: scrub-tranquility, resync-worker-count and resync-tranquility on {members} members, a hand-made change set back, no pod replaced, in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
