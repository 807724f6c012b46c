//! The storage PodDisruptionBudget `C` (reconciler spec §3.10).

use std::collections::BTreeMap;

use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::ObjectMeta;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation;

use super::{DesiredError, Settings, controller_ref, labels, rendered_hash};
use crate::names;

/// The storage PDB, or `None` when `storage.podDisruptionBudget.enabled` is false or there
/// are no members to protect.
pub fn storage_pdb(
    c: &GarageCluster,
    s: &Settings,
) -> Result<Option<PodDisruptionBudget>, DesiredError> {
    let cfg = c
        .spec
        .storage
        .as_ref()
        .and_then(|st| st.pod_disruption_budget.as_ref());
    if cfg.and_then(|p| p.enabled) == Some(false) || s.replicas == 0 && s.pools.is_empty() {
        return Ok(None);
    }
    let (min_available, max_unavailable) = match (
        cfg.and_then(|p| p.min_available.clone()),
        cfg.and_then(|p| p.max_unavailable.clone()),
    ) {
        (Some(min), _) => (Some(min), None),
        (None, Some(max)) => (None, Some(max)),
        // One voluntary disruption at a time keeps a quorum of every partition up.
        // Pool members count beside the default group, whose size alone says nothing then.
        (None, None) if s.replicas <= 1 || !s.pools.is_empty() => (None, Some(IntOrString::Int(1))),
        (None, None) => (
            Some(IntOrString::Int(
                i32::try_from(s.replicas - 1).unwrap_or(i32::MAX),
            )),
            None,
        ),
    };
    let spec = PodDisruptionBudgetSpec {
        selector: Some(LabelSelector {
            match_labels: Some(labels::storage_pdb_selector(&s.name)),
            match_expressions: None,
        }),
        min_available,
        max_unavailable,
        ..Default::default()
    };
    Ok(Some(PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some(names::storage_pdb(&s.name)),
            namespace: Some(s.namespace.clone()),
            labels: Some(labels::cluster_labels(&s.name)),
            annotations: Some(BTreeMap::from([(
                annotation::ANNOTATION_RENDERED_HASH.to_owned(),
                rendered_hash(&spec),
            )])),
            owner_references: Some(vec![controller_ref(c)?]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::test_support::cluster;
    use shared_types::garage_cluster::common::PodDisruptionBudgetConfig;

    fn pdb(c: &GarageCluster) -> Option<PodDisruptionBudget> {
        storage_pdb(c, &Settings::from_cluster(c).unwrap()).unwrap()
    }

    #[test]
    fn default_budget_keeps_all_but_one() {
        let spec = pdb(&cluster(3)).unwrap().spec.unwrap();
        assert_eq!(spec.min_available, Some(IntOrString::Int(2)));
        assert_eq!(spec.max_unavailable, None);
        let one = pdb(&cluster(1)).unwrap().spec.unwrap();
        assert_eq!(one.max_unavailable, Some(IntOrString::Int(1)));
    }

    #[test]
    fn explicit_values_and_disable_are_honoured() {
        let mut c = cluster(3);
        c.spec.storage.as_mut().unwrap().pod_disruption_budget = Some(PodDisruptionBudgetConfig {
            max_unavailable: Some(IntOrString::String("25%".into())),
            ..Default::default()
        });
        let spec = pdb(&c).unwrap().spec.unwrap();
        assert_eq!(
            spec.max_unavailable,
            Some(IntOrString::String("25%".into()))
        );
        c.spec.storage.as_mut().unwrap().pod_disruption_budget = Some(PodDisruptionBudgetConfig {
            enabled: Some(false),
            ..Default::default()
        });
        assert!(pdb(&c).is_none());
    }
}
