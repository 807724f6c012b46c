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
use crate::admission::shared::drain_token::{self, ExpectedActor, Required};
use crate::admission::shared::readiness::drain_readiness;
use crate::admission::shared::replication::{effective_consistency, effective_peer_policy};
use crate::admission::{Context, Verdict};
use crate::convert::V1BETA2;

/// GC-D6: SH-20 on the cluster's own drain record. The record must name this
/// exact GarageCluster incarnation and its `targetHash` must be the one SH-20
/// computes from its node sets, so a record copied from another object, or
/// edited after the fact, authorises nothing. No node ID is required: a site
/// retirement covers whatever roles the site held.
fn terminal_token(c: &GarageCluster, d: &StorageDrainStatus) -> Result<(), String> {
    let expected = ExpectedActor {
        api_version: V1BETA2,
        kind: DrainActorKind::GarageCluster,
        namespace: c.metadata.namespace.as_deref().unwrap_or_default(),
        name: c.metadata.name.as_deref().unwrap_or_default(),
        uid: c.metadata.uid.as_deref().unwrap_or_default(),
    };
    drain_token::verify(Some(d), &expected, &Required::default())
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
            format!("deletionPolicy: Drain terminal preparation is invalid: {e}; delete only once the operator has recorded this GarageCluster's own completed drain ({CONDITION_STORAGE_DRAIN_READY}=True reason {REASON_COMPLETED})"),
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
