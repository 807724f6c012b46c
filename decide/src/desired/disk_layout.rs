//! The disk layout of a node-local pool: which HostPath backs the metadata directory and each
//! data directory Garage lists, of which type, and which data directories Garage only reads.
//!
//! The layout a pool rolled out is recorded on its DaemonSet and on each of its config
//! revisions (annotation `storage-disk-layout`). Garage keys its drives by `data_dir` path and
//! no API proves that a directory is empty on every Node, so a data path may be added or
//! marked read-only but never removed, remapped to another HostPath or moved to another
//! container path, and no HostPath type may loosen from `Directory` to `DirectoryOrCreate`.
//! [`violations`] lists every way a new layout breaks those rules; the DaemonSet's record is
//! also compared with its actual HostPath mounts ([`mounted`]), so an edited record or
//! template is refused too instead of being taken as the truth.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::DaemonSet;
use serde::{Deserialize, Serialize};
use shared_types::garage_cluster::v1beta2::{HostPathType, HostPathVolume, NodeLocalPoolSpec};
use shared_types::keys::annotation::ANNOTATION_STORAGE_DISK_LAYOUT;

use super::config::{DATA_DIR, METADATA_DIR};

/// The record's format version.
pub const VERSION: u32 = 1;
/// `hostPathType: Directory`, the default: the disk must be there, with its marker.
pub const DIRECTORY: &str = "Directory";
/// `hostPathType: DirectoryOrCreate`: the kubelet creates a missing directory.
pub const DIRECTORY_OR_CREATE: &str = "DirectoryOrCreate";

/// A pool's disk layout, as recorded (`{version, metadataHostPath, metadataHostPathType,
/// dataPaths: [{path, hostPath, hostPathType, readOnly}]}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiskLayout {
    /// [`VERSION`].
    pub version: u32,
    /// The metadata HostPath.
    pub metadata_host_path: String,
    /// Its type.
    pub metadata_host_path_type: String,
    /// Every data directory, in the pool's order.
    pub data_paths: Vec<DataMount>,
}

/// One data directory of a pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataMount {
    /// Directory in the container, as Garage's `data_dir` lists it.
    pub path: String,
    /// The Node directory mounted there.
    pub host_path: String,
    /// Its type.
    pub host_path_type: String,
    /// Garage only reads it (no new blocks).
    pub read_only: bool,
}

/// The type name Kubernetes gets for `t` (`Directory` unless `DirectoryOrCreate` is asked).
pub fn type_name(t: Option<HostPathType>) -> &'static str {
    match t {
        Some(HostPathType::DirectoryOrCreate) => DIRECTORY_OR_CREATE,
        _ => DIRECTORY,
    }
}

/// The layout `pool` asks for: its single `data` HostPath at `/data/data`, or its `dataPaths`.
pub fn of_pool(pool: &NodeLocalPoolSpec) -> DiskLayout {
    let single = pool.data.iter().map(|d: &HostPathVolume| DataMount {
        path: DATA_DIR.to_owned(),
        host_path: d.host_path.clone(),
        host_path_type: type_name(d.host_path_type).to_owned(),
        read_only: false,
    });
    let paths = pool.data_paths.iter().flatten().map(|d| DataMount {
        path: d.path.clone(),
        host_path: d.host_path.clone(),
        host_path_type: type_name(d.host_path_type).to_owned(),
        read_only: d.read_only == Some(true),
    });
    DiskLayout {
        version: VERSION,
        metadata_host_path: pool.metadata.host_path.clone(),
        metadata_host_path_type: type_name(pool.metadata.host_path_type).to_owned(),
        data_paths: single.chain(paths).collect(),
    }
}

impl DiskLayout {
    /// The record's JSON (a struct of strings and booleans always serializes).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The mapping without Garage's read-only marks: what the HostPath mounts show.
    fn mounts(&self) -> (String, String, BTreeMap<String, (String, String)>) {
        (
            self.metadata_host_path.clone(),
            self.metadata_host_path_type.clone(),
            self.data_paths
                .iter()
                .map(|d| {
                    (
                        d.path.clone(),
                        (d.host_path.clone(), d.host_path_type.clone()),
                    )
                })
                .collect(),
        )
    }
}

/// The layout recorded in `annotations`: `None` when there is no record, an error when the
/// record cannot be read (which is refused like any other doubt).
pub fn recorded(
    annotations: Option<&BTreeMap<String, String>>,
) -> Option<Result<DiskLayout, String>> {
    let raw = annotations?.get(ANNOTATION_STORAGE_DISK_LAYOUT)?;
    Some(
        serde_json::from_str::<DiskLayout>(raw)
            .map_err(|e| format!("its {ANNOTATION_STORAGE_DISK_LAYOUT} record is unreadable ({e})"))
            .and_then(|l| {
                if l.version == VERSION {
                    Ok(l)
                } else {
                    Err(format!(
                        "its {ANNOTATION_STORAGE_DISK_LAYOUT} record has version {}, which this operator does not know",
                        l.version
                    ))
                }
            }),
    )
}

/// The layout a pool DaemonSet's pod template actually mounts: the `metadata` HostPath and
/// every `data`/`data-<i>` HostPath at its container mount path. Garage's read-only marks are
/// not visible in mounts (every data directory is mounted read-write), so they are `false`.
pub fn mounted(ds: &DaemonSet) -> Result<DiskLayout, String> {
    let spec = ds
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .ok_or("it has no pod template")?;
    let host: BTreeMap<&str, (&str, &str)> = spec
        .volumes
        .iter()
        .flatten()
        .filter_map(|v| {
            let h = v.host_path.as_ref()?;
            Some((
                v.name.as_str(),
                (h.path.as_str(), h.type_.as_deref().unwrap_or("")),
            ))
        })
        .collect();
    let mut metadata = None;
    let mut data_paths = Vec::new();
    for m in spec
        .containers
        .iter()
        .flat_map(|c| c.volume_mounts.iter().flatten())
    {
        let Some((path, kind)) = host.get(m.name.as_str()) else {
            continue;
        };
        if m.name == "metadata" && m.mount_path == METADATA_DIR {
            metadata = Some((path.to_string(), kind.to_string()));
        } else if m.name == "data" || m.name.starts_with("data-") {
            data_paths.push(DataMount {
                path: m.mount_path.clone(),
                host_path: (*path).to_owned(),
                host_path_type: (*kind).to_owned(),
                read_only: false,
            });
        }
    }
    let (metadata_host_path, metadata_host_path_type) = metadata
        .ok_or_else(|| format!("its pod template mounts no metadata HostPath at {METADATA_DIR}"))?;
    Ok(DiskLayout {
        version: VERSION,
        metadata_host_path,
        metadata_host_path_type,
        data_paths,
    })
}

/// True when `record` says exactly what the mounts `actual` show (read-only marks aside).
pub fn matches_mounts(record: &DiskLayout, actual: &DiskLayout) -> bool {
    record.mounts() == actual.mounts()
}

/// Every way moving from the rolled-out layout `from` to `to` would detach, remap or loosen
/// a disk, each naming the pool field (`field`, e.g. `spec.storage.nodeLocalPools["a"]`).
/// Adding data paths, marking one read-only (or writable again) and tightening a type to
/// `Directory` are allowed.
pub fn violations(field: &str, from: &DiskLayout, to: &DiskLayout) -> Vec<String> {
    let mut out = Vec::new();
    if from.metadata_host_path != to.metadata_host_path {
        out.push(format!(
            "{field}.metadata.hostPath changes from {} to {}: it holds every member's Garage identity and is fixed for the life of the pool",
            from.metadata_host_path, to.metadata_host_path
        ));
    }
    if from.metadata_host_path_type == DIRECTORY && to.metadata_host_path_type != DIRECTORY {
        out.push(format!(
            "{field}.metadata.hostPathType loosens from Directory to {}: a missing metadata disk must stop the pod, not become an empty directory",
            to.metadata_host_path_type
        ));
    }
    for old in &from.data_paths {
        let same_path = to.data_paths.iter().find(|d| d.path == old.path);
        match same_path {
            Some(new) if new.host_path != old.host_path => out.push(format!(
                "{field}.dataPaths remaps {} from hostPath {} to {}",
                old.path, old.host_path, new.host_path
            )),
            Some(new) if old.host_path_type == DIRECTORY && new.host_path_type != DIRECTORY => {
                out.push(format!(
                    "{field}.dataPaths loosens the hostPathType of {} ({}) from Directory to {}: a missing data disk must stop the pod",
                    old.path, old.host_path, new.host_path_type
                ));
            }
            Some(_) => {}
            None => match to.data_paths.iter().find(|d| d.host_path == old.host_path) {
                Some(moved) => out.push(format!(
                    "{field}.dataPaths moves hostPath {} from {} to {}: Garage keys a drive by its data_dir path",
                    old.host_path, old.path, moved.path
                )),
                None => out.push(format!(
                    "{field}.dataPaths removes {} (hostPath {})",
                    old.path, old.host_path
                )),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests;
