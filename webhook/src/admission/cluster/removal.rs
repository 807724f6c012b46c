//! GC-S10: a positive-capacity membership removal (default-group scale-down,
//! pool removal, retained-pool selector change) must be a topology-only
//! update on a fully prepared old generation, so that no step of it can lose
//! the last copy of a block.

use shared_types::conditions::cluster::CONDITION_STORAGE_ROLLOUT_READY;
use shared_types::garage_cluster::common::{ConsistencyMode, LayoutPolicy, UnverifiedPeersPolicy};
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterSpec, NodeLocalPoolSpec};

use super::tiers::Shape;
use crate::admission::Verdict;
use crate::admission::shared::readiness::drain_readiness;
use crate::admission::shared::replication::{effective_consistency, effective_peer_policy};

/// Whether the update removes positive-capacity membership.
pub fn is_removal(old: &GarageClusterSpec, new: &GarageClusterSpec) -> bool {
    let (o, n) = (Shape::of(old), Shape::of(new));
    if o.storage().is_some() && n.storage().is_none() && (o.managed_default_pool() || o.has_pools())
    {
        return true;
    }
    if o.managed_default_pool()
        && n.storage().is_some()
        && n.storage_policy() != LayoutPolicy::Manual
        && n.storage_replicas() < o.storage_replicas()
    {
        return true;
    }
    o.pools().iter().any(|op| {
        n.pools()
            .iter()
            .find(|np| np.name == op.name)
            .is_none_or(|np| np.selector != op.selector)
    })
}

fn membership_neutral(spec: &GarageClusterSpec) -> GarageClusterSpec {
    let mut s = spec.clone();
    if let Some(st) = s.storage.as_mut() {
        st.replicas = Some(0);
        st.node_local_pools = None;
    }
    s
}

fn topology_only(old: &GarageClusterSpec, new: &GarageClusterSpec) -> bool {
    let new_pools = Shape::of(new).pools();
    let retained_ok = Shape::of(old).pools().iter().all(|op| {
        new_pools
            .iter()
            .find(|np| np.name == op.name)
            .is_none_or(|np| {
                NodeLocalPoolSpec {
                    selector: None,
                    ..np.clone()
                } == NodeLocalPoolSpec {
                    selector: None,
                    ..op.clone()
                }
            })
    });
    retained_ok && membership_neutral(old) == membership_neutral(new)
}

/// GC-S10 gates, cheapest first; the first failure is reported, as each
/// later gate assumes the earlier ones hold.
pub fn check(old: &GarageCluster, new: &GarageClusterSpec, verdict: &mut Verdict) {
    let os = &old.spec;
    if !is_removal(os, new) {
        return;
    }
    let r = "GC-S10";
    if !topology_only(os, new) {
        verdict.deny(r, "spec", format!("positive-capacity membership removal must be a topology-only update: apply workload, Garage configuration, and retained-pool changes first, wait for {CONDITION_STORAGE_ROLLOUT_READY}=True at that generation, then change only storage membership"));
        return;
    }
    if effective_consistency(os.replication.as_ref()) != ConsistencyMode::Consistent {
        verdict.deny(r, "spec.replication.consistencyMode", format!("positive-capacity removal is a two-step operation: first set spec.replication.consistencyMode: consistent and wait for {CONDITION_STORAGE_ROLLOUT_READY}=True at that generation; remove capacity in a later update"));
        return;
    }
    if effective_consistency(new.replication.as_ref()) != ConsistencyMode::Consistent {
        verdict.deny(r, "spec.replication.consistencyMode", "positive-capacity removal requires spec.replication.consistencyMode: consistent before the reversible topology edit is accepted");
        return;
    }
    let federated = Shape::of(os).federated() || Shape::of(new).federated();
    let assume = |s: &GarageClusterSpec| {
        effective_peer_policy(s.layout_management.as_ref())
            == UnverifiedPeersPolicy::AssumeConsistent
    };
    if federated && !(assume(os) && assume(new)) {
        verdict.deny(r, "spec.layoutManagement.drain.unverifiedPeersPolicy", format!("federated positive-capacity removal is a two-step operation: set spec.layoutManagement.drain.unverifiedPeersPolicy: AssumeConsistent and wait for {CONDITION_STORAGE_ROLLOUT_READY}=True at that generation; remove capacity in a later update"));
        return;
    }
    if let Err(reason) = drain_readiness(old) {
        verdict.deny(r, "status", format!("positive-capacity removal requires the old generation to be fully prepared before changing topology: {reason}"));
    }
}
