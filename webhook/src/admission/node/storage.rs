//! GN-C21 storage rules of a managed StatefulSet GarageNode and the volume
//! source rules (GN-VS), including the VolumeAttributesClass shape rules of
//! node volumes (GN-VAC1, GN-VAC2: defence in depth beside the CRD's CEL).

use super::facts::is_gateway;
use super::{Step, deny};
use crate::admission::Verdict;
use crate::admission::shared::durations::check_snapshot_interval_strict;
use crate::admission::shared::selector::conversion_error;
use shared_types::common::VolumeType;
use shared_types::garage_node::{GarageNode, NodeVolumeConfig};

/// `existingClaim`, treating an empty string as unset (as the CEL rules do).
pub fn claim(vol: &NodeVolumeConfig) -> Option<&str> {
    vol.existing_claim.as_deref().filter(|c| !c.is_empty())
}

/// True for an EmptyDir volume.
pub fn is_empty_dir(vol: &NodeVolumeConfig) -> bool {
    vol.type_ == Some(VolumeType::EmptyDir)
}

/// True when the volume names a real Kubernetes volume source.
pub fn has_source(vol: &NodeVolumeConfig) -> bool {
    is_empty_dir(vol) || claim(vol).is_some() || vol.size.is_some()
}

/// True for a released `readOnly: true` entry that names no volume source.
pub fn is_read_only_only(vol: &NodeVolumeConfig) -> bool {
    vol.read_only == Some(true) && !has_source(vol)
}

fn non_empty<T>(v: &Option<Vec<T>>) -> bool {
    v.as_ref().is_some_and(|v| !v.is_empty())
}

/// GN-C21 storage part (metadata, data, dataPaths, snapshot interval).
pub fn check(node: &GarageNode, warnings: &mut Verdict) -> Step {
    let Some(storage) = &node.spec.storage else {
        return Ok(());
    };
    if let Some(interval) = &storage.metadata_auto_snapshot_interval
        && let Some(problem) =
            check_snapshot_interval_strict("spec.storage.metadataAutoSnapshotInterval", interval)
    {
        return Err(problem.violation("GN-C21"));
    }
    let read_only_msg = "readOnly applies only to multi-HDD storage.dataPaths[] entries; remove it";
    if let Some(metadata) = &storage.metadata {
        if metadata.read_only == Some(true) {
            return Err(deny(
                "GN-C21",
                "spec.storage.metadata.readOnly",
                read_only_msg,
            ));
        }
        volume_source("spec.storage.metadata", metadata, warnings)?;
    }
    let has_paths = non_empty(&storage.data_paths);
    if storage.data.is_some() && has_paths {
        return Err(deny(
            "GN-C21",
            "spec.storage",
            "storage.data and storage.dataPaths are mutually exclusive; use dataPaths for several disks",
        ));
    }
    if let Some(data) = &storage.data {
        if is_gateway(node) {
            return Err(deny(
                "GN-C21",
                "spec.storage.data",
                "storage.data is not allowed on gateway nodes, which store no blocks",
            ));
        }
        if data.read_only == Some(true) {
            return Err(deny("GN-C21", "spec.storage.data.readOnly", read_only_msg));
        }
        volume_source("spec.storage.data", data, warnings)?;
    }
    if has_paths {
        if is_gateway(node) {
            return Err(deny(
                "GN-C21",
                "spec.storage.dataPaths",
                "storage.dataPaths is not allowed on gateway nodes, which store no blocks",
            ));
        }
        for (i, path) in storage.data_paths.iter().flatten().enumerate() {
            volume_source(&format!("spec.storage.dataPaths[{i}]"), path, warnings)?;
        }
    }
    if !is_gateway(node) && storage.data.is_none() && !has_paths {
        return Err(deny(
            "GN-C21",
            "spec.storage.data",
            "storage.data or storage.dataPaths is required for storage nodes",
        ));
    }
    empty_dir_warnings(storage, warnings);
    Ok(())
}

/// An EmptyDir lives and dies with its pod: an eviction (a node drain) or any reschedule
/// takes that volume's part of the replica with it, which the user should hear at admission
/// rather than after a drain.
fn empty_dir_warnings(
    storage: &shared_types::garage_node::NodeStorageConfig,
    warnings: &mut Verdict,
) {
    if storage.metadata.as_ref().is_some_and(is_empty_dir) {
        warnings.warn("GN-W12", "spec.storage.metadata is an EmptyDir: an eviction or reschedule of this node's pod (a node drain, for one) loses its metadata and with it the node's identity; the replica comes back as a new node that must be rebuilt from the others. Use a PersistentVolumeClaim (size or existingClaim) to keep it");
    }
    let data = storage
        .data
        .iter()
        .map(|d| ("spec.storage.data".to_owned(), d));
    let paths = storage
        .data_paths
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, d)| (format!("spec.storage.dataPaths[{i}]"), d));
    for (field, _) in data.chain(paths).filter(|(_, v)| is_empty_dir(v)) {
        warnings.warn("GN-W12", format!("{field} is an EmptyDir: an eviction or reschedule of this node's pod (a node drain, for one) loses the blocks stored there, and with them this replica of every partition it held until Garage rebuilds it from the others. Use a PersistentVolumeClaim (size or existingClaim) to keep it"));
    }
}

/// GN-VS: one volume names exactly one kind of source, with only the fields
/// that source uses.
pub fn volume_source(field: &str, vol: &NodeVolumeConfig, warnings: &mut Verdict) -> Step {
    let fail = |sub: &str, msg: String| Err(deny("GN-VS", format!("{field}.{sub}"), msg));
    // The claim-shaping fields, in the order they are reported.
    let claim_fields = [
        ("storageClassName", vol.storage_class_name.is_some()),
        ("selector", vol.selector.is_some()),
        ("accessModes", non_empty(&vol.access_modes)),
        ("labels", vol.labels.is_some()),
        ("annotations", vol.annotations.is_some()),
    ];
    let first_set =
        |fields: &[(&'static str, bool)]| fields.iter().find(|(_, set)| *set).map(|(sub, _)| *sub);
    if is_empty_dir(vol) {
        let existing = [("existingClaim", claim(vol).is_some())];
        if let Some(sub) = first_set(&existing).or_else(|| first_set(&claim_fields)) {
            return fail(
                sub,
                format!(
                    "{sub}: not allowed with EmptyDir type; remove it or use a PersistentVolumeClaim"
                ),
            );
        }
        if vol.volume_attributes_class_name.is_some() {
            return Err(deny(
                "GN-VAC2",
                format!("{field}.volumeAttributesClassName"),
                "volumeAttributesClassName is only valid for PersistentVolumeClaim volumes; remove it or drop type: EmptyDir",
            ));
        }
        return Ok(());
    }
    if claim(vol).is_none() && vol.size.is_none() {
        return Err(deny(
            "GN-VS",
            field,
            format!(
                "{field} must specify existingClaim, size, or type=EmptyDir (readOnly does not provide a Kubernetes volume)"
            ),
        ));
    }
    if let Some(name) = claim(vol) {
        if let Some(sub) = first_set(&claim_fields) {
            return fail(
                sub,
                format!(
                    "{sub} cannot be combined with existingClaim {name:?}: the claim is already bound or user-managed; remove {sub}"
                ),
            );
        }
        if vol.volume_attributes_class_name.is_some() {
            return Err(deny(
                "GN-VAC1",
                format!("{field}.volumeAttributesClassName"),
                "volumeAttributesClassName cannot be combined with existingClaim: the referenced claim is user-managed; set the class on that claim yourself",
            ));
        }
    }
    if let Some(selector) = &vol.selector
        && let Some(why) = conversion_error(selector)
    {
        return fail(
            "selector",
            format!("invalid PersistentVolume label selector: {why}"),
        );
    }
    if vol.selector.is_some() && vol.volume_attributes_class_name.is_some() {
        warnings.warn("GN-W9", format!("{field}: a statically bound PersistentVolume must itself carry spec.volumeAttributesClassName matching volumeAttributesClassName, or the claim will not bind"));
    }
    Ok(())
}
