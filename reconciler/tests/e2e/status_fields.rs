//! What `kubectl get` shows of a converged cluster: every GarageNode `Connected` and
//! `InLayout`, the cluster's `Gateway` column 0 and no `Diagnosis`, and the layout history in
//! status matching what Garage reports.

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
    let status = c.status.context("no status")?;
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
    println!(
        "status: every GarageNode Connected and InLayout, Gateway 0, no Diagnosis, layout history at version {}",
        history.current_version
    );
    Ok(())
}
