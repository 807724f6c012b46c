//! The parent side of a GarageNode: the referenced GarageCluster, the
//! canonical layout owner reached through `connectTo.clusterRef`, and the
//! parent states that freeze node changes (rollout, drain) or allow a
//! positive-capacity removal (GN-DR).

use crate::admission::Context;
use crate::admission::shared::readiness::fully_replicated;
use crate::admission::shared::replication::effective_consistency;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use shared_types::conditions::cluster::{
    CONDITION_MANAGEMENT_HANDLE_READY, CONDITION_STORAGE_ROLLOUT_READY,
};
use shared_types::conditions::reason::REASON_STORAGE_ROLLING_OUT;
use shared_types::garage_cluster::common::ConsistencyMode;
use shared_types::garage_cluster::v1beta2::GarageCluster;

/// `namespace/name` of a cluster, for messages.
pub fn key(cluster: &GarageCluster) -> String {
    format!(
        "{}/{}",
        cluster.metadata.namespace.as_deref().unwrap_or_default(),
        cluster.metadata.name.as_deref().unwrap_or_default()
    )
}

/// The GarageCluster `namespace/name` in the snapshot.
pub fn find<'a>(ctx: &'a Context, namespace: &str, name: &str) -> Option<&'a GarageCluster> {
    ctx.garage_clusters.iter().find(|c| {
        c.metadata.namespace.as_deref() == Some(namespace)
            && c.metadata.name.as_deref() == Some(name)
    })
}

/// A connection-only handle: connectTo without storage or gateway.
pub fn is_management_handle(cluster: &GarageCluster) -> bool {
    let spec = &cluster.spec;
    spec.connect_to.is_some() && spec.storage.is_none() && spec.gateway.is_none()
}

/// True while the cluster object is being deleted.
pub fn is_deleting(cluster: &GarageCluster) -> bool {
    cluster.metadata.deletion_timestamp.is_some()
}

/// The canonical layout owner of `start`: follows `connectTo.clusterRef`
/// until a cluster that owns the layout. Fails on a cycle or on a reference
/// the snapshot does not hold, because the owner then cannot be proven.
pub fn layout_owner<'a>(
    ctx: &'a Context,
    start: &'a GarageCluster,
) -> Result<&'a GarageCluster, String> {
    let mut current = start;
    let mut seen = vec![key(start)];
    loop {
        let spec = &current.spec;
        let Some(connect) = &spec.connect_to else {
            return Ok(current);
        };
        let endpoint = connect.admin_api_endpoint.as_deref().unwrap_or_default();
        if spec.storage.is_some() || (is_management_handle(current) && !endpoint.is_empty()) {
            return Ok(current);
        }
        let Some(reference) = &connect.cluster_ref else {
            return Ok(current);
        };
        let namespace = match reference.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns,
            _ => current.metadata.namespace.as_deref().unwrap_or_default(),
        };
        let next_key = format!("{namespace}/{}", reference.name);
        if seen.contains(&next_key) {
            return Err(format!(
                "cyclic GarageCluster connectTo.clusterRef chain at {next_key}"
            ));
        }
        current = find(ctx, namespace, &reference.name).ok_or_else(|| {
            format!(
                "GarageCluster {next_key} referenced by {}.spec.connectTo.clusterRef was not found",
                key(current)
            )
        })?;
        seen.push(next_key);
    }
}

fn condition<'a>(cluster: &'a GarageCluster, kind: &str) -> Option<&'a Condition> {
    cluster
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
}

fn true_at_generation(cluster: &GarageCluster, kind: &str) -> bool {
    condition(cluster, kind).is_some_and(|c| {
        c.status == "True"
            && c.observed_generation.is_some()
            && c.observed_generation == cluster.metadata.generation
    })
}

/// GN variant of "rollout active": `status.storageRollout` set, or
/// StorageRolloutReady=False/RollingOut. Returns the previous pod UID text
/// for messages.
pub fn rollout_active(owner: &GarageCluster) -> Option<String> {
    let record = owner
        .status
        .as_ref()
        .and_then(|s| s.storage_rollout.as_ref());
    let rolling = condition(owner, CONDITION_STORAGE_ROLLOUT_READY)
        .is_some_and(|c| c.status == "False" && c.reason == REASON_STORAGE_ROLLING_OUT);
    if record.is_none() && !rolling {
        return None;
    }
    Some(
        record
            .and_then(|r| r.previous_pod_uid.clone())
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "an unknown previous pod UID".to_string()),
    )
}

/// Transaction ID of the owner's storage drain, when one is recorded.
pub fn storage_drain_id(owner: &GarageCluster) -> Option<String> {
    owner
        .status
        .as_ref()
        .and_then(|s| s.storage_drain.as_ref())
        .map(|d| d.transaction_id.clone().unwrap_or_default())
}

/// GN-DR: whether the owner's layout is safe for a positive-capacity removal
/// or replacement; the reason when not.
pub fn drain_readiness(owner: &GarageCluster) -> Result<(), String> {
    let generation = owner.metadata.generation.unwrap_or_default();
    if is_management_handle(owner) {
        if !true_at_generation(owner, CONDITION_MANAGEMENT_HANDLE_READY) {
            return Err(format!(
                "management handle {} requires {CONDITION_MANAGEMENT_HANDLE_READY}=True at generation {generation}",
                key(owner)
            ));
        }
        return Ok(());
    }
    let status = owner.status.as_ref();
    if status.is_some_and(|s| s.factor_migration.is_some()) {
        return Err(format!(
            "GarageCluster {} has an active status.factorMigration; wait for it to finish",
            key(owner)
        ));
    }
    if effective_consistency(owner.spec.replication.as_ref()) != ConsistencyMode::Consistent {
        return Err(format!(
            "GarageCluster {} requires parent spec.replication.consistencyMode: consistent for a prepared removal; roll that out first",
            key(owner)
        ));
    }
    if status.is_some_and(|s| s.storage_rollout.is_some()) {
        return Err(format!(
            "GarageCluster {} has an active status.storageRollout; wait for it to clear",
            key(owner)
        ));
    }
    if !true_at_generation(owner, CONDITION_STORAGE_ROLLOUT_READY) {
        return Err(format!(
            "GarageCluster {} requires {CONDITION_STORAGE_ROLLOUT_READY}=True at generation {generation}",
            key(owner)
        ));
    }
    if !status
        .and_then(|s| s.health.as_ref())
        .is_some_and(fully_replicated)
    {
        return Err(format!(
            "GarageCluster {} requires cached Garage health to show every storage node up and every partition fully replicated",
            key(owner)
        ));
    }
    Ok(())
}
