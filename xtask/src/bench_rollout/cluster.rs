//! The GarageCluster both sides start from, brought up by the operator, and taken down again
//! afterwards so that the next run starts from nothing.

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use garage_admin::AdminToken;
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt as _};
use shared_types::garage_cluster::common::NetworkConfig;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::label::{LABEL_CLUSTER, LABEL_TIER, value::TIER_STORAGE};

use super::stage::Stage;
use crate::bench_reconciler::{NS, secs, timeline};

/// Generous: on two shared cores, ten members start ten garage processes.
const READY_TIMEOUT: Duration = Duration::from_secs(420);
const DELETE_TIMEOUT: Duration = Duration::from_secs(240);
/// Garage's RPC timeout in the bench's clusters, as the e2e sets it.
const RPC_TIMEOUT: &str = "15s";

/// The bench reconciler's manifest (Auto layout, factor 3, local-sim claims) with `members`
/// members and an RPC timeout of [`RPC_TIMEOUT`].
fn manifest(name: &str, members: usize) -> Result<GarageCluster> {
    let mut cluster = crate::bench_reconciler::manifest(name, false)?;
    cluster
        .spec
        .storage
        .as_mut()
        .context("the bench manifest has no storage section")?
        .replicas = Some(i32::try_from(members)?);
    cluster.spec.network = Some(NetworkConfig {
        rpc_timeout: Some(RPC_TIMEOUT.into()),
        ..NetworkConfig::default()
    });
    Ok(cluster)
}

/// Creates cluster `name` with `members` members and waits until the operator reports it
/// Ready; prints how long that took.
pub(crate) async fn create_ready(stage: &mut Stage, name: &str, members: usize) -> Result<()> {
    let clusters: Api<GarageCluster> = Api::namespaced(stage.client.clone(), NS);
    let began = Instant::now();
    clusters
        .create(&PostParams::default(), &manifest(name, members)?)
        .await
        .with_context(|| format!("creating GarageCluster {NS}/{name}"))?;
    loop {
        stage.check_alive()?;
        let cluster = clusters.get(name).await?;
        if timeline::is_ready(&cluster) {
            break;
        }
        if began.elapsed() > READY_TIMEOUT {
            bail!(
                "{NS}/{name} was not Ready {} s after its creation; status {}",
                READY_TIMEOUT.as_secs(),
                serde_json::to_string(&cluster.status)?
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    println!(
        "    {name}: {members} members Ready {:.2} s after the create",
        secs(began.elapsed())
    );
    Ok(())
}

/// The admin token the operator generated for cluster `name`.
pub(crate) async fn admin_token(stage: &Stage, name: &str) -> Result<AdminToken> {
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
    Ok(AdminToken::new(String::from_utf8(token.0.clone())?))
}

/// The storage pods of cluster `name`, terminating ones included, by name.
pub(crate) async fn storage_pods(stage: &Stage, name: &str) -> Result<Vec<Pod>> {
    let selector = format!("{LABEL_CLUSTER}={name},{LABEL_TIER}={TIER_STORAGE}");
    let mut pods = Api::<Pod>::namespaced(stage.client.clone(), NS)
        .list(&ListParams::default().labels(&selector))
        .await
        .with_context(|| format!("listing the storage pods of {NS}/{name}"))?
        .items;
    pods.sort_by_key(|p| p.name_any());
    Ok(pods)
}

/// Ready condition True, and not being deleted.
pub(crate) fn pod_ready(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_none()
        && pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Deletes the cluster and waits until the finalizers let it go and its pods are gone. With
/// the reconciler stopped, it is started again once the deletion is requested.
pub(crate) async fn delete(stage: &mut Stage, name: &str) -> Result<()> {
    let clusters: Api<GarageCluster> = Api::namespaced(stage.client.clone(), NS);
    clusters
        .delete(name, &DeleteParams::default())
        .await
        .with_context(|| format!("deleting GarageCluster {NS}/{name}"))?;
    if stage.reconciler().is_err() {
        stage.start_reconciler().await?;
    }
    let deadline = Instant::now() + DELETE_TIMEOUT;
    loop {
        stage.check_alive()?;
        if clusters.get_opt(name).await?.is_none() && storage_pods(stage, name).await?.is_empty() {
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
