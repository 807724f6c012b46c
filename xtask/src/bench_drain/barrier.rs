//! The floor's end condition, read through the Admin API: the same evidence the operator's
//! drain proof waits for (decide/src/machine/drain.rs), taken by hand.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context as _, Result};
use garage_admin::{AdminClient, NodeId, NodeTarget, WorkerFilter, WorkerInfo, WorkerState};

/// Name Garage gives a Blocks repair worker.
const REPAIR_WORKER: &str = "Block repair worker";
/// Prefix of Garage's block resync workers.
const RESYNC_WORKER: &str = "Block resync worker";

/// Newest worker ID of each node, read before the repairs are launched: a repair worker
/// above it is one of ours.
pub(crate) async fn baselines(admin: &AdminClient) -> Result<BTreeMap<NodeId, u64>> {
    let workers = admin
        .list_workers(&NodeTarget::All, WorkerFilter::default())
        .await?
        .into_complete()
        .context("listing every node's workers")?;
    Ok(workers
        .into_iter()
        .map(|(id, list)| (id, list.iter().map(|w| w.id).max().unwrap_or(0)))
        .collect())
}

/// One reading of the end condition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    /// No layout version is still being synced.
    pub settled: bool,
    /// Nodes whose launched Blocks repair is listed, done, and hit no error.
    pub repaired: BTreeSet<NodeId>,
    /// Block errors plus resync workers' persistent errors, over every node.
    pub errors: u64,
    /// Nodes with an enabled resync worker that is not idle.
    pub busy: usize,
}

impl Reading {
    /// Everything the proof needs holds now, given the nodes whose repair was seen done
    /// (a done worker never runs again); what is left are the waits.
    pub(crate) fn holds(&self, repaired: usize, nodes: usize) -> bool {
        self.settled && repaired == nodes && self.errors == 0 && self.busy == 0
    }
}

/// Reads the layout history, every node's workers and block errors.
pub(crate) async fn read(
    admin: &AdminClient,
    baselines: &BTreeMap<NodeId, u64>,
) -> Result<Reading> {
    let settled = admin.layout_history().await?.is_settled();
    let workers = admin
        .list_workers(&NodeTarget::All, WorkerFilter::default())
        .await?
        .into_complete()
        .context("listing every node's workers")?;
    let block_errors = admin
        .list_block_errors(&NodeTarget::All)
        .await?
        .into_complete()
        .context("listing every node's block errors")?;
    let repaired = baselines
        .iter()
        .filter(|(node, baseline)| {
            workers
                .get(*node)
                .is_some_and(|w| repair_done(w, **baseline))
        })
        .map(|(node, _)| node.clone())
        .collect();
    let errors = workers
        .values()
        .flatten()
        .filter(|w| w.name.starts_with(RESYNC_WORKER))
        .map(|w| w.persistent_errors.unwrap_or(0))
        .sum::<u64>()
        + block_errors.values().map(|e| e.len() as u64).sum::<u64>();
    let busy = workers.values().filter(|w| resync_busy(w)).count();
    Ok(Reading {
        settled,
        repaired,
        errors,
        busy,
    })
}

/// The newest repair worker above `baseline` exists, is done and counted no error.
fn repair_done(workers: &[WorkerInfo], baseline: u64) -> bool {
    workers
        .iter()
        .filter(|w| w.name == REPAIR_WORKER && w.id > baseline)
        .max_by_key(|w| w.id)
        .is_some_and(|w| w.state == WorkerState::Done && w.errors == 0)
}

/// Garage's resync queue also holds deletions delayed by ten minutes, so its length proves
/// nothing; an enabled resync worker that is working does.
fn resync_busy(workers: &[WorkerInfo]) -> bool {
    workers.iter().any(|w| {
        w.name.starts_with(RESYNC_WORKER)
            && !w.freeform.iter().any(|f| f.contains("disabled"))
            && w.state != WorkerState::Idle
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(id: u64, name: &str, state: WorkerState, errors: u64) -> WorkerInfo {
        WorkerInfo {
            id,
            name: name.into(),
            state,
            errors,
            consecutive_errors: 0,
            last_error: None,
            tranquility: None,
            progress: None,
            queue_length: None,
            persistent_errors: None,
            freeform: Vec::new(),
        }
    }

    #[test]
    fn only_a_repair_above_the_baseline_counts() {
        let old = worker(3, REPAIR_WORKER, WorkerState::Done, 0);
        assert!(!repair_done(std::slice::from_ref(&old), 5));
        let ours = worker(6, REPAIR_WORKER, WorkerState::Busy, 0);
        assert!(!repair_done(&[old.clone(), ours], 5));
        let done = worker(6, REPAIR_WORKER, WorkerState::Done, 0);
        assert!(repair_done(&[old.clone(), done], 5));
        let failed = worker(6, REPAIR_WORKER, WorkerState::Done, 2);
        assert!(!repair_done(&[old, failed], 5));
    }

    #[test]
    fn a_disabled_resync_worker_is_not_busy() {
        let mut disabled = worker(1, "Block resync worker #2", WorkerState::Busy, 0);
        disabled.freeform = vec!["This worker is currently disabled".into()];
        assert!(!resync_busy(std::slice::from_ref(&disabled)));
        let busy = worker(2, "Block resync worker #1", WorkerState::Busy, 0);
        assert!(resync_busy(&[disabled, busy]));
    }
}
