//! GC-S5: default-group and gateway volumes while replicas are live, with
//! the VolumeAttributesClass carve-out (GC-VAC-1).
//!
//! A live StatefulSet's claim templates are immutable and its bound claims
//! carry a Garage identity, so only size growth and a class change (which
//! the operator applies to bound claims in place) are live edits. Removing
//! a class is refused because the backend would keep the old parameters
//! while the spec says "no class".

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use shared_types::garage_cluster::common::{DataPathVolumeConfig, VolumeConfig};
use shared_types::garage_cluster::v1beta2::GarageClusterSpec;

use super::legacy;
use super::tiers::Shape;
use crate::admission::Verdict;
use crate::admission::shared::quantity::milli_value;

fn shape_of(v: &VolumeConfig) -> VolumeConfig {
    VolumeConfig {
        size: None,
        paths: None,
        volume_claim_template_spec: None,
        volume_attributes_class_name: None,
        ..v.clone()
    }
}

fn path_shape_of(v: &DataPathVolumeConfig) -> DataPathVolumeConfig {
    DataPathVolumeConfig {
        size: None,
        volume_claim_template_spec: None,
        volume_attributes_class_name: None,
        ..v.clone()
    }
}

fn grows_or_same(old: Option<&Quantity>, new: Option<&Quantity>) -> bool {
    match (old, new) {
        (None, None) => true,
        (Some(o), Some(n)) => {
            o == n || matches!((milli_value(o), milli_value(n)), (Some(o), Some(n)) if n >= o)
        }
        _ => false,
    }
}

/// GC-VAC-1: a configured class may change but not disappear while live.
fn check_vac(field: &str, old: Option<&String>, new: Option<&String>, verdict: &mut Verdict) {
    if let (Some(o), None) = (old, new) {
        verdict.deny(
            "GC-VAC-1",
            format!("{field}.volumeAttributesClassName"),
            format!("cannot unset volumeAttributesClassName {o:?} while replicas are live: the volumes would keep the class's parameters while the spec says none; set an explicit \"default\" VolumeAttributesClass instead, or drain the group to zero first"),
        );
    }
}

/// The GC-S5(a) comparison of one volume; `group` names the workload in
/// messages.
pub fn compare_volume(
    field: &str,
    old: Option<&VolumeConfig>,
    new: Option<&VolumeConfig>,
    verdict: &mut Verdict,
) {
    let (o, n) = match (old, new) {
        (None, None) => return,
        (Some(o), Some(n)) => (o, n),
        _ => {
            verdict.deny("GC-S5", field, format!("{field} volume topology is immutable while its default StatefulSet/PVC group has live replicas; drain the group to zero before changing volume sources"));
            return;
        }
    };
    let (mut os, mut ns) = (shape_of(o), shape_of(n));
    legacy::normalise(o, &mut os, &mut ns);
    if os != ns {
        verdict.deny("GC-S5", field, format!("{field} PVC/EmptyDir type, storage class, access modes, selector, labels, annotations, and claim template are immutable while replicas are live; only size growth (and a volumeAttributesClassName change) is supported"));
    }
    check_vac(
        field,
        o.volume_attributes_class_name.as_ref(),
        n.volume_attributes_class_name.as_ref(),
        verdict,
    );
    if !grows_or_same(o.size.as_ref(), n.size.as_ref()) {
        verdict.deny("GC-S5", format!("{field}.size"), format!("{field}.size may only grow while the default StatefulSet/PVC group has live replicas"));
    }
    let (op, np) = (
        o.paths.as_deref().unwrap_or_default(),
        n.paths.as_deref().unwrap_or_default(),
    );
    if op.len() != np.len() {
        verdict.deny("GC-S5", format!("{field}.paths"), format!("{field}.paths topology is immutable while replicas are live; drain the group to zero before adding or removing data paths"));
        return;
    }
    for (i, (a, b)) in op.iter().zip(np).enumerate() {
        let pf = format!("{field}.paths[{i}]");
        if a.path != b.path
            || a.read_only != b.read_only
            || a.volume.is_some() != b.volume.is_some()
        {
            verdict.deny("GC-S5", pf.clone(), format!("paths[{i}] path, readOnly state, and volume source are immutable while replicas are live"));
            continue;
        }
        if !grows_or_same(a.capacity.as_ref(), b.capacity.as_ref()) {
            verdict.deny(
                "GC-S5",
                format!("{pf}.capacity"),
                format!("paths[{i}].capacity may only grow while replicas are live"),
            );
        }
        if let (Some(av), Some(bv)) = (a.volume.as_ref(), b.volume.as_ref()) {
            let (mut a_shape, mut b_shape) = (path_shape_of(av), path_shape_of(bv));
            legacy::normalise(av, &mut a_shape, &mut b_shape);
            if a_shape != b_shape {
                verdict.deny("GC-S5", format!("{pf}.volume"), format!("paths[{i}].volume topology is immutable while replicas are live; only size growth is supported"));
            }
            check_vac(
                &format!("{pf}.volume"),
                av.volume_attributes_class_name.as_ref(),
                bv.volume_attributes_class_name.as_ref(),
                verdict,
            );
            if !grows_or_same(av.size.as_ref(), bv.size.as_ref()) {
                verdict.deny(
                    "GC-S5",
                    format!("{pf}.volume.size"),
                    format!("paths[{i}].volume.size may only grow while replicas are live"),
                );
            }
        }
    }
}

/// Whether an edge gateway's metadata volume changed in a way its live
/// replicas would see: the claim template (never rendered), the class
/// (changed in place on live claims) and the fields GC-U5 neutralises do not count.
pub fn edge_metadata_changed(old: Option<&VolumeConfig>, new: Option<&VolumeConfig>) -> bool {
    let strip = |v: &VolumeConfig| VolumeConfig {
        volume_claim_template_spec: None,
        volume_attributes_class_name: None,
        ..v.clone()
    };
    match (old, new) {
        (Some(o), Some(n)) => {
            let (mut os, mut ns) = (strip(o), strip(n));
            legacy::normalise(o, &mut os, &mut ns);
            os != ns
        }
        (o, n) => o.is_some() != n.is_some(),
    }
}

/// GC-S5 (a) and (b) for an UPDATE.
pub fn check_update(old: &GarageClusterSpec, new: &GarageClusterSpec, verdict: &mut Verdict) {
    let (o, n) = (Shape::of(old), Shape::of(new));
    if let (Some(os), Some(ns)) = (o.storage(), n.storage())
        && (o.managed_default_pool() || n.managed_default_pool())
    {
        compare_volume(
            "spec.storage.metadata",
            os.metadata.as_ref(),
            ns.metadata.as_ref(),
            verdict,
        );
        compare_volume(
            "spec.storage.data",
            os.data.as_ref(),
            ns.data.as_ref(),
            verdict,
        );
    }
    if let (Some(og), Some(ng)) = (old.gateway.as_ref(), new.gateway.as_ref())
        && (o.managed_gateway() || n.managed_gateway())
    {
        let om = og.metadata.as_ref();
        let nm = ng.metadata.as_ref();
        let edge = old.storage.is_none() && new.storage.is_none();
        // The edge rule ignores the class; its own unset rule
        // still applies through compare_volume.
        if edge && edge_metadata_changed(om, nm) {
            verdict.deny("GC-S5", "spec.gateway.metadata", "spec.gateway.metadata cannot change while an edge gateway has live replicas: scale spec.gateway.replicas to 0, wait for its capacity-less roles to retire, then change the metadata PVC/EmptyDir configuration");
            check_vac(
                "spec.gateway.metadata",
                om.and_then(|m| m.volume_attributes_class_name.as_ref()),
                nm.and_then(|m| m.volume_attributes_class_name.as_ref()),
                verdict,
            );
        } else {
            compare_volume("spec.gateway.metadata", om, nm, verdict);
        }
    }
}
