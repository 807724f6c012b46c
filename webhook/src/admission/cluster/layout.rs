//! Layout rules: GC-C18 zone redundancy, GC-C27 minNodesHealthy, GC-U13 and
//! GC-U14 one-way Manual, GC-S11 replication factor (with warning GC-W31), and
//! the zoneFrom and PDB warnings GC-W5..W7, GC-W15..W17.

use shared_types::garage_cluster::common::{
    LayoutPolicy, PodDisruptionBudgetConfig, ZoneRedundancyMode,
};
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterSpec};
use shared_types::keys::annotation::ANNOTATION_PURGE_CLUSTER_LAYOUT;

use super::tiers::Shape;
use crate::admission::Verdict;
use crate::admission::shared::deny_first;
use crate::admission::shared::replication::{check_factor_change, check_zone_redundancy};

/// GC-C18 and GC-C27.
pub fn check_shape(spec: &GarageClusterSpec, verdict: &mut Verdict) {
    deny_first(
        verdict,
        "GC-C18",
        check_zone_redundancy(spec.replication.as_ref()),
    );
    let shape = Shape::of(spec);
    if let Some(m) = spec
        .layout_management
        .as_ref()
        .and_then(|l| l.min_nodes_healthy)
    {
        let f = "spec.layoutManagement.minNodesHealthy";
        if m < 0 {
            verdict.deny("GC-C27", f, "minNodesHealthy must be non-negative");
        } else if m > 0 && !shape.has_pools() && m > i64::from(shape.total_replicas()) {
            verdict.deny("GC-C27", f, format!("minNodesHealthy ({m}) cannot exceed total replicas ({}) — layout changes would never be applied", shape.total_replicas()));
        }
    }
}

fn pdb_unbounded(p: Option<&PodDisruptionBudgetConfig>) -> bool {
    p.is_some_and(|p| {
        p.enabled != Some(false) && p.min_available.is_none() && p.max_unavailable.is_none()
    })
}

/// GC-W5..W7 and GC-W15..W17.
pub fn warnings(spec: &GarageClusterSpec, verdict: &mut Verdict) {
    let shape = Shape::of(spec);
    if let Some(z) = spec.zone_from.as_ref() {
        if shape.storage().is_none() {
            verdict.warn("GC-W6", "zoneFrom has no effect without a storage tier — it is not applied to gateway nodes");
        } else if shape.storage_policy() == LayoutPolicy::Manual && !shape.has_pools() {
            verdict.warn("GC-W5", "zoneFrom has no effect with layoutPolicy: Manual — set zoneFrom on each GarageNode instead");
        }
        if let Some(r) = spec
            .replication
            .as_ref()
            .filter(|r| r.zone_redundancy_mode == Some(ZoneRedundancyMode::AtLeast))
        {
            let n = r.zone_redundancy_min_zones.unwrap_or(0);
            verdict.warn("GC-W7", format!("zoneRedundancyMode: AtLeast({n}) requires the {:?} label to resolve to at least {n} distinct values across scheduled storage pods, or layout apply will fail", z.node_label));
        }
    }
    if let Some(s) = shape.storage()
        && pdb_unbounded(s.pod_disruption_budget.as_ref())
    {
        verdict.warn("GC-W15", "storage.podDisruptionBudget is enabled without minAvailable or maxUnavailable; defaulting to one storage pod down at a time: minAvailable = (storage members - 1), counting Auto, Manual and node-local pool members alike");
    }
    if let Some(g) = spec.gateway.as_ref() {
        let manual = shape.cluster_policy() == LayoutPolicy::Manual;
        if pdb_unbounded(g.pod_disruption_budget.as_ref()) {
            if manual {
                verdict.warn("GC-W16", "gateway.podDisruptionBudget is enabled without minAvailable or maxUnavailable; defaulting to maxUnavailable=1 across dynamic Manual membership");
            } else {
                verdict.warn("GC-W16", "gateway.podDisruptionBudget is enabled without minAvailable or maxUnavailable; defaulting to minAvailable=(replicas-1)");
            }
        }
        let enabled = g
            .pod_disruption_budget
            .as_ref()
            .is_some_and(|p| p.enabled != Some(false));
        if enabled && shape.gateway_replicas() == 0 && !manual {
            verdict.warn("GC-W17", "gateway.podDisruptionBudget is enabled but gateway.replicas is 0; no PDB will be created");
        }
    }
}

/// GC-U13 and GC-U14: Manual never turns back into Auto.
pub fn check_policy_update(
    old: &GarageClusterSpec,
    new: &GarageClusterSpec,
    verdict: &mut Verdict,
) {
    if old.layout_policy == Some(LayoutPolicy::Manual)
        && new.layout_policy == Some(LayoutPolicy::Auto)
    {
        verdict.deny("GC-U13", "spec.layoutPolicy", "layoutPolicy transition from Manual to Auto is not supported (the change is one-way: Auto to Manual only); keep Manual");
        return;
    }
    let (o, n) = (Shape::of(old), Shape::of(new));
    if o.storage().is_some()
        && n.storage().is_some()
        && o.storage_policy() == LayoutPolicy::Manual
        && n.storage_policy() != LayoutPolicy::Manual
    {
        verdict.deny("GC-U14", "spec.storage.layoutPolicy", "spec.storage.layoutPolicy transition from Manual to Auto is not supported (one-way only); keep the storage layout Manual");
    }
}

/// GC-S11: SH-24 on the replication factor; an allowed change warns (GC-W31).
pub fn check_factor(old: &GarageClusterSpec, new: &GarageCluster, verdict: &mut Verdict) {
    let factor = |s: &GarageClusterSpec| s.replication.as_ref().and_then(|r| r.factor).unwrap_or(3);
    let ann = new
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_PURGE_CLUSTER_LAYOUT))
        .map(String::as_str);
    match check_factor_change(factor(old), factor(&new.spec), ann) {
        Ok(Some(w)) => verdict.warn("GC-W31", w),
        Ok(None) => {}
        Err(p) => verdict.deny("GC-S11", p.field, p.message),
    }
}
