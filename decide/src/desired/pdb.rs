//! The storage PodDisruptionBudget `C`.
//!
//! One budget covers every storage pod of the cluster: Auto members, Manual GarageNodes and
//! node-local pool members alike, since its selector matches them all. By default it allows
//! one storage pod down at a time, whatever mix of members the cluster has, so a voluntary
//! eviction can never take two copies of a partition away together.
//!
//! The default is an integer `minAvailable` (members − 1), never `maxUnavailable`: Kubernetes'
//! disruption controller resolves `maxUnavailable` (and percentages) through the pods'
//! controller's `scale` subresource, which DaemonSets (pool members) do not have, and a
//! budget it cannot resolve allows no eviction at all. An integer `minAvailable` is counted
//! against the pods the selector matches, whoever owns them.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use super::{DesiredError, Settings, labels};
use crate::names;

/// How many storage pods the budget must count: the most of the members the cluster plans
/// (`planned`: members with a workload, external ones excluded), the Auto group's declared
/// size, and the live storage pods its selector matches. Counting the live pods too keeps a
/// scale-down (pods still running for members already left out of the plan) from raising
/// the number of evictions allowed; counting the declared size keeps a scale-up from
/// lowering it before the new pods exist.
pub fn storage_members(planned: usize, s: &Settings, pods: &[Pod]) -> u32 {
    let selector = labels::storage_pdb_selector(&s.name);
    let live = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            let have = p.metadata.labels.as_ref();
            selector
                .iter()
                .all(|(k, v)| have.and_then(|l| l.get(k)) == Some(v))
        })
        .count();
    let auto = if s.manual { 0 } else { s.replicas };
    u32::try_from(planned.max(live))
        .unwrap_or(u32::MAX)
        .max(auto)
}

/// The storage PDB for a cluster with `members` storage pods (see [`storage_members`]), or
/// `None` when `storage.podDisruptionBudget.enabled` is false or there are no members to
/// protect.
pub fn storage_pdb(
    c: &GarageCluster,
    s: &Settings,
    members: u32,
) -> Result<Option<PodDisruptionBudget>, DesiredError> {
    let cfg = c
        .spec
        .storage
        .as_ref()
        .and_then(|st| st.pod_disruption_budget.as_ref());
    if cfg.and_then(|p| p.enabled) == Some(false) || members == 0 {
        return Ok(None);
    }
    // One voluntary disruption at a time keeps a quorum of every partition up.
    budget(
        c,
        s,
        cfg,
        members,
        labels::storage_pdb_selector(&s.name),
        names::storage_pdb(&s.name),
    )
}

/// How many gateway pods the gateway budget counts: the generated gateways declared and the
/// live gateway pods, whichever is more (the same reasons as [`storage_members`]).
pub fn gateway_members(s: &Settings, pods: &[Pod]) -> u32 {
    let selector = labels::gateway_selector(&s.name);
    let live = pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| {
            let have = p.metadata.labels.as_ref();
            selector
                .iter()
                .all(|(k, v)| have.and_then(|l| l.get(k)) == Some(v))
        })
        .count();
    u32::try_from(live)
        .unwrap_or(u32::MAX)
        .max(s.gateway_replicas)
}

/// The gateway PDB `C-gateway` for `members` gateway pods, beside a gateway tier: one gateway
/// down at a time unless `gateway.podDisruptionBudget` says otherwise. Gateways hold no data,
/// so it protects the availability of requests only. `None` when disabled, without a gateway
/// tier or without gateways.
pub fn gateway_pdb(
    c: &GarageCluster,
    s: &Settings,
    members: u32,
) -> Result<Option<PodDisruptionBudget>, DesiredError> {
    let cfg = c
        .spec
        .gateway
        .as_ref()
        .and_then(|g| g.pod_disruption_budget.as_ref());
    if !s.gateway_tier || cfg.and_then(|p| p.enabled) == Some(false) || members == 0 {
        return Ok(None);
    }
    budget(
        c,
        s,
        cfg,
        members,
        labels::gateway_selector(&s.name),
        names::gateway_service(&s.name),
    )
}

/// The budget `name` over the pods `selector` matches: the configured `minAvailable` (first) or
/// `maxUnavailable`, else `minAvailable` one less than `members`.
fn budget(
    c: &GarageCluster,
    s: &Settings,
    cfg: Option<&shared_types::garage_cluster::common::PodDisruptionBudgetConfig>,
    members: u32,
    selector: std::collections::BTreeMap<String, String>,
    name: String,
) -> Result<Option<PodDisruptionBudget>, DesiredError> {
    let (min_available, max_unavailable) = match (
        cfg.and_then(|p| p.min_available.clone()),
        cfg.and_then(|p| p.max_unavailable.clone()),
    ) {
        (Some(min), _) => (Some(min), None),
        (None, Some(max)) => (None, Some(max)),
        (None, None) => (
            Some(IntOrString::Int(
                i32::try_from(members - 1).unwrap_or(i32::MAX),
            )),
            None,
        ),
    };
    let spec = PodDisruptionBudgetSpec {
        selector: Some(LabelSelector {
            match_labels: Some(selector),
            match_expressions: None,
        }),
        min_available,
        max_unavailable,
        ..Default::default()
    };
    Ok(Some(PodDisruptionBudget {
        metadata: super::hashed_child_meta(c, s, name, &spec)?,
        spec: Some(spec),
        status: None,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::test_support::cluster;
    use shared_types::garage_cluster::common::{LayoutPolicy, PodDisruptionBudgetConfig};

    fn settings(c: &GarageCluster) -> Settings {
        Settings::from_cluster(c).unwrap()
    }

    fn pdb(c: &GarageCluster, members: u32) -> Option<PodDisruptionBudget> {
        storage_pdb(c, &settings(c), members).unwrap()
    }

    fn min_available(c: &GarageCluster, members: u32) -> Option<IntOrString> {
        pdb(c, members)
            .and_then(|p| p.spec)
            .and_then(|s| s.min_available)
    }

    /// A storage pod of `cluster` (any member shape carries these labels), terminating or not.
    fn pod(cluster: &str, node: &str, terminating: bool) -> Pod {
        Pod {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(format!("{node}-0")),
                labels: Some(labels::storage_pod_labels(cluster, node)),
                deletion_timestamp: terminating.then_some(
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                    ),
                ),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn manual() -> GarageCluster {
        let mut c = cluster(0);
        c.spec.storage.as_mut().unwrap().layout_policy = Some(LayoutPolicy::Manual);
        c
    }

    #[test]
    fn members_count_every_storage_pod_shape() {
        let auto = cluster(3);
        let s = settings(&auto);
        // (planned members with a workload, live pods, expected count)
        let three_pods = [
            pod("garage", "a", false),
            pod("garage", "b", false),
            pod("garage", "c", false),
        ];
        let five_pods = [
            three_pods.to_vec(),
            vec![pod("garage", "d", false), pod("garage", "e", false)],
        ]
        .concat();
        let other = [pod("other", "x", false)];
        let cases: Vec<(&str, usize, &[Pod], u32)> = vec![
            (
                "bootstrap: the declared Auto size before any pod",
                0,
                &[],
                3,
            ),
            ("Auto + Manual: every planned member", 5, &three_pods, 5),
            (
                "scale-down: pods of leaving members still count",
                3,
                &five_pods,
                5,
            ),
            ("another cluster's pods do not count", 3, &other, 3),
        ];
        for (why, planned, pods, want) in cases {
            assert_eq!(storage_members(planned, &s, pods), want, "{why}");
        }
        let mut terminating = five_pods.clone();
        terminating[4] = pod("garage", "e", true);
        assert_eq!(
            storage_members(3, &s, &terminating),
            4,
            "terminating pods do not count"
        );
        // Under the Manual policy the Auto size says nothing.
        let m = manual();
        assert_eq!(storage_members(2, &settings(&m), &[]), 2);
        assert_eq!(storage_members(0, &settings(&m), &[]), 0);
    }

    #[test]
    fn default_budget_allows_one_storage_pod_down_for_every_shape() {
        // (cluster, members, expected minAvailable)
        let cases = [
            ("3 Auto", cluster(3), 3, 2),
            ("3 Auto + 2 Manual", cluster(3), 5, 4),
            ("Manual only", manual(), 2, 1),
            ("Manual only, one member", manual(), 1, 0),
            ("one Auto member", cluster(1), 1, 0),
        ];
        for (why, c, members, want) in cases {
            let spec = pdb(&c, members).expect(why).spec.unwrap();
            assert_eq!(spec.min_available, Some(IntOrString::Int(want)), "{why}");
            assert_eq!(
                spec.max_unavailable, None,
                "{why}: needs no scale subresource"
            );
        }
        assert!(
            pdb(&manual(), 0).is_none(),
            "no members, nothing to protect"
        );
        assert_eq!(min_available(&cluster(3), 3), Some(IntOrString::Int(2)));
    }

    #[test]
    fn explicit_values_and_disable_are_honoured() {
        let mut c = cluster(3);
        c.spec.storage.as_mut().unwrap().pod_disruption_budget = Some(PodDisruptionBudgetConfig {
            max_unavailable: Some(IntOrString::String("25%".into())),
            ..Default::default()
        });
        let spec = pdb(&c, 3).unwrap().spec.unwrap();
        assert_eq!(
            spec.max_unavailable,
            Some(IntOrString::String("25%".into()))
        );
        assert_eq!(spec.min_available, None);
        c.spec.storage.as_mut().unwrap().pod_disruption_budget = Some(PodDisruptionBudgetConfig {
            enabled: Some(false),
            ..Default::default()
        });
        assert!(pdb(&c, 3).is_none());
    }

    #[test]
    fn gateways_get_their_own_budget_counted_over_gateway_pods() {
        let c = cluster(3);
        assert_eq!(gateway_pdb(&c, &settings(&c), 2).unwrap(), None, "no tier");
        let mut c = cluster(3);
        c.spec.gateway = Some(Default::default());
        let s = settings(&c);
        let mut gw = pod("garage", "garage-gateway-0", false);
        gw.metadata.labels = Some(labels::gateway_pod_labels("garage", "garage-gateway-0"));
        let storage = pod("garage", "garage-storage-0", false);
        // The storage pod is not counted; the declared two are.
        assert_eq!(gateway_members(&s, &[gw.clone(), storage]), 2);
        let p = gateway_pdb(&c, &s, 3).unwrap().unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("garage-gateway"));
        let spec = p.spec.unwrap();
        assert_eq!(spec.min_available, Some(IntOrString::Int(2)));
        assert_eq!(
            spec.selector.unwrap().match_labels,
            Some(labels::gateway_selector("garage"))
        );
        c.spec.gateway.as_mut().unwrap().pod_disruption_budget = Some(PodDisruptionBudgetConfig {
            enabled: Some(false),
            ..Default::default()
        });
        assert_eq!(gateway_pdb(&c, &s, 3).unwrap(), None, "disabled");
    }
}
