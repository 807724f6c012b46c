//! DELETE of a GarageCluster (GC-D1..GC-D11): a federated site retires
//! only through a prepared, proven Drain.

use shared_types::conditions::cluster::CONDITION_STORAGE_DRAIN_READY;
use shared_types::conditions::reason::REASON_COMPLETED;
use shared_types::garage_cluster::common::{
    ConsistencyMode, DeletionPolicy, DrainActorKind, StorageDrainStatus, UnverifiedPeersPolicy,
};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::ANNOTATION_DRAIN;

use super::federation::ASSUME_CONSISTENT_WARNING;
use super::tiers::Shape;
use crate::admission::shared::node_id::is_canonical_id_set;
use crate::admission::shared::readiness::drain_readiness;
use crate::admission::shared::replication::{effective_consistency, effective_peer_policy};
use crate::admission::{Context, Verdict};
use crate::convert::V1BETA2;

/// SH-20 without the target-hash comparison (see docs/compatibility/admission-cluster.md).
fn terminal_token(c: &GarageCluster, d: &StorageDrainStatus) -> Result<(), String> {
    let a = d.actor.as_ref().ok_or("the drain record has no actor")?;
    let uid = c.metadata.uid.as_deref().unwrap_or_default();
    let same = a.api_version.as_deref() == Some(V1BETA2)
        && a.kind == Some(DrainActorKind::GarageCluster)
        && a.namespace == c.metadata.namespace
        && a.name == c.metadata.name
        && !uid.trim().is_empty()
        && a.uid.as_deref() == Some(uid);
    if !same {
        return Err("terminal storage-drain actor does not match the expected Kubernetes object incarnation".into());
    }
    if d.transaction_id
        .as_deref()
        .is_none_or(|t| t.trim().is_empty())
    {
        return Err("the drain record has no transactionId".into());
    }
    match (d.started_at.as_ref(), d.completed_at.as_ref()) {
        (Some(s), Some(e)) if e.0 >= s.0 => {}
        _ => {
            return Err(format!(
                "timestamps are invalid: wait for {CONDITION_STORAGE_DRAIN_READY}=True reason {REASON_COMPLETED}"
            ));
        }
    }
    let roles = d.role_removal_node_ids.clone().unwrap_or_default();
    let removed = d.removed_storage_node_ids.clone().unwrap_or_default();
    let unavailable = d.unavailable_source_node_ids.clone().unwrap_or_default();
    if ![&roles, &removed, &unavailable]
        .into_iter()
        .all(|ids| is_canonical_id_set(ids))
    {
        return Err(
            "node ID sets must be sorted, de-duplicated, lower-case 64-hex Garage node IDs".into(),
        );
    }
    if !removed.iter().all(|r| roles.contains(r))
        || !unavailable.iter().all(|u| removed.contains(u))
    {
        return Err("removed storage IDs must be a subset of role removals, and unavailable sources a subset of removed IDs".into());
    }
    if !d
        .target_hash
        .as_deref()
        .is_some_and(|h| h.starts_with("sha256:") && h.len() == 71)
    {
        return Err("targetHash is not a sha256 digest".into());
    }
    Ok(())
}

/// GC-D1..GC-D11.
pub fn check(old: Option<&GarageCluster>, ctx: &Context, verdict: &mut Verdict) {
    let Some(c) = old else { return };
    let spec = &c.spec;
    let shape = Shape::of(spec);
    if spec.storage.is_some() && shape.federated() && spec.deletion_policy.is_none() {
        verdict.deny("GC-D2", "spec.deletionPolicy", "deleting a federated GarageCluster requires an explicit spec.deletionPolicy: use Drain to retire this site safely, or Destroy only when the entire Garage store is being torn down");
        return;
    }
    let policy = spec.deletion_policy.unwrap_or(if shape.federated() {
        DeletionPolicy::Drain
    } else {
        DeletionPolicy::Destroy
    });
    if policy != DeletionPolicy::Drain || spec.storage.is_none() {
        return;
    }
    let drain = c.status.as_ref().and_then(|s| s.storage_drain.as_ref());
    if let Some(a) = drain
        .and_then(|d| d.actor.as_ref())
        .filter(|a| a.kind == Some(DrainActorKind::GarageNode))
    {
        verdict.deny("GC-D4", "status.storageDrain", format!("garageCluster cannot be deleted while GarageNode {}/{} owns storage-drain transaction {:?}", a.namespace.as_deref().unwrap_or_default(), a.name.as_deref().unwrap_or_default(), drain.and_then(|d| d.transaction_id.as_deref()).unwrap_or_default()));
        return;
    }
    let annotated = c
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_DRAIN))
        .is_some_and(|v| v == "true");
    let Some(d) = drain.filter(|_| annotated) else {
        verdict.deny("GC-D5", "metadata.annotations", format!("deletionPolicy: Drain is a prepared deletion: set annotation {ANNOTATION_DRAIN}=\"true\" and wait for {CONDITION_STORAGE_DRAIN_READY}=True reason {REASON_COMPLETED} before deleting the GarageCluster"));
        return;
    };
    if let Err(e) = terminal_token(c, d) {
        verdict.deny(
            "GC-D6",
            "status.storageDrain",
            format!("deletionPolicy: Drain terminal preparation is invalid: {e}"),
        );
        return;
    }
    if ctx
        .delete_options
        .as_ref()
        .and_then(|o| o.propagation_policy.as_deref())
        == Some("Foreground")
    {
        verdict.deny("GC-D7", "options.propagationPolicy", "foreground propagation is unsafe for deletionPolicy: Drain because Kubernetes may remove identity-bearing dependents before the GarageCluster finalizer proves block migration; use background/default propagation");
        return;
    }
    if effective_consistency(spec.replication.as_ref()) != ConsistencyMode::Consistent {
        verdict.deny("GC-D8", "spec.replication.consistencyMode", "deletionPolicy: Drain requires spec.replication.consistencyMode: consistent before deletion starts");
        return;
    }
    let assume = effective_peer_policy(spec.layout_management.as_ref())
        == UnverifiedPeersPolicy::AssumeConsistent;
    if shape.federated() && !assume {
        verdict.deny("GC-D9", "spec.layoutManagement.drain.unverifiedPeersPolicy", "deleting a federated storage site with deletionPolicy: Drain requires spec.layoutManagement.drain.unverifiedPeersPolicy: AssumeConsistent");
        return;
    }
    if d.removed_storage_node_ids
        .as_ref()
        .is_some_and(|r| !r.is_empty())
        && let Err(e) = drain_readiness(c)
    {
        verdict.deny("GC-D10", "status", e);
        return;
    }
    if assume {
        verdict.warn("GC-W3", ASSUME_CONSISTENT_WARNING);
    }
}
