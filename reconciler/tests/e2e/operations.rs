//! One-shot operational annotations on a running cluster: each well-formed request runs
//! through the Admin API, is recorded in `status.lastOperation` and its annotation removed; a
//! malformed one is refused at admission with the expected form. Every object reads back
//! after.

use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use kube::api::{Patch, PatchParams};
use localcluster::wait_until as wait;
use serde_json::json;
use shared_types::keys::annotation::{
    ANNOTATION_RETRY_BLOCK_RESYNC, ANNOTATION_SCRUB_COMMAND, ANNOTATION_TRIGGER_REPAIR,
    ANNOTATION_TRIGGER_SNAPSHOT,
};

use crate::support::*;
use crate::{NAME, World};

async fn annotate(w: &World<'_>, key: &str, value: &str) -> anyhow::Result<()> {
    w.clusters
        .patch(
            NAME,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {key: value}}})),
        )
        .await?;
    Ok(())
}

/// Runs `key=value` and waits until the annotation is gone and `lastOperation` reports a type
/// starting with `record` as succeeded.
async fn run_one(w: &World<'_>, key: &str, value: &str, record: &str) -> anyhow::Result<()> {
    annotate(w, key, value).await?;
    wait(
        &format!("{key}={value} run and recorded as {record}"),
        Duration::from_secs(120),
        || async {
            let c = w.clusters.get(NAME).await?;
            let still = c
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(key));
            let last = c.status.as_ref().and_then(|s| s.last_operation.as_ref());
            Ok(!still
                && last.is_some_and(|l| {
                    l.type_.as_deref().is_some_and(|t| t.starts_with(record))
                        && l.succeeded == Some(true)
                }))
        },
    )
    .await
}

pub(crate) async fn run(w: &World<'_>) -> anyhow::Result<()> {
    let t = Instant::now();
    run_one(w, ANNOTATION_TRIGGER_SNAPSHOT, "true", "Snapshot").await?;
    run_one(w, ANNOTATION_TRIGGER_REPAIR, "Tables", "Repair:Tables").await?;
    run_one(w, ANNOTATION_SCRUB_COMMAND, "start", "Scrub:start").await?;
    run_one(w, ANNOTATION_SCRUB_COMMAND, "cancel", "Scrub:cancel").await?;
    run_one(
        w,
        ANNOTATION_RETRY_BLOCK_RESYNC,
        "true",
        "RetryBlockResync:0",
    )
    .await?;
    let refused = annotate(w, ANNOTATION_TRIGGER_REPAIR, "Scrub").await;
    let message = format!(
        "{:?}",
        refused.err().context("a malformed repair was admitted")?
    );
    ensure!(
        message.contains("GC-OP1") && message.contains("Tables"),
        "the refusal does not name the rule and the expected form: {message}"
    );
    let store = w.store.as_ref().context("no object store")?;
    let pod = format!("{NAME}-storage-0-0");
    verify(store, &s3(w.sim, &pod)?, &w.checksummed).await?;
    println!(
        "operations: snapshot, Tables repair, scrub start and cancel, resync retry each ran, recorded in status.lastOperation, annotation removed; a malformed repair refused (GC-OP1); objects read back, in {:.1}s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
