//! Conversion transport on v1beta2 objects: GC-C12 reserved annotations,
//! GC-C13 the 256 KiB projection budget, GC-U8 released transport
//! annotations and GC-U9 the legacy budget.

use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::{
    ANNOTATION_V1BETA2_GATEWAY_TIER, ANNOTATION_V1BETA2_NODE_LOCAL_POOLS, ANNOTATION_V1BETA2_ONLY,
};

use crate::admission::Verdict;
use crate::convert::annotations::{
    MARKER_GATEWAY_TIER_PRESENT, MARKER_NODE_LOCAL_POOLS_PRESENT, TOTAL_ANNOTATION_SIZE_LIMIT,
    projected_v1beta1_annotation_size,
};

const PAYLOADS: [&str; 2] = [
    ANNOTATION_V1BETA2_NODE_LOCAL_POOLS,
    ANNOTATION_V1BETA2_GATEWAY_TIER,
];
const MARKERS: [&str; 2] = [MARKER_NODE_LOCAL_POOLS_PRESENT, MARKER_GATEWAY_TIER_PRESENT];

fn get<'a>(c: &'a GarageCluster, k: &str) -> Option<&'a String> {
    c.metadata.annotations.as_ref().and_then(|a| a.get(k))
}

fn reserved_components(c: &GarageCluster) -> Vec<String> {
    get(c, ANNOTATION_V1BETA2_ONLY)
        .map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|p| MARKERS.contains(p))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// GC-C12: a v1beta2 object never carries transport data.
pub fn check_reserved(c: &GarageCluster, verdict: &mut Verdict) {
    for k in PAYLOADS {
        if get(c, k).is_some() {
            verdict.deny(
                "GC-C12",
                format!("metadata.annotations[{k}]"),
                format!(
                    "metadata.annotations[{k:?}] is reserved for v1beta1 API conversion; remove it"
                ),
            );
        }
    }
    for m in reserved_components(c) {
        verdict.deny(
            "GC-C12",
            format!("metadata.annotations[{ANNOTATION_V1BETA2_ONLY}]"),
            format!("component {m:?} is reserved for v1beta1 API conversion; remove it"),
        );
    }
}

/// GC-U8: released transport annotations may stay unchanged (ignored by
/// the validation copy, warning GC-W25) or be removed.
pub fn grandfather(
    old: &GarageCluster,
    new: &GarageCluster,
    copy: &mut GarageCluster,
    verdict: &mut Verdict,
) {
    for k in PAYLOADS {
        match (get(old, k), get(new, k)) {
            (Some(o), Some(n)) if o == n => {
                verdict.warn("GC-W25", format!("metadata.annotations[{k:?}] is now reserved for conversion; its unchanged legacy value is ignored during this update and should be removed"));
                if let Some(a) = copy.metadata.annotations.as_mut() {
                    a.remove(k);
                }
            }
            (Some(_), Some(_)) => verdict.deny("GC-U8", format!("metadata.annotations[{k}]"), format!("metadata.annotations[{k:?}] is reserved for conversion; a released value may only remain byte-for-byte unchanged or be removed")),
            _ => {}
        }
    }
    let (oc, nc) = (reserved_components(old), reserved_components(new));
    if !oc.is_empty() && !nc.is_empty() {
        if nc.iter().all(|m| oc.contains(m)) {
            verdict.warn("GC-W25", format!("metadata.annotations[{ANNOTATION_V1BETA2_ONLY:?}] keeps components now reserved for conversion; they are ignored during this update and should be removed"));
            if let Some(a) = copy.metadata.annotations.as_mut() {
                let rest: Vec<String> = a
                    .get(ANNOTATION_V1BETA2_ONLY)
                    .map(|v| {
                        v.split(',')
                            .map(str::trim)
                            .filter(|p| !MARKERS.contains(p))
                            .map(String::from)
                            .collect()
                    })
                    .unwrap_or_default();
                if rest.is_empty() {
                    a.remove(ANNOTATION_V1BETA2_ONLY);
                } else {
                    a.insert(ANNOTATION_V1BETA2_ONLY.to_string(), rest.join(","));
                }
            }
        } else {
            verdict.deny("GC-U8", format!("metadata.annotations[{ANNOTATION_V1BETA2_ONLY}]"), "contains components now reserved for conversion that the released object did not carry; remove them");
        }
    }
}

/// GC-C13 (and GC-U9 on UPDATE): the v1beta1 projection must fit the
/// Kubernetes annotation limit; an already oversized released object may
/// not grow (keeping its size warns with GC-W26).
pub fn check_budget(old: Option<&GarageCluster>, new: &GarageCluster, verdict: &mut Verdict) {
    let size = match projected_v1beta1_annotation_size(new) {
        Ok(s) => s,
        Err(e) => {
            verdict.deny(
                "GC-C13",
                "metadata.annotations",
                format!("cannot project the v1beta1 conversion annotations: {e}"),
            );
            return;
        }
    };
    if size <= TOTAL_ANNOTATION_SIZE_LIMIT {
        return;
    }
    let before = old.and_then(|o| projected_v1beta1_annotation_size(o).ok());
    match before {
        Some(b) if b > TOTAL_ANNOTATION_SIZE_LIMIT && size <= b => verdict.warn("GC-W26", format!("v1beta1 conversion projection remains above the Kubernetes limit {TOTAL_ANNOTATION_SIZE_LIMIT} ({size} bytes); this non-expanding update is temporarily tolerated so the object can shrink")),
        Some(b) if b > TOTAL_ANNOTATION_SIZE_LIMIT => verdict.deny("GC-U9", "metadata.annotations", format!("v1beta2-only storage.nodeLocalPools/gateway conversion projection exceeds Kubernetes' {TOTAL_ANNOTATION_SIZE_LIMIT}-byte annotation limit and may not grow ({b} -> {size})")),
        _ => verdict.deny("GC-C13", "metadata.annotations", format!("v1beta2-only storage.nodeLocalPools/gateway data is too large to round-trip through v1beta1 conversion annotations: projected annotation size {size} exceeds Kubernetes limit {TOTAL_ANNOTATION_SIZE_LIMIT}; shrink pool or gateway templates")),
    }
}
