//! The cluster's `Ready` condition: the facts it is decided from and the verdict, the first
//! thing that is not right in a fixed order. Kept apart from [`super::decision`], which gathers
//! the facts and publishes the verdict.

use shared_types::conditions::reason;

use super::decision::hold_reason;
use crate::layout::Plan;
use garage_api_types::{ClusterHealth, HealthStatus};

/// The facts the cluster's `Ready` condition is decided from.
pub(super) struct Readiness<'a> {
    /// User GarageNodes of a shape this operator does not run.
    pub(super) unsupported: &'a [String],
    /// Members the cluster should have.
    pub(super) wanted_members: usize,
    /// Members Ready with a known node ID.
    pub(super) identified: usize,
    /// GarageNodes that do not start because their claims hold a retired identity.
    pub(super) retired_claims: Vec<String>,
    /// The layout planner's verdict.
    pub(super) plan: Option<&'a Plan>,
    /// Some member is not in the layout yet, or not created yet.
    pub(super) joining: bool,
    /// Generated members beyond the wanted count.
    pub(super) extra: &'a [String],
    /// Why Garage could not be read.
    pub(super) garage_error: Option<&'a str>,
    /// Healthy as every member sees it.
    pub(super) healthy: bool,
    /// Garage's own health report.
    pub(super) health: Option<&'a ClusterHealth>,
}

impl Readiness<'_> {
    /// `Ready`'s status, reason and message: the first thing that is not right, in order.
    pub(super) fn verdict(&self) -> (bool, &'static str, String) {
        if !self.unsupported.is_empty() {
            (
                false,
                reason::REASON_UNSUPPORTED,
                format!(
                    "GarageNodes {} use a shape this operator version does not run; see their conditions",
                    self.unsupported.join(", ")
                ),
            )
        } else if self.wanted_members == 0 {
            (
            false,
            reason::REASON_WAITING_FOR_MEMBERS,
            "the storage tier has no members: add GarageNodes (Manual) or set spec.storage.replicas".into(),
        )
        } else if self.identified < self.wanted_members {
            (
                false,
                reason::REASON_NOT_ALL_REPLICAS_READY,
                if self.retired_claims.is_empty() {
                    format!(
                        "{} of {} storage members run with a known node ID",
                        self.identified, self.wanted_members
                    )
                } else {
                    format!(
                        "{} of {} storage members run with a known node ID; {} do not start on claims that hold a retired identity (see their Ready condition)",
                        self.identified,
                        self.wanted_members,
                        self.retired_claims.join(", ")
                    )
                },
            )
        } else if let Some(Plan::Hold { reason: r, message }) = self.plan {
            (false, hold_reason(*r), message.clone())
        } else if self.joining {
            (
                false,
                reason::REASON_STORAGE_TOPOLOGY_NOT_READY,
                "storage members are joining the layout".into(),
            )
        } else if !self.extra.is_empty() {
            (
                false,
                reason::REASON_DRAINING,
                format!(
                    "scaling down: {} leave through prepared drains, one at a time; see StorageDrainReady",
                    self.extra.join(", ")
                ),
            )
        } else if let Some(e) = self.garage_error {
            (false, reason::REASON_GARAGE_API_ERROR, e.to_owned())
        } else if !self.healthy {
            (
            false,
            reason::REASON_LAYOUT_NOT_READY,
            match self.health {
                Some(h) if h.status == HealthStatus::Healthy => {
                    "not every member reaches every other yet (each member's own health is read)"
                        .into()
                }
                h => format!("Garage reports {:?}", h.map(|h| h.status.clone())),
            },
        )
        } else {
            (true, reason::REASON_CLUSTER_READY, String::new())
        }
    }
}

/// The GarageNodes among `nodes` whose `Ready` says their claims hold a retired identity.
pub(super) fn retired_claims<'a>(
    nodes: impl IntoIterator<Item = &'a shared_types::garage_node::GarageNode>,
) -> Vec<String> {
    use kube::ResourceExt;
    let mut out: Vec<String> = nodes
        .into_iter()
        .filter(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c.type_ == shared_types::conditions::common::CONDITION_READY
                            && c.reason == reason::REASON_RETIRED_CLAIMS
                    })
                })
        })
        .map(|n| n.name_any())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_retired(retired: Vec<String>) -> (bool, &'static str, String) {
        Readiness {
            unsupported: &[],
            wanted_members: 4,
            identified: 3,
            retired_claims: retired,
            plan: None,
            joining: true,
            extra: &[],
            garage_error: None,
            healthy: true,
            health: None,
        }
        .verdict()
    }

    #[test]
    fn a_member_held_by_retired_claims_is_named_in_ready() {
        let (ready, why, message) = with_retired(vec!["garage-storage-3".into()]);
        assert!(!ready);
        assert_eq!(why, reason::REASON_NOT_ALL_REPLICAS_READY);
        assert!(message.contains("3 of 4"), "{message}");
        assert!(
            message.contains("garage-storage-3 do not start"),
            "{message}"
        );
        let (_, _, message) = with_retired(vec![]);
        assert!(!message.contains("retired"), "{message}");
    }

    #[test]
    fn retired_claims_reads_the_ready_reason_of_each_node() {
        let node = |name: &str, why: &str| -> shared_types::garage_node::GarageNode {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name},
                "spec": {"clusterRef": {"name": "garage"}, "zone": "a"},
                "status": {"conditions": [{
                    "type": "Ready", "status": "False", "reason": why, "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }]},
            }))
            .unwrap()
        };
        let nodes = [
            node("b", reason::REASON_RETIRED_CLAIMS),
            node("a", reason::REASON_WAITING_FOR_DEPENDENCY),
            node("c", reason::REASON_RETIRED_CLAIMS),
        ];
        assert_eq!(retired_claims(&nodes), vec!["b", "c"]);
    }
}
