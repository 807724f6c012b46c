//! Warnings about what voluntary disruptions and claim retention can take away: a storage
//! budget that lets evictions take more pods down together than the replication factor
//! tolerates, and a claim retention policy of `Delete`, said with what it deletes and when.
//!
//! They warn and never deny: the user's budget and policy are honoured as written, and
//! someone who knows their failure domains may want them.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use shared_types::garage_cluster::common::{LayoutPolicy, PvcRetention};
use shared_types::garage_cluster::v1beta2::GarageClusterSpec;

use super::tiers::Shape;
use crate::admission::Verdict;

/// How many of a partition's copies may be away while writes still reach Garage's write
/// quorum (a majority of the copies): 1 for factor 3, 2 for factor 5. Never below 1, since
/// a budget that allows nothing blocks every node drain.
pub fn tolerable_down(factor: i64) -> i64 {
    let quorum = factor / 2 + 1;
    (factor - quorum).max(1)
}

/// The most storage pods the user's budget lets voluntary evictions take down together, when
/// admission can tell: `None` for a percentage (it grows with the members) or a
/// `minAvailable` on a cluster whose member count admission does not know.
fn allowed_down(
    min_available: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    known_members: Option<i64>,
) -> Option<i64> {
    match (min_available, max_unavailable) {
        (Some(IntOrString::Int(min)), _) => known_members.map(|n| n - i64::from(*min)),
        (Some(IntOrString::String(_)), _) => None,
        (None, Some(IntOrString::Int(max))) => Some(i64::from(*max)),
        (None, Some(IntOrString::String(_))) | (None, None) => None,
    }
}

/// The budget warning: names the field, what it allows and what to set instead.
pub fn budget_warning(spec: &GarageClusterSpec) -> Option<String> {
    let shape = Shape::of(spec);
    let storage = shape.storage()?;
    let pdb = storage.pod_disruption_budget.as_ref()?;
    if pdb.enabled == Some(false) {
        return None;
    }
    let factor = spec
        .replication
        .as_ref()
        .and_then(|r| r.factor)
        .unwrap_or(3);
    let tolerable = tolerable_down(factor);
    // Only an Auto group without pools has a member count admission knows.
    let known = (shape.storage_policy() != LayoutPolicy::Manual && !shape.has_pools())
        .then(|| i64::from(shape.storage_replicas()));
    let (field, value) = match (&pdb.min_available, &pdb.max_unavailable) {
        (Some(v), _) => ("minAvailable", v),
        (None, Some(v)) => ("maxUnavailable", v),
        (None, None) => return None,
    };
    let shown = match value {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.clone(),
    };
    let fix = format!(
        "leave podDisruptionBudget's minAvailable and maxUnavailable unset for one storage pod down at a time{}",
        if tolerable > 1 {
            format!(", or allow at most {tolerable}")
        } else {
            String::new()
        }
    );
    match allowed_down(
        pdb.min_available.as_ref(),
        pdb.max_unavailable.as_ref(),
        known,
    ) {
        Some(n) if n > tolerable => Some(format!(
            "spec.storage.podDisruptionBudget.{field}: {shown} lets voluntary evictions (node drains) take {n} storage pods down at once; with replication factor {factor} that can take a partition below Garage's write quorum ({} of {factor} copies) and fail writes until they return; {fix}",
            factor / 2 + 1
        )),
        Some(_) => None,
        None if matches!(value, IntOrString::String(_)) => Some(format!(
            "spec.storage.podDisruptionBudget.{field}: {shown} is a percentage, so the storage pods evictions may take down together grow with the cluster; more than {tolerable} down with replication factor {factor} can take a partition below Garage's write quorum; {fix}"
        )),
        None => None,
    }
}

/// The claim retention warnings: what `Delete` deletes and when, for the storage tier.
pub fn retention_warnings(spec: &GarageClusterSpec) -> Vec<String> {
    let Some(policy) = Shape::of(spec)
        .storage()
        .and_then(|s| s.pvc_retention_policy.as_ref())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if policy.when_deleted == Some(PvcRetention::Delete) {
        out.push("spec.storage.pvcRetentionPolicy.whenDeleted: Delete deletes a member's metadata and data claims whenever its StatefulSet is deleted: when a drained member is released after its proof, when the GarageCluster or the member's GarageNode is deleted, and if anyone deletes the StatefulSet by hand; the volumes then follow their StorageClass's reclaim policy. Use Retain to keep claims until you delete them".to_owned());
    }
    if policy.when_scaled == Some(PvcRetention::Delete) {
        out.push("spec.storage.pvcRetentionPolicy.whenScaled: Delete deletes nothing: every member's StatefulSet runs one pod and is scaled down only to fence a member acknowledged lost, and a fence always keeps the claims (the machine may come back before the proof ends)".to_owned());
    }
    out
}

/// Every warning of this module: GC-W34 the storage budget, GC-W35 claim retention.
pub fn warnings(spec: &GarageClusterSpec, verdict: &mut Verdict) {
    if let Some(w) = budget_warning(spec) {
        verdict.warn("GC-W34", w);
    }
    for w in retention_warnings(spec) {
        verdict.warn("GC-W35", w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared_types::garage_cluster::common::{
        PodDisruptionBudgetConfig, PvcRetentionPolicy, ReplicationConfig,
    };
    use shared_types::garage_cluster::v1beta2::StorageSpec;

    fn spec(
        replicas: i32,
        factor: Option<i64>,
        manual: bool,
        pdb: PodDisruptionBudgetConfig,
    ) -> GarageClusterSpec {
        GarageClusterSpec {
            replication: factor.map(|f| ReplicationConfig {
                factor: Some(f),
                ..Default::default()
            }),
            storage: Some(StorageSpec {
                replicas: Some(replicas),
                layout_policy: manual.then_some(LayoutPolicy::Manual),
                pod_disruption_budget: Some(pdb),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn max(v: IntOrString) -> PodDisruptionBudgetConfig {
        PodDisruptionBudgetConfig {
            max_unavailable: Some(v),
            ..Default::default()
        }
    }

    fn min(v: IntOrString) -> PodDisruptionBudgetConfig {
        PodDisruptionBudgetConfig {
            min_available: Some(v),
            ..Default::default()
        }
    }

    #[test]
    fn tolerable_down_is_what_the_write_quorum_spares() {
        for (factor, want) in [(1, 1), (2, 1), (3, 1), (4, 1), (5, 2), (7, 3)] {
            assert_eq!(tolerable_down(factor), want, "factor {factor}");
        }
    }

    #[test]
    fn budgets_that_can_lose_quorum_warn_naming_the_field() {
        use IntOrString::{Int, String as Pct};
        // (why, replicas, factor, manual, budget, warns, field named)
        let cases = [
            ("maxUnavailable 1", 5, None, false, max(Int(1)), false),
            (
                "maxUnavailable 2, factor 3",
                5,
                None,
                false,
                max(Int(2)),
                true,
            ),
            (
                "maxUnavailable 2, factor 5",
                7,
                Some(5),
                false,
                max(Int(2)),
                false,
            ),
            (
                "maxUnavailable 3, factor 5",
                7,
                Some(5),
                false,
                max(Int(3)),
                true,
            ),
            ("a percentage", 5, None, false, max(Pct("25%".into())), true),
            ("minAvailable n-1", 5, None, false, min(Int(4)), false),
            ("minAvailable n-2", 5, None, false, min(Int(3)), true),
            (
                "minAvailable percentage",
                5,
                None,
                false,
                min(Pct("50%".into())),
                true,
            ),
            // Manual members are not known at admission: an integer cannot be judged.
            ("Manual minAvailable", 0, None, true, min(Int(1)), false),
            ("Manual maxUnavailable 2", 0, None, true, max(Int(2)), true),
        ];
        for (why, replicas, factor, manual, pdb, warns) in cases {
            let field = if pdb.min_available.is_some() {
                "spec.storage.podDisruptionBudget.minAvailable"
            } else {
                "spec.storage.podDisruptionBudget.maxUnavailable"
            };
            let got = budget_warning(&spec(replicas, factor, manual, pdb));
            assert_eq!(got.is_some(), warns, "{why}: {got:?}");
            if let Some(w) = got {
                assert!(w.starts_with(field), "{why}: {w}");
                assert!(w.contains("write quorum"), "{why}: {w}");
            }
        }
        let disabled = PodDisruptionBudgetConfig {
            enabled: Some(false),
            ..max(IntOrString::Int(5))
        };
        assert_eq!(budget_warning(&spec(5, None, false, disabled)), None);
        assert_eq!(
            budget_warning(&spec(5, None, false, Default::default())),
            None
        );
    }

    #[test]
    fn retention_delete_says_what_it_deletes() {
        let mut s = spec(3, None, false, Default::default());
        assert!(retention_warnings(&s).is_empty());
        s.storage.as_mut().unwrap().pvc_retention_policy = Some(PvcRetentionPolicy {
            when_deleted: Some(PvcRetention::Delete),
            when_scaled: Some(PvcRetention::Delete),
        });
        let w = retention_warnings(&s);
        assert_eq!(w.len(), 2);
        assert!(w[0].starts_with("spec.storage.pvcRetentionPolicy.whenDeleted: Delete"));
        assert!(w[0].contains("drained member is released"));
        assert!(w[1].starts_with("spec.storage.pvcRetentionPolicy.whenScaled: Delete"));
        assert!(w[1].contains("fence always keeps the claims"));
    }
}
