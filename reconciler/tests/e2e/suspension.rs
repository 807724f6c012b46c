//! Maintenance: a suspended cluster and its GarageNodes leave hand-made changes of their
//! objects alone, publish `Suspended` (cluster: `MaintenanceSuspended`, its nodes:
//! `ClusterMaintenanceSuspended`, nodes with their own `pause-reconcile` annotation:
//! `MaintenanceSuspended`) and keep `observedGeneration` behind a generation they did not act
//! on; once lifted, the condition goes and the drift step sees every change put back.
//!
//! "Nothing written" is proven without waiting for a quiet period: while suspended, the
//! switch is moved from `spec.maintenance.suspended` to the `pause-reconcile` annotation, on
//! the cluster and on every node; the conditions follow only through passes of each that run
//! after the hand-made changes, and those passes must leave every other object as it was.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{Context as _, ensure};
use kube::api::{Patch, PatchParams};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::conditions::node::CONDITION_SUSPENDED;
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::ANNOTATION_PAUSE_RECONCILE;

use crate::support::*;
use crate::{NAME, World};

/// `(status, reason, message)` of the `Suspended` condition among `conditions`.
fn suspended_in(
    conditions: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]>,
) -> Option<(String, String, String)> {
    conditions?
        .iter()
        .find(|c| c.type_ == CONDITION_SUSPENDED)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

async fn node_suspension(
    w: &World<'_>,
    name: &str,
) -> anyhow::Result<Option<(String, String, String)>> {
    let gn: GarageNode = w.gns.get(name).await?;
    Ok(suspended_in(
        gn.status.as_ref().and_then(|s| s.conditions.as_deref()),
    ))
}

async fn merge_cluster(w: &World<'_>, body: serde_json::Value) -> anyhow::Result<()> {
    w.clusters
        .patch(NAME, &PatchParams::default(), &Patch::Merge(body))
        .await?;
    Ok(())
}

/// Sets (or removes, `None`) the pause annotation on every GarageNode of the site; returns
/// their names.
async fn annotate_nodes(w: &World<'_>, value: Option<&str>) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    for gn in w.gns.list(&Default::default()).await?.items {
        let name = kube::ResourceExt::name_any(&gn);
        w.gns
            .patch(
                &name,
                &PatchParams::default(),
                &Patch::Merge(
                    json!({"metadata": {"annotations": {ANNOTATION_PAUSE_RECONCILE: value}}}),
                ),
            )
            .await?;
        names.push(name);
    }
    Ok(names)
}

/// Waits until the cluster's `Suspended` condition has `reason` and a message naming
/// `names`, and every GarageNode of the cluster is suspended with `node_reason`.
async fn wait_suspended(
    w: &World<'_>,
    reason: &str,
    names: &str,
    node_reason: &str,
) -> anyhow::Result<()> {
    wait(
        &format!("the cluster and its nodes Suspended ({reason}, naming {names})"),
        Duration::from_secs(120),
        || async {
            let c = w.clusters.get(NAME).await?;
            let Some((status, r, message)) =
                suspended_in(c.status.as_ref().and_then(|s| s.conditions.as_deref()))
            else {
                return Ok(false);
            };
            if status != "True" || r != reason || !message.contains(names) {
                return Ok(false);
            }
            for gn in w.gns.list(&Default::default()).await?.items {
                let name = kube::ResourceExt::name_any(&gn);
                match node_suspension(w, &name).await? {
                    Some((s, r, _)) if s == "True" && r == node_reason => {}
                    _ => return Ok(false),
                }
            }
            Ok(true)
        },
    )
    .await
}

/// Suspends the cluster through `spec.maintenance.suspended` and returns once it and its
/// nodes say so.
pub(crate) async fn hold(w: &World<'_>) -> anyhow::Result<()> {
    merge_cluster(w, json!({"spec": {"maintenance": {"suspended": true}}})).await?;
    wait_suspended(
        w,
        "MaintenanceSuspended",
        "spec.maintenance.suspended",
        "ClusterMaintenanceSuspended",
    )
    .await?;
    let c = w.clusters.get(NAME).await?;
    let observed = c.status.as_ref().and_then(|s| s.observed_generation);
    ensure!(
        observed < c.metadata.generation,
        "a suspended cluster published observedGeneration {observed:?} for generation {:?} it did not act on",
        c.metadata.generation
    );
    Ok(())
}

/// After hand-made changes: moves the switch to the annotations, which only a pass after those
/// changes can report, and checks that those passes wrote nothing else: every object of the
/// namespace but the cluster and its GarageNodes (annotated here) keeps its resourceVersion.
pub(crate) async fn still_held(w: &World<'_>) -> anyhow::Result<()> {
    let before = snapshot(&w.client).await?;
    merge_cluster(
        w,
        json!({
            "metadata": {"annotations": {ANNOTATION_PAUSE_RECONCILE: "true"}},
            "spec": {"maintenance": {"suspended": false}},
        }),
    )
    .await?;
    let nodes = annotate_nodes(w, Some("true")).await?;
    wait_suspended(
        w,
        "MaintenanceSuspended",
        ANNOTATION_PAUSE_RECONCILE,
        "MaintenanceSuspended",
    )
    .await?;
    let after = snapshot(&w.client).await?;
    let allowed: BTreeSet<String> = nodes
        .iter()
        .map(|n| format!("GarageNode/{n}"))
        .chain([format!("GarageCluster/{NAME}")])
        .collect();
    let moved: BTreeMap<&String, (&String, Option<&String>)> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(*v) && !allowed.contains(*k))
        .map(|(k, v)| (k, (v, after.get(k))))
        .collect();
    ensure!(
        moved.is_empty(),
        "objects written while the cluster was suspended: {moved:?}"
    );
    let appeared: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    ensure!(
        appeared.is_empty(),
        "objects created while suspended: {appeared:?}"
    );
    Ok(())
}

/// Lifts both annotations and waits until the cluster and every node no longer report
/// `Suspended`.
pub(crate) async fn lift(w: &World<'_>) -> anyhow::Result<()> {
    merge_cluster(
        w,
        json!({"metadata": {"annotations": {ANNOTATION_PAUSE_RECONCILE: null}}}),
    )
    .await?;
    annotate_nodes(w, None).await?;
    wait(
        "Suspended gone from the cluster and its nodes",
        Duration::from_secs(120),
        || async {
            let c = w.clusters.get(NAME).await?;
            if suspended_in(c.status.as_ref().and_then(|s| s.conditions.as_deref())).is_some() {
                return Ok(false);
            }
            for gn in w.gns.list(&Default::default()).await?.items {
                if suspended_in(gn.status.as_ref().and_then(|s| s.conditions.as_deref())).is_some()
                {
                    return Ok(false);
                }
            }
            Ok(true)
        },
    )
    .await
    .context("lifting the suspension")
}
