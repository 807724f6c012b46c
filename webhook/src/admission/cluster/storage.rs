//! Storage and gateway volume shapes: GC-C8..C10 pod templates and tags,
//! GC-C11 claim templates (with GC-U2 grandfathering), GC-C22 default-group
//! volumes, GC-C23 gateway metadata (with GC-U3), GC-W8 and the
//! VolumeAttributesClass warnings GC-W32 and GC-W33.

use shared_types::common::VolumeType;
use shared_types::garage_cluster::common::{LayoutPolicy, VolumeConfig};
use shared_types::garage_cluster::v1beta2::GarageClusterSpec;

use super::tiers::Shape;
use crate::admission::Verdict;
use crate::admission::shared::env::check_env;
use crate::admission::shared::labels::{check_node_tags, check_pod_labels};
use crate::admission::shared::volume::{
    CLAIM_TEMPLATE_MESSAGE, VolumeShape, check_volume_shape, vac_selector_warning,
};
use crate::admission::shared::{Problem, deny_all};

/// GC-C8, GC-C9, GC-C10: pod labels, reserved env and default node tags.
/// `strict_labels` is false on UPDATE, where GC-U4 judged the labels.
pub fn check_templates(spec: &GarageClusterSpec, strict_labels: bool, verdict: &mut Verdict) {
    if let Some(s) = spec.storage.as_ref() {
        if strict_labels {
            deny_all(
                verdict,
                "GC-C8",
                check_pod_labels("spec.storage.podLabels", s.pod_labels.as_ref()),
            );
        }
        deny_all(
            verdict,
            "GC-C8",
            check_env("spec.storage", s.env.as_ref(), s.env_from.as_ref()),
        );
        for pool in s.node_local_pools.iter().flatten() {
            if let Some(t) = pool.pod_template.as_ref() {
                let field = format!("spec.storage.nodeLocalPools[{:?}].podTemplate", pool.name);
                deny_all(
                    verdict,
                    "GC-C8",
                    check_env(&field, t.env.as_ref(), t.env_from.as_ref()),
                );
            }
        }
    }
    if let Some(g) = spec.gateway.as_ref() {
        if strict_labels {
            deny_all(
                verdict,
                "GC-C9",
                check_pod_labels("spec.gateway.podLabels", g.pod_labels.as_ref()),
            );
        }
        deny_all(
            verdict,
            "GC-C9",
            check_env("spec.gateway", g.env.as_ref(), g.env_from.as_ref()),
        );
    }
    deny_all(
        verdict,
        "GC-C10",
        check_node_tags("spec.defaultNodeTags", spec.default_node_tags.as_ref()),
    );
}

/// Every claim-template field set on `spec`, sorted by path.
pub fn claim_template_fields(spec: &GarageClusterSpec) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(s) = spec.storage.as_ref() {
        if s.metadata
            .as_ref()
            .is_some_and(|m| m.volume_claim_template_spec.is_some())
        {
            out.push("spec.storage.metadata.volumeClaimTemplateSpec".to_string());
        }
        if let Some(d) = s.data.as_ref() {
            if d.volume_claim_template_spec.is_some() {
                out.push("spec.storage.data.volumeClaimTemplateSpec".to_string());
            }
            for (i, p) in d.paths.iter().flatten().enumerate() {
                if p.volume
                    .as_ref()
                    .is_some_and(|v| v.volume_claim_template_spec.is_some())
                {
                    out.push(format!(
                        "spec.storage.data.paths[{i}].volume.volumeClaimTemplateSpec"
                    ));
                }
            }
        }
    }
    if spec
        .gateway
        .as_ref()
        .and_then(|g| g.metadata.as_ref())
        .is_some_and(|m| m.volume_claim_template_spec.is_some())
    {
        out.push("spec.gateway.metadata.volumeClaimTemplateSpec".to_string());
    }
    out.sort();
    out
}

/// GC-C11: claim templates are refused, Manual layouts included.
pub fn check_claim_templates(spec: &GarageClusterSpec, verdict: &mut Verdict) {
    if let Some(first) = claim_template_fields(spec).first() {
        verdict.deny("GC-C11", first.clone(), CLAIM_TEMPLATE_MESSAGE);
    }
}

fn template_of(spec: &GarageClusterSpec, field: &str) -> Option<serde_json::Value> {
    let v = serde_json::to_value(spec).ok()?;
    let mut cur = &v;
    for part in field.trim_start_matches("spec.").split('.') {
        cur = match part.split_once('[') {
            Some((name, idx)) => {
                let i: usize = idx.trim_end_matches(']').parse().ok()?;
                cur.get(name)?.get(i)?
            }
            None => cur.get(part)?,
        };
    }
    Some(cur.clone())
}

/// GC-U2: a released claim template may stay unchanged (warning GC-W19) or be
/// removed; the validation copy loses all of them.
pub fn grandfather_claim_templates(
    old: &GarageClusterSpec,
    new: &GarageClusterSpec,
    copy: &mut GarageClusterSpec,
    verdict: &mut Verdict,
) {
    let fields = claim_template_fields(new);
    if fields.is_empty() {
        return;
    }
    let mut kept = Vec::new();
    for f in &fields {
        if template_of(old, f).is_some() && template_of(old, f) == template_of(new, f) {
            kept.push(f.clone());
        } else {
            verdict.deny("GC-U2", f.clone(), CLAIM_TEMPLATE_MESSAGE);
        }
    }
    if !kept.is_empty() {
        verdict.warn("GC-W19", format!("legacy unsupported claim template fields {} were never applied by managed workloads; unchanged values are temporarily tolerated so they can be removed, but existing claims are not retroactively changed", kept.join(", ")));
    }
    clear_claim_templates(copy);
}

/// Removes every claim template from `spec` (the validation copy).
pub fn clear_claim_templates(spec: &mut GarageClusterSpec) {
    if let Some(s) = spec.storage.as_mut() {
        if let Some(m) = s.metadata.as_mut() {
            m.volume_claim_template_spec = None;
        }
        if let Some(d) = s.data.as_mut() {
            d.volume_claim_template_spec = None;
            for p in d.paths.iter_mut().flatten() {
                if let Some(v) = p.volume.as_mut() {
                    v.volume_claim_template_spec = None;
                }
            }
        }
    }
    if let Some(m) = spec.gateway.as_mut().and_then(|g| g.metadata.as_mut()) {
        m.volume_claim_template_spec = None;
    }
}

fn shape_problems(field: &str, v: &VolumeConfig) -> Vec<Problem> {
    // Claim templates are GC-C11's; SH-25 would only repeat them.
    check_volume_shape(
        field,
        VolumeShape {
            claim_template: None,
            ..VolumeShape::from(v)
        },
    )
}

/// GC-C22: the default group's volumes under an Auto storage policy.
pub fn check_default_group(spec: &GarageClusterSpec, verdict: &mut Verdict) {
    let shape = Shape::of(spec);
    let Some(s) = shape.storage() else { return };
    if shape.storage_policy() == LayoutPolicy::Manual {
        return;
    }
    if shape.storage_replicas() > 0 {
        for (field, v) in [
            ("spec.storage.metadata", &s.metadata),
            ("spec.storage.data", &s.data),
        ] {
            if v.is_none() {
                verdict.deny("GC-C22", field, "required when spec.storage.replicas is greater than 0; add the volume, or write replicas: 0 for a node-local-only or Manual-only storage tier".to_owned());
            }
        }
    }
    if let Some(m) = s.metadata.as_ref() {
        deny_all(
            verdict,
            "GC-C22",
            shape_problems("spec.storage.metadata", m),
        );
        if m.paths.as_ref().is_some_and(|p| !p.is_empty()) {
            verdict.deny(
                "GC-C22",
                "spec.storage.metadata.paths",
                "paths is only valid for data volumes; remove it",
            );
        }
    }
    if let Some(d) = s.data.as_ref() {
        deny_all(verdict, "GC-C22", shape_problems("spec.storage.data", d));
        for (i, p) in d.paths.iter().flatten().enumerate() {
            if let Some(v) = p.volume.as_ref() {
                let field = format!("spec.storage.data.paths[{i}].volume");
                let sh = VolumeShape {
                    claim_template: None,
                    ..VolumeShape::from(v)
                };
                deny_all(verdict, "GC-C22", check_volume_shape(&field, sh));
            }
        }
        let has_paths = d.paths.as_ref().is_some_and(|p| !p.is_empty());
        if d.type_ == Some(VolumeType::EmptyDir) {
            if has_paths {
                verdict.deny(
                    "GC-C22",
                    "spec.storage.data.paths",
                    "storage.data.paths: not allowed with EmptyDir type",
                );
            }
        } else if d.size.is_none() && !has_paths {
            verdict.deny("GC-C22", "spec.storage.data.size", "storage.data.size: must specify size for persistent data storage (or use storage.data.paths for multi-disk)");
        }
    }
}

/// GC-C23: gateway metadata.
pub fn check_gateway_metadata(spec: &GarageClusterSpec, verdict: &mut Verdict) {
    let Some(m) = spec.gateway.as_ref().and_then(|g| g.metadata.as_ref()) else {
        return;
    };
    let f = "spec.gateway.metadata";
    if m.paths.as_ref().is_some_and(|p| !p.is_empty()) {
        verdict.deny(
            "GC-C23",
            format!("{f}.paths"),
            "spec.gateway.metadata.paths: paths is only valid for storage data volumes",
        );
    }
    if m.volume_claim_template_spec.is_some() {
        verdict.deny("GC-C23", format!("{f}.volumeClaimTemplateSpec"), "volumeClaimTemplateSpec is not supported for gateway workloads; use size, storageClassName, accessModes, selector, labels and annotations");
    }
    if Shape::of(spec).cluster_policy() == LayoutPolicy::Manual {
        verdict.deny("GC-C23", f, "spec.gateway.metadata is not applied when spec.layoutPolicy is Manual; configure metadata storage on each user-owned gateway GarageNode");
    }
    deny_all(verdict, "GC-C23", shape_problems(f, m));
}

/// GC-U3: unchanged legacy gateway metadata in a Manual cluster is
/// tolerated (warning GC-W20) and dropped from the validation copy.
pub fn grandfather_manual_gateway_metadata(
    old: &GarageClusterSpec,
    new: &GarageClusterSpec,
    copy: &mut GarageClusterSpec,
    verdict: &mut Verdict,
) {
    let manual = |s: &GarageClusterSpec| Shape::of(s).cluster_policy() == LayoutPolicy::Manual;
    let strip = |v: Option<&VolumeConfig>| {
        v.map(|v| VolumeConfig {
            volume_claim_template_spec: None,
            ..v.clone()
        })
    };
    let om = strip(old.gateway.as_ref().and_then(|g| g.metadata.as_ref()));
    let nm = strip(new.gateway.as_ref().and_then(|g| g.metadata.as_ref()));
    if manual(old) && manual(new) && nm.is_some() && om == nm {
        verdict.warn("GC-W20", "legacy spec.gateway.metadata is ignored in Manual layout mode; its unchanged value is temporarily tolerated so it can be removed");
        if let Some(g) = copy.gateway.as_mut() {
            g.metadata = None;
        }
    }
}

/// GC-W8 and the VolumeAttributesClass warnings: GC-W32 a class with a selector, GC-W33 a
/// top-level data class beside `paths`, which the paths do not inherit.
pub fn warnings(spec: &GarageClusterSpec, verdict: &mut Verdict) {
    let empty = |v: &Option<VolumeConfig>| {
        v.as_ref()
            .is_some_and(|v| v.type_ == Some(VolumeType::EmptyDir))
    };
    if let Some(s) = spec.storage.as_ref() {
        if empty(&s.metadata) {
            verdict.warn(
                "GC-W8",
                "storage.metadata.type=EmptyDir: Node identity will be lost on pod restart",
            );
        }
        if empty(&s.data) {
            verdict.warn(
                "GC-W8",
                "storage.data.type=EmptyDir: All stored data will be lost on pod restart",
            );
        }
        for (f, v) in [
            ("spec.storage.metadata", &s.metadata),
            ("spec.storage.data", &s.data),
        ] {
            if let Some(w) = v.as_ref().and_then(|v| vac_selector_warning(f, v.into())) {
                verdict.warn("GC-W32", w);
            }
        }
        if let Some(d) = s.data.as_ref() {
            for (i, p) in d.paths.iter().flatten().enumerate() {
                if let Some(w) = p.volume.as_ref().and_then(|v| {
                    vac_selector_warning(&format!("spec.storage.data.paths[{i}].volume"), v.into())
                }) {
                    verdict.warn("GC-W32", w);
                }
            }
            if d.volume_attributes_class_name.is_some()
                && d.paths.as_ref().is_some_and(|p| !p.is_empty())
            {
                verdict.warn("GC-W33", "spec.storage.data.volumeAttributesClassName is not inherited by spec.storage.data.paths[].volume; set volumeAttributesClassName on each path volume that should use it");
            }
        }
    }
    if let Some(g) = spec.gateway.as_ref() {
        if empty(&g.metadata) {
            verdict.warn("GC-W8", "gateway.metadata.type=EmptyDir: gateway node identity will be lost on pod restart, churning the cluster layout");
        }
        if let Some(w) = g
            .metadata
            .as_ref()
            .and_then(|v| vac_selector_warning("spec.gateway.metadata", v.into()))
        {
            verdict.warn("GC-W32", w);
        }
    }
}
