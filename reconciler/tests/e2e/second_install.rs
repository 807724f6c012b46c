//! Site E's second install: one more `garage-reconciler` process, under a Lease of its own
//! and so another install, runs beside the two of `chaos` for a short while. The cluster
//! names the first install in its `managed-by-install` annotation; the second must leave it
//! alone: a `ManagedByAnotherInstall` Warning Event on the cluster naming the first install,
//! no API write of its own, the annotation unchanged, Garage's layout version unchanged.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::ListParams;
use localcluster::wait_until as wait;
use shared_types::keys::annotation::ANNOTATION_MANAGED_BY_INSTALL;

use crate::chaos::{Chaos, LEASE};
use crate::support::admin_client;
use crate::{NAME, NS_E, World};

/// The second install's Lease.
const OTHER_LEASE: &str = "second-install";
/// The Event reason the second install warns with.
const REASON: &str = "ManagedByAnotherInstall";

/// The cluster's `managed-by-install` annotation.
async fn managed_by(w: &World<'_>) -> anyhow::Result<Option<String>> {
    Ok(w.clusters
        .get(NAME)
        .await?
        .metadata
        .annotations
        .and_then(|a| a.get(ANNOTATION_MANAGED_BY_INSTALL).cloned()))
}

/// The note of a `ManagedByAnotherInstall` Warning Event on the cluster, if there is one.
async fn warning(events: &Api<Event>) -> anyhow::Result<Option<String>> {
    Ok(events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .find(|e| {
            let about_cluster = e.regarding.as_ref().is_some_and(|r| {
                r.kind.as_deref() == Some("GarageCluster") && r.name.as_deref() == Some(NAME)
            });
            about_cluster
                && e.reason.as_deref() == Some(REASON)
                && e.type_.as_deref() == Some("Warning")
        })
        .map(|e| e.note.unwrap_or_default()))
}

/// Starts the second install, waits for its warning, stops it, and checks that it changed
/// nothing.
pub(crate) async fn leaves_it_alone(w: &World<'_>, chaos: &Chaos) -> anyhow::Result<()> {
    let first = format!("{NS_E}/{LEASE}");
    ensure!(
        managed_by(w).await?.as_deref() == Some(first.as_str()),
        "the cluster does not name the install that bootstrapped it ({first}): {:?}",
        managed_by(w).await?
    );
    let admin = admin_client(&w.client, w.sim, 0).await?;
    let version = admin.layout().await?.version;
    let events = Api::<Event>::namespaced(w.client.clone(), NS_E);
    let t = Instant::now();
    let second = chaos.start_other_install("second-install", OTHER_LEASE)?;
    let result = async {
        wait(
            "the second install's ManagedByAnotherInstall Event",
            Duration::from_secs(45),
            || async { Ok(warning(&events).await?.is_some()) },
        )
        .await?;
        let note = warning(&events).await?.unwrap_or_default();
        ensure!(
            note.contains(&first) && note.contains("kubectl annotate"),
            "the warning does not name the first install and the hand-over: {note}"
        );
        let (_, writes) = second.counter("garage_reconciler_api_writes_total").await?;
        ensure!(
            writes == 0.0,
            "the second install made {writes} API writes for a cluster it does not manage"
        );
        Ok(note)
    }
    .await;
    second.shutdown().await;
    let note = result.with_context(|| {
        format!(
            "second install (its log is second-install.log beside {:?})",
            chaos.logs()
        )
    })?;
    ensure!(
        managed_by(w).await?.as_deref() == Some(first.as_str()),
        "the annotation changed while the second install ran: {:?}",
        managed_by(w).await?
    );
    let after = admin.layout().await?.version;
    ensure!(
        after == version,
        "the layout went from version {version} to {after} while the second install ran"
    );
    println!(
        "chaos: a second install ran {:.1}s beside the first: it warned ({}) and wrote nothing; the cluster still names {first}, layout version {version}",
        t.elapsed().as_secs_f64(),
        note.chars().take(80).collect::<String>()
    );
    Ok(())
}
