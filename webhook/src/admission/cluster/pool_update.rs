//! Retained-pool updates (GC-S6..GC-S9): the metadata HostPath is the
//! Garage identity, HostPath types only tighten, and data disks are never
//! detached, remapped or moved in place. What an allowed change sets in
//! motion is said in warnings: GC-W36 the pool rolls, GC-W37 a capacity
//! change rebalances, GC-W38 a selector change hands Nodes over, GC-W39 a
//! removed pool drains.

use std::collections::BTreeMap;

use shared_types::garage_cluster::v1beta2::{GarageClusterSpec, HostPathType, NodeLocalPoolSpec};

use super::node_local_pools::pool_field;
use super::tiers::Shape;
use crate::admission::Verdict;

/// Container path the single `data` HostPath is mounted at.
pub const SINGLE_DATA_PATH: &str = "/data/data";

fn tight(t: Option<HostPathType>) -> bool {
    t.unwrap_or(HostPathType::Directory) == HostPathType::Directory
}

/// container path → (host path, hostPathType) of a pool's data disks.
fn mappings(pool: &NodeLocalPoolSpec) -> BTreeMap<String, (String, Option<HostPathType>)> {
    let mut m = BTreeMap::new();
    if let Some(d) = pool.data.as_ref() {
        m.insert(
            SINGLE_DATA_PATH.to_string(),
            (d.host_path.clone(), d.host_path_type),
        );
    }
    for d in pool.data_paths.iter().flatten() {
        m.insert(d.path.clone(), (d.host_path.clone(), d.host_path_type));
    }
    m
}

fn check_pool(i: usize, old: &NodeLocalPoolSpec, new: &NodeLocalPoolSpec, verdict: &mut Verdict) {
    let f = pool_field(i);
    let n = &new.name;
    if old.metadata.host_path != new.metadata.host_path || new.metadata.host_path.is_empty() {
        verdict.deny("GC-S6", format!("{f}.metadata.hostPath"), format!("spec.storage.nodeLocalPools[{n:?}].metadata is immutable: it contains each Kubernetes Node's Garage identity; remove and fully drain the pool before recreating it with another metadata hostPath"));
    }
    match (tight(old.metadata.host_path_type), tight(new.metadata.host_path_type)) {
        (true, false) => verdict.deny("GC-S7", format!("{f}.metadata.hostPathType"), format!("pool {n:?} metadata.hostPathType cannot be loosened from Directory to DirectoryOrCreate: a missing metadata disk must fail closed instead of becoming an empty directory")),
        (false, true) => verdict.warn("GC-W36", format!("Changing storage.nodeLocalPools[{n:?}].metadata.hostPathType rolls the pool; verify every selected Node already has the expected metadata directory")),
        _ => {}
    }
    let (om, nm) = (mappings(old), mappings(new));
    for (cp, (hp, ty)) in &om {
        match nm.get(cp) {
            Some((nhp, nty)) => {
                if nhp != hp {
                    verdict.deny("GC-S8", format!("{f}.dataPaths"), format!("pool {n:?} cannot remap data path {cp:?} from hostPath {hp:?} to {nhp:?} in place; Garage persists drive identity by data_dir path, so drain and recreate the whole pool to change disks"));
                } else if tight(*ty) && !tight(*nty) {
                    verdict.deny("GC-S7", format!("{f}.dataPaths"), format!("pool {n:?} data path {cp:?} hostPathType cannot be loosened from Directory to DirectoryOrCreate: a missing data disk must fail closed"));
                }
            }
            None => match nm.iter().find(|(_, (nhp, _))| nhp == hp) {
                Some((ncp, _)) => verdict.deny("GC-S8", format!("{f}.dataPaths"), format!("pool {n:?} cannot move hostPath {hp:?} from container path {cp:?} to {ncp:?} in one update because Garage persists drive identity by data_dir path")),
                None => verdict.deny("GC-S8", format!("{f}.dataPaths"), format!("pool {n:?} cannot remove data path {cp:?} ({hp}) in place: Garage layout and rebalance completion do not prove the HostPath is empty; retain it (mark it readOnly before active rebalance), or drain and recreate the whole pool")),
            },
        }
    }
    let host_map = |m: &BTreeMap<String, (String, Option<HostPathType>)>| {
        m.iter()
            .map(|(k, (h, _))| (k.clone(), h.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    if host_map(&om) != host_map(&nm) {
        verdict.warn("GC-W36", format!("Changing storage.nodeLocalPools[{n:?}] data HostPath mappings may only add disks without detaching existing paths; the pool rolls one Node at a time"));
    } else if old.data != new.data || old.data_paths != new.data_paths {
        verdict.warn("GC-W36", format!("Changing storage.nodeLocalPools[{n:?}] data capacity, readOnly state, or hostPathType rolls the pool and updates Garage's persisted drive layout"));
    }
    if old.capacity != new.capacity {
        verdict.warn("GC-W37", format!("Changing storage.nodeLocalPools[{n:?}].capacity updates every node's layout role and may trigger a large rebalance"));
    }
    if old.selector != new.selector {
        verdict.warn("GC-W38", format!("Changing storage.nodeLocalPools[{n:?}].selector uses an add-before-remove handoff: label replacement Nodes in before removing old ones"));
    }
}

/// GC-S6..GC-S9 for every pool present before and after the update.
pub fn check_update(old: &GarageClusterSpec, new: &GarageClusterSpec, verdict: &mut Verdict) {
    let new_pools = Shape::of(new).pools();
    for op in Shape::of(old).pools() {
        match new_pools.iter().position(|p| p.name == op.name) {
            Some(i) => check_pool(i, op, &new_pools[i], verdict),
            None => verdict.warn("GC-W39", format!("Removing storage.nodeLocalPools[{:?}] starts a one-node-at-a-time Garage layout drain; keep its hostPath data intact until the pool DaemonSet and GarageNodes are gone", op.name)),
        }
    }
}
