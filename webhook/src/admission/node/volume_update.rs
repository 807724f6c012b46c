//! Volume updates of a managed GarageNode: neutralising released legacy
//! volume fields on the validation copy (GN-U9), storage topology
//! immutability (GN-U13) and per-volume immutability (GN-VU), with the
//! VolumeAttributesClass carve-out (GN-VAC3).

use super::facts::{self, is_operator_child};
use super::storage::{claim, has_source, is_empty_dir, is_read_only_only};
use super::{Step, deny};
use crate::admission::Verdict;
use crate::admission::shared::quantity::{self, quantity_eq};
use crate::admission::shared::selector::conversion_error;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use shared_types::garage_node::{GarageNode, NodeVolumeConfig};

/// Fields of a volume that the released renderer ignored for the old
/// volume's kind, so old objects may carry them unvalidated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Legacy {
    ExistingClaim,
    StorageClassName,
    Selector,
    AccessModes,
    Labels,
    Annotations,
}

impl Legacy {
    fn name(self) -> &'static str {
        match self {
            Legacy::ExistingClaim => "existingClaim",
            Legacy::StorageClassName => "storageClassName",
            Legacy::Selector => "selector",
            Legacy::AccessModes => "accessModes",
            Legacy::Labels => "labels",
            Legacy::Annotations => "annotations",
        }
    }

    /// Whether `v` carries the field; and whether two volumes agree on it.
    fn present(self, v: &NodeVolumeConfig) -> bool {
        match self {
            Legacy::ExistingClaim => v.existing_claim.is_some(),
            Legacy::StorageClassName => v.storage_class_name.is_some(),
            Legacy::Selector => v.selector.is_some(),
            Legacy::AccessModes => v.access_modes.as_ref().is_some_and(|m| !m.is_empty()),
            Legacy::Labels => v.labels.is_some(),
            Legacy::Annotations => v.annotations.is_some(),
        }
    }

    fn same(self, a: &NodeVolumeConfig, b: &NodeVolumeConfig) -> bool {
        match self {
            Legacy::ExistingClaim => a.existing_claim == b.existing_claim,
            Legacy::StorageClassName => a.storage_class_name == b.storage_class_name,
            Legacy::Selector => a.selector == b.selector,
            Legacy::AccessModes => a.access_modes == b.access_modes,
            Legacy::Labels => a.labels == b.labels,
            Legacy::Annotations => a.annotations == b.annotations,
        }
    }

    fn clear(self, v: &mut NodeVolumeConfig) {
        match self {
            Legacy::ExistingClaim => v.existing_claim = None,
            Legacy::StorageClassName => v.storage_class_name = None,
            Legacy::Selector => v.selector = None,
            Legacy::AccessModes => v.access_modes = None,
            Legacy::Labels => v.labels = None,
            Legacy::Annotations => v.annotations = None,
        }
    }
}

const PVC_ONLY: [Legacy; 5] = [
    Legacy::StorageClassName,
    Legacy::Selector,
    Legacy::AccessModes,
    Legacy::Labels,
    Legacy::Annotations,
];

/// The legacy-ignored fields present on the old volume.
fn legacy_fields(old: &NodeVolumeConfig) -> Vec<Legacy> {
    let candidates: Vec<Legacy> = if is_empty_dir(old) {
        std::iter::once(Legacy::ExistingClaim)
            .chain(PVC_ONLY)
            .collect()
    } else if claim(old).is_some() {
        PVC_ONLY.to_vec()
    } else if old
        .selector
        .as_ref()
        .is_some_and(|s| conversion_error(s).is_some())
    {
        vec![Legacy::Selector]
    } else {
        Vec::new()
    };
    candidates.into_iter().filter(|f| f.present(old)).collect()
}

/// GN-U9 for one volume: checks the legacy transitions and neutralises the
/// copy. Returns whether something was retained (for the warning).
fn neutralise_one(
    field: &str,
    old: &NodeVolumeConfig,
    copy: &mut NodeVolumeConfig,
    read_only_ignored: bool,
) -> Result<bool, super::Violation> {
    let mut retained = false;
    for f in legacy_fields(old) {
        if !f.present(copy) {
            continue;
        }
        if !f.same(old, copy) {
            return Err(deny(
                "GN-U9",
                format!("{field}.{}", f.name()),
                format!(
                    "{field}.{} was ignored by the released renderer and may only remain unchanged or be removed",
                    f.name()
                ),
            ));
        }
        f.clear(copy);
        retained = true;
    }
    if read_only_ignored && old.read_only == Some(true) && copy.read_only == Some(true) {
        copy.read_only = None;
        retained = true;
    }
    let old_read_only = old.read_only == Some(true) && (read_only_ignored || !has_source(old));
    if old_read_only && !has_source(copy) {
        // A stand-in source lets the shape rules pass for a released entry
        // that never rendered a Kubernetes volume; the real object is untouched.
        copy.size = Some(Quantity("1".into()));
        retained = true;
    }
    Ok(retained)
}

/// GN-U9: legacy volume fields of metadata, data and (with equal counts)
/// dataPaths, applied to the validation copy.
pub fn neutralise_legacy(old: &GarageNode, copy: &mut GarageNode, warnings: &mut Verdict) -> Step {
    let (Some(old_storage), Some(new_storage)) = (&old.spec.storage, copy.spec.storage.as_mut())
    else {
        return Ok(());
    };
    let mut pairs: Vec<(String, &NodeVolumeConfig, &mut NodeVolumeConfig, bool)> = Vec::new();
    if let (Some(o), Some(n)) = (&old_storage.metadata, new_storage.metadata.as_mut()) {
        pairs.push(("spec.storage.metadata".into(), o, n, true));
    }
    if let (Some(o), Some(n)) = (&old_storage.data, new_storage.data.as_mut()) {
        pairs.push(("spec.storage.data".into(), o, n, true));
    }
    if let (Some(o), Some(n)) = (&old_storage.data_paths, new_storage.data_paths.as_mut())
        && o.len() == n.len()
    {
        for (i, (o, n)) in o.iter().zip(n.iter_mut()).enumerate() {
            pairs.push((format!("spec.storage.dataPaths[{i}]"), o, n, false));
        }
    }
    for (field, o, n, read_only_ignored) in pairs {
        if neutralise_one(&field, o, n, read_only_ignored)? {
            warnings.warn("GN-W6", format!("{field} contains unchanged released fields that never affected the rendered Kubernetes volume; remove them"));
        }
    }
    Ok(())
}

/// The comparable shape of a volume: everything but size and the
/// VolumeAttributesClass (which may change on a live volume), without the
/// fields the released renderer ignored for the old volume's kind.
fn shape(v: &NodeVolumeConfig, legacy: &[Legacy], read_only_ignored: bool) -> NodeVolumeConfig {
    let mut s = v.clone();
    s.size = None;
    s.volume_attributes_class_name = None;
    if read_only_ignored || s.read_only == Some(false) {
        s.read_only = None;
    }
    for f in legacy {
        f.clear(&mut s);
    }
    s
}

/// Copies the source-construction fields of `new` onto `old`, leaving the
/// fields that stay immutable through a legacy source repair.
fn adopt_source(old: &mut NodeVolumeConfig, new: &NodeVolumeConfig) {
    old.existing_claim.clone_from(&new.existing_claim);
    old.type_ = new.type_;
    old.storage_class_name.clone_from(&new.storage_class_name);
    old.selector.clone_from(&new.selector);
    old.access_modes.clone_from(&new.access_modes);
    old.labels.clone_from(&new.labels);
    old.annotations.clone_from(&new.annotations);
}

/// GN-VU for one volume.
fn volume(
    field: &str,
    old: Option<&NodeVolumeConfig>,
    new: Option<&NodeVolumeConfig>,
    read_only_ignored: bool,
    operator_child: bool,
) -> Step {
    let (old, new) = match (old, new) {
        (None, None) => return Ok(()),
        (Some(o), Some(n)) => (o, n),
        _ => {
            return Err(deny(
                "GN-U13",
                field,
                format!(
                    "{field} volume source is immutable on an existing GarageNode; create a replacement GarageNode and drain this one"
                ),
            ));
        }
    };
    if !operator_child
        && old.volume_attributes_class_name.is_some()
        && new.volume_attributes_class_name.is_none()
    {
        return Err(deny(
            "GN-VAC3",
            format!("{field}.volumeAttributesClassName"),
            format!(
                "{field}.volumeAttributesClassName cannot be removed from a live volume: the volume would keep the old class's parameters; set an explicit default VolumeAttributesClass instead"
            ),
        ));
    }
    let repair = is_read_only_only(old) && has_source(new);
    let legacy = legacy_fields(old);
    let mut old_shape = shape(old, &legacy, read_only_ignored);
    let new_shape = shape(new, &legacy, read_only_ignored);
    if repair {
        // A readOnly-only entry never rendered a Kubernetes volume, so its
        // first real source is construction, not a move; the Garage path
        // (and a dataPath's readOnly) still name where the blocks live.
        adopt_source(&mut old_shape, &new_shape);
    }
    if old_shape != new_shape {
        return Err(deny(
            "GN-U13",
            field,
            format!(
                "{field} volume source, path, class, access modes, and readOnly state are immutable on an existing GarageNode; only size growth on the same operator-created volume is supported"
            ),
        ));
    }
    if repair || quantity_eq(old.size.as_ref(), new.size.as_ref()) {
        return Ok(());
    }
    if let Some(name) = claim(new) {
        return Err(deny(
            "GN-U13",
            format!("{field}.size"),
            format!(
                "{field}.size is immutable for existingClaim {name:?}: it is the capacity declared for a user-managed claim"
            ),
        ));
    }
    let grows = match (
        old.size.as_ref().and_then(quantity::parse),
        new.size.as_ref().and_then(quantity::parse),
    ) {
        (Some(o), Some(n)) => n > o,
        _ => false,
    };
    if !grows {
        return Err(deny(
            "GN-U13",
            format!("{field}.size"),
            format!("{field}.size may only grow on an existing managed volume"),
        ));
    }
    Ok(())
}

/// GN-U13: storage topology and per-volume immutability of a managed
/// StatefulSet node (external and pool nodes have no volumes here).
pub fn check_topology(old: &GarageNode, new: &GarageNode) -> Step {
    if !facts::is_managed_statefulset(new) {
        return Ok(());
    }
    let child = is_operator_child(new);
    let (o, n) = match (&old.spec.storage, &new.spec.storage) {
        (None, None) => return Ok(()),
        (Some(o), Some(n)) => (o, n),
        _ => {
            return Err(deny(
                "GN-U13",
                "spec.storage",
                "storage volume topology is immutable on an existing managed GarageNode; create a replacement GarageNode and drain this one",
            ));
        }
    };
    volume(
        "spec.storage.metadata",
        o.metadata.as_ref(),
        n.metadata.as_ref(),
        true,
        child,
    )?;
    let old_paths = o.data_paths.as_deref().unwrap_or_default();
    let new_paths = n.data_paths.as_deref().unwrap_or_default();
    if o.data.is_some() != n.data.is_some() || old_paths.len() != new_paths.len() {
        return Err(deny(
            "GN-U13",
            "spec.storage",
            "storage.data/storage.dataPaths topology is immutable on an existing GarageNode; a disk cannot be added, removed or switched between data and dataPaths in place",
        ));
    }
    volume(
        "spec.storage.data",
        o.data.as_ref(),
        n.data.as_ref(),
        true,
        child,
    )?;
    for (i, (op, np)) in old_paths.iter().zip(new_paths).enumerate() {
        volume(
            &format!("spec.storage.dataPaths[{i}]"),
            Some(op),
            Some(np),
            false,
            child,
        )?;
    }
    Ok(())
}
