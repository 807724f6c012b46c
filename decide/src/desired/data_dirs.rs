//! The default storage group's data directories (`spec.storage.data.paths`): the `data_dir`
//! list of the shared garage.toml, the layout capacity it adds up to, and the `dataPaths` a
//! generated GarageNode carries so that its StatefulSet mounts one volume at each listed
//! directory.
//!
//! Every StatefulSet-backed GarageNode of a cluster mounts the cluster's one garage.toml, so a
//! node may run only when it mounts exactly the directories that file lists
//! ([`check_node`]): Garage would otherwise write blocks into the container's own filesystem
//! and lose them with the pod.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use shared_types::common::VolumeType;
use shared_types::garage_cluster::common::VolumeConfig;
use shared_types::garage_cluster::v1beta2::{NodeLocalPoolSpec, StorageSpec};
use shared_types::garage_node::{GarageNode, NodeVolumeConfig};

use super::config::{ADMIN_TOKEN_DIR, CONFIG_DIR, METADATA_DIR, METRICS_TOKEN_DIR, RPC_SECRET_DIR};
use super::{DesiredError, Settings, quantity};

/// Field every refusal of a cluster path names.
const FIELD: &str = "spec.storage.data.paths";
/// Field every refusal of a pool's path names.
const POOL_FIELD: &str = "spec.storage.nodeLocalPools[].dataPaths";

/// One entry of a multi-directory `data_dir`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    /// Directory inside the container, as Garage lists it and the volume is mounted.
    pub path: String,
    /// Bytes Garage may place there; `None` for a read-only directory, which Garage only
    /// reads existing blocks from.
    pub capacity: Option<u64>,
}

/// The name of the pod volume (and claim template) of data path `i`, as the Go operator
/// names it, so claims `data-<i>-<node>-0` made by either operator are the same claims.
pub fn volume_name(i: usize) -> String {
    format!("data-{i}")
}

/// Where a GarageNode's data path `i` is mounted: its `path`, else `/data/data-<i>`.
pub fn mount_path(v: &NodeVolumeConfig, i: usize) -> String {
    v.path
        .clone()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| format!("/data/{}", volume_name(i)))
}

/// The cluster's data directories, or `None` when the group uses the single `/data/data`.
/// Capacities are exact bytes, Kubernetes quantities rounded up. Refuses what Garage or the
/// pod could not run: a path that is not absolute and clean, two paths that overlap or that
/// overlap a directory the operator mounts, a writable path with no capacity and no volume
/// size, or only read-only paths. A writable path's capacity is its `capacity`, else the
/// size of its volume.
pub fn cluster_data_dirs(storage: &StorageSpec) -> Result<Option<Vec<DataDir>>, DesiredError> {
    let Some((data, paths)) = storage
        .data
        .as_ref()
        .and_then(|d| Some((d, d.paths.as_deref().filter(|p| !p.is_empty())?)))
    else {
        return Ok(None);
    };
    let top_size = data.size.as_ref();
    let entries = paths.iter().map(|p| Entry {
        path: &p.path,
        read_only: p.read_only == Some(true),
        // The directory's own capacity, else the size of the volume behind it (its own, else
        // the top-level size it inherits, see `node_data_paths`).
        capacity: p
            .capacity
            .as_ref()
            .or_else(|| p.volume.as_ref().and_then(|v| v.size.as_ref()))
            .or(top_size),
    });
    data_dirs(FIELD, "", &OPERATOR_DIRS, entries).map(Some)
}

/// The directories the operator mounts into every Garage pod: no data path may overlap one.
const OPERATOR_DIRS: [&str; 5] = [
    METADATA_DIR,
    CONFIG_DIR,
    RPC_SECRET_DIR,
    ADMIN_TOKEN_DIR,
    METRICS_TOKEN_DIR,
];

/// The data directories of node-local pool `pool`, or `None` when it has the single `data`
/// HostPath. The same rules as the cluster's paths ([`cluster_data_dirs`]), plus the marker
/// directory a pool pod mounts; a writable path's capacity is its own `capacity` (a pool
/// path has no volume size to fall back to).
pub fn pool_data_dirs(pool: &NodeLocalPoolSpec) -> Result<Option<Vec<DataDir>>, DesiredError> {
    let Some(paths) = pool.data_paths.as_deref().filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let entries = paths.iter().map(|p| Entry {
        path: &p.path,
        read_only: p.read_only == Some(true),
        capacity: p.capacity.as_ref(),
    });
    let mut own = OPERATOR_DIRS.to_vec();
    own.push(super::pool::MARKER_DIR);
    let context = format!("pool {}: ", pool.name);
    data_dirs(POOL_FIELD, &context, &own, entries).map(Some)
}

/// One declared data directory, before it is checked.
struct Entry<'a> {
    path: &'a str,
    read_only: bool,
    /// The capacity it declares or inherits.
    capacity: Option<&'a Quantity>,
}

/// The checked `data_dir` entries of `entries`, refused under `field` (messages start with
/// `context`): a path that is not absolute and clean, two paths that overlap or that overlap
/// one of `own` (what the operator mounts), a writable path with no positive capacity, or
/// only read-only paths.
fn data_dirs<'a>(
    field: &'static str,
    context: &str,
    own: &[&str],
    entries: impl Iterator<Item = Entry<'a>>,
) -> Result<Vec<DataDir>, DesiredError> {
    let mut dirs: Vec<DataDir> = Vec::new();
    for (i, p) in entries.enumerate() {
        let invalid = |what: String| DesiredError::Invalid {
            field,
            message: format!("{context}paths[{i}] ({:?}) {what}", p.path),
        };
        if !is_clean_absolute(p.path) {
            return Err(invalid(
                "must be an absolute path without empty, '.' or '..' components, a trailing '/' or control characters".into(),
            ));
        }
        if let Some(own) = own.iter().find(|own| overlaps(own, p.path)) {
            return Err(invalid(format!(
                "overlaps {own}, which the operator mounts; choose a directory outside it"
            )));
        }
        if let Some(j) = dirs.iter().position(|d| overlaps(&d.path, p.path)) {
            return Err(invalid(format!(
                "overlaps paths[{j}] ({:?}); each disk needs its own directory",
                dirs[j].path
            )));
        }
        let capacity = if p.read_only {
            None
        } else {
            let declared = p.capacity.ok_or_else(|| {
                invalid(
                    "is writable and has neither capacity nor a volume size; Garage refuses a writable directory without a capacity (mark it readOnly or set one)".into(),
                )
            })?;
            let bytes = quantity::to_bytes(&declared.0)
                .filter(|b| *b > 0)
                .ok_or_else(|| {
                    invalid(format!(
                        "has capacity {:?}, which is not a positive quantity",
                        declared.0
                    ))
                })?;
            Some(bytes)
        };
        dirs.push(DataDir {
            path: p.path.to_owned(),
            capacity,
        });
    }
    if dirs.iter().all(|d| d.capacity.is_none()) {
        return Err(DesiredError::Invalid {
            field,
            message: format!(
                "{context}every path is readOnly; Garage needs at least one writable directory to place blocks in"
            ),
        });
    }
    Ok(dirs)
}

/// Bytes Garage may place across `dirs`: the sum of the writable directories' capacities
/// (a read-only directory takes no new blocks, so it adds nothing).
pub fn writable_bytes(dirs: &[DataDir]) -> u64 {
    dirs.iter()
        .filter_map(|d| d.capacity)
        .fold(0u64, u64::saturating_add)
}

/// The `dataPaths` of a generated GarageNode for the cluster's `data` volume with `paths`:
/// one claim volume per path, mounted at the path. As in the Go operator, a path volume that
/// does not set them takes the top-level volume's storage class, access modes, selector,
/// labels and annotations, and its size from the path's capacity, then the top-level size.
/// The VolumeAttributesClass is never taken from the top level (a class applies to
/// the volumes that name it), nor is the volume type; an EmptyDir path takes no claim field.
pub fn node_data_paths(data: &VolumeConfig) -> Vec<NodeVolumeConfig> {
    let non_empty = |v: Option<Vec<String>>| v.filter(|v| !v.is_empty());
    let non_empty_map =
        |m: Option<std::collections::BTreeMap<String, String>>| m.filter(|m| !m.is_empty());
    data.paths
        .iter()
        .flatten()
        .map(|p| {
            let v = p.volume.clone().unwrap_or_default();
            let size = v
                .size
                .clone()
                .or_else(|| p.capacity.clone())
                .or_else(|| data.size.clone());
            if v.type_ == Some(VolumeType::EmptyDir) {
                return NodeVolumeConfig {
                    path: Some(p.path.clone()),
                    read_only: p.read_only.filter(|r| *r),
                    size,
                    type_: v.type_,
                    ..Default::default()
                };
            }
            NodeVolumeConfig {
                path: Some(p.path.clone()),
                read_only: p.read_only.filter(|r| *r),
                size,
                storage_class_name: v
                    .storage_class_name
                    .or_else(|| data.storage_class_name.clone()),
                access_modes: non_empty(v.access_modes)
                    .or_else(|| non_empty(data.access_modes.clone())),
                selector: v.selector.or_else(|| data.selector.clone()),
                labels: non_empty_map(v.labels).or_else(|| non_empty_map(data.labels.clone())),
                annotations: non_empty_map(v.annotations)
                    .or_else(|| non_empty_map(data.annotations.clone())),
                type_: v.type_,
                volume_attributes_class_name: v.volume_attributes_class_name,
                ..Default::default()
            }
        })
        .collect()
}

/// Refuses a StatefulSet-backed GarageNode whose data volumes are not mounted at exactly the
/// directories (and read-only marks) the cluster's shared garage.toml lists. Capacities are
/// the cluster's: every node mounting that file declares the same ones.
pub fn check_node(node: &GarageNode, s: &Settings) -> Result<(), DesiredError> {
    // A gateway's data directories are scratch emptyDirs at whatever the garage.toml lists.
    if node.spec.gateway == Some(true) {
        return Ok(());
    }
    let node_dirs: Option<Vec<(String, bool)>> = node
        .spec
        .storage
        .as_ref()
        .and_then(|st| st.data_paths.as_deref())
        .filter(|p| !p.is_empty())
        .map(|paths| {
            paths
                .iter()
                .enumerate()
                .map(|(i, v)| (mount_path(v, i), v.read_only == Some(true)))
                .collect()
        });
    let cluster_dirs: Option<Vec<(String, bool)>> = s.data_dirs.as_ref().map(|dirs| {
        dirs.iter()
            .map(|d| (d.path.clone(), d.capacity.is_none()))
            .collect()
    });
    match (node_dirs, cluster_dirs) {
        (a, b) if a == b => Ok(()),
        (Some(_), _) => Err(DesiredError::Unsupported(
            "spec.storage.dataPaths other than the directories of the cluster's spec.storage.data.paths (every managed node mounts the cluster's one garage.toml)",
        )),
        (None, _) => Err(DesiredError::Unsupported(
            "spec.storage.data beside a cluster whose spec.storage.data.paths lists several data directories (every managed node mounts the cluster's one garage.toml)",
        )),
    }
}

/// An absolute path with no empty, `.` or `..` component, no trailing `/` and no control
/// character: the form Garage records and Kubernetes mounts without rewriting it.
fn is_clean_absolute(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    !rest.is_empty()
        && !path.chars().any(char::is_control)
        && rest
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != "..")
}

/// Equal, or one contains the other.
fn overlaps(a: &str, b: &str) -> bool {
    let inside = |x: &str, y: &str| x.strip_prefix(y).is_some_and(|r| r.starts_with('/'));
    a == b || inside(a, b) || inside(b, a)
}

#[cfg(test)]
mod tests;
