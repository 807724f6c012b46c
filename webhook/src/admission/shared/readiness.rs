//! SH-22: whether a GarageCluster's observed state proves its generation is
//! fully prepared for a positive-capacity removal.

use shared_types::conditions::cluster::CONDITION_STORAGE_ROLLOUT_READY;
use shared_types::garage_cluster::common::ClusterHealth;
use shared_types::garage_cluster::v1beta2::GarageCluster;

/// True when cached Garage health proves every storage node up and every
/// partition fully replicated: the only state in which removing a
/// positive-capacity role cannot lose the last copy of a block.
pub fn fully_replicated(h: &ClusterHealth) -> bool {
    let nodes = h.storage_nodes.unwrap_or(0);
    let parts = h.partitions.unwrap_or(0);
    h.status.as_deref() == Some("healthy")
        && h.healthy == Some(true)
        && h.available == Some(true)
        && nodes > 0
        && h.storage_nodes_ok == Some(nodes)
        && parts > 0
        && h.partitions_quorum == Some(parts)
        && h.partitions_all_ok == Some(parts)
}

/// `Ok` when the cluster is drain-ready, otherwise the reason it is not.
pub fn drain_readiness(c: &GarageCluster) -> Result<(), String> {
    let status = c.status.as_ref();
    if status.and_then(|s| s.factor_migration.as_ref()).is_some() {
        return Err(
            "a replication-factor migration (status.factorMigration) is in progress".into(),
        );
    }
    if status.and_then(|s| s.storage_rollout.as_ref()).is_some() {
        return Err("a storage rollout (status.storageRollout) is in progress".into());
    }
    let generation = c.metadata.generation.unwrap_or(0);
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|cond| cond.type_ == CONDITION_STORAGE_ROLLOUT_READY);
    match ready {
        Some(cond) if cond.status == "True" && cond.observed_generation == Some(generation) => {}
        _ => {
            return Err(format!(
                "requires {CONDITION_STORAGE_ROLLOUT_READY}=True at generation {generation}; wait for the current rollout to converge"
            ));
        }
    }
    if !status
        .and_then(|s| s.health.as_ref())
        .is_some_and(fully_replicated)
    {
        return Err(
            "requires cached Garage health to show every storage node up and every partition fully replicated; wait for status.health to report healthy"
                .into(),
        );
    }
    Ok(())
}
