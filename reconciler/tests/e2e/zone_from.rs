//! Site F, after the cycle: `spec.zoneFrom` on a running cluster with 200 checksummed
//! objects. The schedulable Nodes get four distinct values of the upstream sample's label
//! key; once the cluster names it, every member's `status.zone` and its layout role take the
//! label of the Node its pod runs on. One of those Nodes is then relabelled, and its role's
//! zone follows; the label is then taken off, and the role falls back to `spec.zone`. Every
//! object reads back after. The label key is this step's own, so no other site sees a change.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use localcluster::wait_until as wait;
use serde_json::json;

use crate::support::*;
use crate::{NAME, World};

/// The Node label the cluster takes its zones from (the upstream sample's key).
const KEY: &str = "example.com/rack";
/// The Nodes other sites' pods may run on; the tainted ones hold none of this site's.
const HOSTS: [&str; 4] = ["n1", "n2", "n3", "n4"];

pub(crate) async fn run(w: &mut World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    let nodes: Api<Node> = Api::all(w.client.clone());
    for (i, host) in HOSTS.iter().enumerate() {
        label(&nodes, host, Some(&format!("rack-{}", i + 1))).await?;
    }
    w.clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"zoneFrom": {"nodeLabel": KEY}}})),
        )
        .await
        .context("spec.zoneFrom was not admitted")?;
    let zones = follow(w, "every role in the zone of its Node's label").await?;
    println!("zoneFrom: zones follow the Nodes' labels: {zones:?}");

    // The first member's Node is relabelled, then loses the label.
    let host = host_of(w, "garage-storage-0").await?;
    label(&nodes, &host, Some("rack-moved")).await?;
    let zones = follow(w, "the relabelled Node's role in its new zone").await?;
    ensure!(
        zones.values().any(|z| z == "rack-moved"),
        "no role moved to rack-moved: {zones:?}"
    );
    label(&nodes, &host, None).await?;
    let zones = follow(w, "the unlabelled Node's role back in spec.zone").await?;
    ensure!(
        !zones.values().any(|z| z == "rack-moved"),
        "a role stayed in rack-moved after the label went: {zones:?}"
    );
    let store = w.store.as_ref().context("no objects were written")?;
    verify(store, &s3(w.sim, "garage-storage-0-0")?, &w.checksummed).await?;
    println!(
        "zoneFrom: a relabelled Node moved its role, an unlabelled one fell back to spec.zone; 200 objects read back ({:.1}s)",
        t.elapsed().as_secs_f64()
    );
    // The other labels stay: only this site's cluster reads them, and it is torn down next.
    Ok(())
}

/// Sets (or with `None` removes) this step's label on Node `host`.
async fn label(nodes: &Api<Node>, host: &str, value: Option<&str>) -> anyhow::Result<()> {
    nodes
        .patch(
            host,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {KEY: value}}})),
        )
        .await
        .with_context(|| format!("labelling Node {host}"))?;
    Ok(())
}

/// The Node the pod of GarageNode `gn` runs on.
async fn host_of(w: &World<'_>, gn: &str) -> anyhow::Result<String> {
    w.pods
        .get(&format!("{gn}-0"))
        .await?
        .spec
        .and_then(|s| s.node_name)
        .with_context(|| format!("the pod of {gn} is not scheduled"))
}

/// Waits until every member's published zone and layout role are the label of its pod's
/// Node (`spec.zone` where the Node has none) with nothing staged, then returns the zones.
async fn follow(w: &World<'_>, what: &str) -> anyhow::Result<BTreeMap<String, String>> {
    let admin = admin_client(&w.client, w.sim, 0).await?;
    let nodes: Api<Node> = Api::all(w.client.clone());
    let last = std::sync::Arc::new(std::sync::Mutex::new((String::new(), BTreeMap::new())));
    let seen = last.clone();
    let done = wait(what, Duration::from_secs(300), || {
        let (admin, nodes, gns, pods, last) = (
            admin.clone(),
            nodes.clone(),
            w.gns.clone(),
            w.pods.clone(),
            last.clone(),
        );
        async move {
            let layout = admin.layout().await?;
            let mut zones = BTreeMap::new();
            let mut wrong = Vec::new();
            for gn in gns.list(&Default::default()).await?.items {
                let name = gn.name_any();
                let Some(host) = pods
                    .get_opt(&format!("{name}-0"))
                    .await?
                    .and_then(|p| p.spec)
                    .and_then(|s| s.node_name)
                else {
                    wrong.push(format!("{name}: no scheduled pod"));
                    continue;
                };
                let want = nodes
                    .get(&host)
                    .await?
                    .labels()
                    .get(KEY)
                    .cloned()
                    .unwrap_or_else(|| gn.spec.zone.clone());
                let status = gn.status.clone().unwrap_or_default();
                let role = status.node_id.as_deref().and_then(|id| {
                    layout
                        .roles
                        .iter()
                        .find(|r| r.id.as_str() == id)
                        .map(|r| r.zone.clone())
                });
                if status.zone.as_deref() != Some(want.as_str()) || role.as_deref() != Some(&want) {
                    wrong.push(format!(
                        "{name} on {host}: want {want}, status {:?}, role {role:?}",
                        status.zone
                    ));
                }
                zones.insert(name, want);
            }
            if !layout.staged_role_changes.is_empty() {
                wrong.push(format!(
                    "{} changes staged",
                    layout.staged_role_changes.len()
                ));
            }
            let ok = wrong.is_empty();
            *last.lock().unwrap() = (wrong.join("; "), zones);
            Ok(ok)
        }
    })
    .await;
    let (wrong, zones) = seen.lock().unwrap().clone();
    done.with_context(|| format!("last seen: {wrong}"))?;
    Ok(zones)
}
