//! What `kubectl get` shows of a converged cluster: every GarageNode `Connected` and
//! `InLayout`, the cluster's `Gateway` column 0 and no `Diagnosis`, the layout history in
//! status matching what Garage reports, and the health fields: one of Garage's node IDs as
//! `clusterId`, Garage's build (version, Rust version, features) as a member reports it, the
//! Services' endpoints, `QuorumAtRisk` and `PeerUnreachable` both False; and on each member's
//! GarageNode what Garage reports of it: its host name, the partitions its role stores, its
//! filesystems' totals and use, no `lastSeen` while it is up; and `storageStats`, the data
//! filesystems Garage reports summed (their use within the percent the record may lag).

use std::time::Duration;

use anyhow::{Context as _, ensure};
use localcluster::wait_until as wait;

use crate::support::*;
use crate::{NAME, World};

pub(crate) async fn columns(w: &World<'_>) -> anyhow::Result<()> {
    wait(
        "every GarageNode Connected and InLayout",
        Duration::from_secs(120),
        || async {
            let nodes = w.gns.list(&Default::default()).await?.items;
            Ok(!nodes.is_empty()
                && nodes.iter().all(|n| {
                    n.status
                        .as_ref()
                        .is_some_and(|s| s.connected == Some(true) && s.in_layout == Some(true))
                }))
        },
    )
    .await?;
    wait_ready(&w.clusters, Duration::from_secs(120)).await?;
    let pod = format!("{NAME}-storage-0-0");
    let admin = admin_client_as_mounted(&w.client, w.sim, &pod).await?;
    let history = admin.layout_history().await?;
    let c = w.clusters.get(NAME).await?;
    let status = c.status.clone().context("no status")?;
    ensure!(
        status.gateway_replicas == Some(0) && status.layout_diagnosis.is_none(),
        "Gateway {:?}, Diagnosis {:?}",
        status.gateway_replicas,
        status.layout_diagnosis
    );
    let recorded = status.layout_history.context("no layout history")?;
    ensure!(
        recorded.current_version == i64::try_from(history.current_version).ok(),
        "status.layoutHistory {recorded:?} is not Garage's {history:?}"
    );
    // The ID chosen when the cluster first reported (its smallest node ID then) stays while
    // Garage knows that node, even once a node with a smaller ID joined.
    let garage = admin.cluster_status().await?;
    let known: Vec<&str> = garage.nodes.iter().map(|n| n.id.as_str()).collect();
    ensure!(
        status
            .cluster_id
            .as_deref()
            .is_some_and(|id| known.contains(&id)),
        "clusterId {:?} is none of Garage's nodes {known:?}",
        status.cluster_id
    );
    // The build as the member reports it itself.
    let (_, info) = admin
        .node_info(&reconciler::garage::NodeTarget::Local)
        .await?
        .into_single()?;
    let build = status.build_info.clone().unwrap_or_default();
    let version = build.version.clone();
    ensure!(
        version.as_deref() == Some(info.garage_version.as_str())
            && build.rust_version.as_deref() == Some(info.rust_version.as_str())
            && build.features == info.garage_features
            && build
                .features
                .as_ref()
                .is_some_and(|f| f.iter().any(|f| f == "k2v")),
        "buildInfo {build:?}, the member reports {info:?}"
    );
    let endpoints = status.endpoints.context("no endpoints")?;
    let ns = crate::ns();
    ensure!(
        endpoints.s3 == Some(format!("{NAME}.{ns}.svc.cluster.local:3900"))
            && endpoints.admin == Some(format!("{NAME}-admin.{ns}.svc.cluster.local:3903"))
            && endpoints.rpc == Some(format!("{NAME}-headless.{ns}.svc.cluster.local:3901")),
        "endpoints {endpoints:?}"
    );
    for type_ in ["QuorumAtRisk", "PeerUnreachable"] {
        ensure!(
            condition(&c, type_).as_deref() == Some("False"),
            "{type_} is {:?}",
            condition(&c, type_)
        );
    }
    member_facts(w, &garage, &admin.layout().await?).await?;
    storage_stats(status.storage_stats.as_ref(), &garage)?;
    println!(
        "status: every GarageNode Connected and InLayout (with Garage's host name, partitions and filesystems, no lastSeen), Gateway 0, no Diagnosis, layout history at version {}, clusterId one of Garage's nodes, Garage {}, endpoints on the Services, QuorumAtRisk and PeerUnreachable False, storageStats the sum of the data filesystems Garage reports",
        history.current_version,
        version.unwrap_or_default()
    );
    Ok(())
}

/// Each member's GarageNode carries what Garage reports of it.
async fn member_facts(
    w: &World<'_>,
    garage: &reconciler::garage::ClusterStatus,
    layout: &reconciler::garage::ClusterLayout,
) -> anyhow::Result<()> {
    for node in w.gns.list(&Default::default()).await?.items {
        let s = node.status.clone().context("no status")?;
        let id = s.node_id.clone().context("no node ID")?;
        let reported = garage
            .nodes
            .iter()
            .find(|n| n.id.as_str() == id)
            .with_context(|| format!("Garage does not report {id}"))?;
        let stored = layout
            .roles
            .iter()
            .find(|r| r.id.as_str() == id)
            .and_then(|r| r.stored_partitions)
            .and_then(|p| i64::try_from(p).ok());
        let data = s.data_partition.clone().unwrap_or_default();
        let total = reported
            .data_partition
            .as_ref()
            .map(|d| d.total.to_string());
        ensure!(
            s.hostname == reported.hostname
                && s.partitions == stored
                && s.partitions.is_some()
                && data.total.as_ref().map(|q| q.0.clone()) == total
                && data.used_percent.is_some_and(|p| (0..=100).contains(&p))
                && s.metadata_partition.is_some()
                && s.last_seen.is_none(),
            "GarageNode {id}: hostname {:?}, partitions {:?}, data {data:?}, lastSeen {:?}; Garage reports {reported:?} and {stored:?} partitions",
            s.hostname,
            s.partitions,
            s.last_seen
        );
    }
    Ok(())
}

/// `status.storageStats` is the sum of the data filesystems Garage reports: the same total,
/// used and available adding up to it, and the use within the percent of the total by which
/// the record may lag behind Garage.
fn storage_stats(
    stats: Option<&shared_types::garage_cluster::common::StorageStats>,
    garage: &reconciler::garage::ClusterStatus,
) -> anyhow::Result<()> {
    let stats = stats.context("no storageStats")?;
    let bytes = |q: &Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
        q.as_ref()
            .and_then(|q| shared_types::quantity::QuantityValue::try_from(q).ok())
            .and_then(|v| v.value())
            .and_then(|v| u64::try_from(v).ok())
    };
    let (total, available) = garage
        .nodes
        .iter()
        .filter_map(|n| n.data_partition.as_ref())
        .fold((0, 0), |(t, a), p| (t + p.total, a + p.available));
    let (t, u, a) = (
        bytes(&stats.total_capacity),
        bytes(&stats.used_capacity),
        bytes(&stats.available_capacity),
    );
    let used_now = total - available;
    ensure!(
        total > 0
            && t == Some(total)
            && u.zip(a).is_some_and(|(u, a)| u + a == total)
            && u.is_some_and(|u| u.abs_diff(used_now) * 100 <= total),
        "storageStats {stats:?}; Garage reports {total} bytes in all, {available} free"
    );
    Ok(())
}
