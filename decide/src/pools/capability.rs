//! The scheduling-gate capability probe that node-local pools rest on.
//!
//! A pool pod is created behind the `node-local-pool-activation` scheduling gate, and the gate
//! is the fence that keeps a late pod of a retired DaemonSet off a disk a newer pod mounts. The
//! fence holds only if the API server keeps the gate and the scheduler honours it, so before
//! anything is created for a pool the operator proves both, in its namespace: the server is
//! 1.27 or newer, a server-side dry run of a gated DaemonSet keeps the gate in its template,
//! and a real gated Pod is reported `PodScheduled=False`, reason `SchedulingGated`, by the
//! scheduler. The evidence is cached for at most [`EVIDENCE_TTL`] from the scheduler's
//! transition, so a changed control plane is noticed; a reconciliation that began from the
//! evidence keeps using it to its end.
//!
//! [`verdict`] judges what was read; the reconciler's probe does the reads and writes.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use shared_types::conditions::{kubernetes, reason};
use shared_types::keys::scheduling_gate::SCHEDULING_GATE_NODE_LOCAL_POOL_CAPABILITY;

/// The gate on the probe pod (pool pods carry the activation gate instead).
pub const PROBE_GATE: &str = SCHEDULING_GATE_NODE_LOCAL_POOL_CAPABILITY;
/// How long a proof stays good, from the scheduler's `PodScheduled` transition.
pub const EVIDENCE_TTL: Duration = Duration::from_secs(30);
/// Oldest Kubernetes minor version whose scheduling gates are on by default (GA in 1.30,
/// beta and enabled from 1.27).
pub const MIN_MINOR: u32 = 27;

/// What the probe established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Gates are kept and honoured; proven at this time.
    Proven(Timestamp),
    /// The probe pod has not been looked at by the scheduler yet; look again shortly.
    Pending(String),
    /// Pools cannot run here; the condition reason and why.
    Unavailable {
        /// `NodeLocalPoolsReady` reason.
        reason: &'static str,
        /// Sentence for the condition.
        message: String,
    },
}

/// The verdict from what was read: the server's version, whether the dry-run DaemonSet kept
/// its gate, and the probe pod as the API server returns it now.
pub fn verdict(major: &str, minor: &str, dry_run_kept_gate: bool, pod: Option<&Pod>) -> Verdict {
    let minor_number: Option<u32> = minor
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok();
    if major != "1" || minor_number.is_none_or(|m| m < MIN_MINOR) {
        return Verdict::Unavailable {
            reason: reason::REASON_UNSUPPORTED_KUBERNETES_VERSION,
            message: format!(
                "node-local pools need Kubernetes 1.{MIN_MINOR} or newer (scheduling gates); the API server reports {major}.{minor}. Nothing is created for the pools"
            ),
        };
    }
    if !dry_run_kept_gate {
        return Verdict::Unavailable {
            reason: reason::REASON_SCHEDULING_GATES_UNAVAILABLE,
            message: "a server-side dry run of a gated DaemonSet dropped its scheduling gate; the API server does not keep Pod scheduling gates, so pool pods could not be fenced. Nothing is created for the pools".into(),
        };
    }
    let Some(pod) = pod else {
        return Verdict::Pending("the gated probe pod is being created".into());
    };
    let spec_gates = pod
        .spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| g.iter().any(|g| g.name == PROBE_GATE));
    if !spec_gates {
        return Verdict::Unavailable {
            reason: reason::REASON_SCHEDULING_GATES_UNAVAILABLE,
            message: "the API server dropped the scheduling gate of the probe pod; pool pods could not be fenced. Nothing is created for the pools".into(),
        };
    }
    let status = pod.status.as_ref();
    if pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some()
    {
        return Verdict::Unavailable {
            reason: reason::REASON_SCHEDULING_GATES_UNAVAILABLE,
            message: "the gated probe pod was bound to a Node; the scheduler does not honour scheduling gates. Nothing is created for the pools".into(),
        };
    }
    let scheduled = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == "PodScheduled"));
    match scheduled {
        Some(c)
            if c.status == "False"
                && c.reason.as_deref() == Some(kubernetes::REASON_SCHEDULING_GATED) =>
        {
            match &c.last_transition_time {
                Some(t) => Verdict::Proven(t.0),
                None => Verdict::Pending(
                    "the probe pod's PodScheduled condition has no transition time yet".into(),
                ),
            }
        }
        Some(c) => Verdict::Unavailable {
            reason: reason::REASON_SCHEDULING_GATE_CAPABILITY_UNKNOWN,
            message: format!(
                "the scheduler reported the gated probe pod PodScheduled={} reason {:?}, not SchedulingGated; the gate's effect is not proven. Nothing is created for the pools",
                c.status, c.reason
            ),
        },
        None => Verdict::Pending(
            "waiting for the scheduler to report the gated probe pod SchedulingGated".into(),
        ),
    }
}

/// Per-namespace evidence, shared by every reconciliation of the process.
#[derive(Debug, Default)]
pub struct EvidenceCache {
    proven: Mutex<BTreeMap<String, Timestamp>>,
    /// The last verdict that was not a proof, per namespace: what a pass reports until the
    /// probe proves the gate.
    last: Mutex<BTreeMap<String, Verdict>>,
}

impl EvidenceCache {
    /// The proof for `namespace`, when it is younger than [`EVIDENCE_TTL`] at `now`.
    pub fn fresh(&self, namespace: &str, now: Timestamp) -> Option<Timestamp> {
        let map = self.proven.lock().unwrap_or_else(|p| p.into_inner());
        map.get(namespace)
            .copied()
            .filter(|at| now.duration_since(*at).unsigned_abs() < EVIDENCE_TTL)
    }

    /// Records a proof for `namespace`, made at `at`.
    pub fn record(&self, namespace: &str, at: Timestamp) {
        self.proven
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(namespace.to_owned(), at);
        self.last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(namespace);
    }

    /// Records what a probe run established for `namespace`.
    pub fn record_verdict(&self, namespace: &str, verdict: &Verdict) {
        match verdict {
            Verdict::Proven(at) => self.record(namespace, *at),
            other => {
                self.last
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(namespace.to_owned(), other.clone());
            }
        }
    }

    /// What a pass in `namespace` decides from at `now`: a fresh proof, else the last verdict
    /// that was not one, else `None` (never probed, or the proof expired with nothing since).
    pub fn observed(&self, namespace: &str, now: Timestamp) -> Option<Verdict> {
        if let Some(at) = self.fresh(namespace, now) {
            return Some(Verdict::Proven(at));
        }
        self.last
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(namespace)
            .cloned()
    }
}

#[cfg(test)]
mod tests;
