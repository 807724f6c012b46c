//! The cluster's `Ready` condition: the facts it is decided from and the verdict, the first
//! thing that is not right in a fixed order. Kept apart from [`super::decide`], which gathers
//! the facts and publishes the verdict.

use shared_types::conditions::reason;

use super::decide::hold_reason;
use crate::garage::{ClusterHealth, HealthStatus};
use crate::layout::Plan;

/// The facts the cluster's `Ready` condition is decided from.
pub(super) struct Readiness<'a> {
    /// User GarageNodes of a shape this operator does not run.
    pub(super) unsupported: &'a [String],
    /// Members the cluster should have.
    pub(super) wanted_members: usize,
    /// Members Ready with a known node ID.
    pub(super) identified: usize,
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
                format!(
                    "{} of {} storage members run with a known node ID",
                    self.identified, self.wanted_members
                ),
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
