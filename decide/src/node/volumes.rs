//! VolumeAttributesClass on a GarageNode's own claims: the class each volume asks for is
//! patched onto its bound claim (the claim, not the StatefulSet's immutable template, is the
//! source of truth), and `VolumeAttributesClassApplied` reports where each claim stands.
//!
//! A volume that asks for no class is left alone: a class an administrator set by hand on such
//! a claim stays. A class change never restarts a pod and never goes through the rollout.
//! [`plan`] is pure.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use shared_types::conditions::{node as node_conditions, reason};

use crate::conditions::Desired;

/// One managed claim of the node and the class its volume asks for.
#[derive(Debug, Clone)]
pub struct Claim {
    /// Claim name.
    pub name: String,
    /// The class the volume asks for.
    pub desired: Option<String>,
    /// The claim as read, when it exists.
    pub pvc: Option<PersistentVolumeClaim>,
    /// The API server refused to set a class on this claim earlier (the feature is off); it
    /// is not asked again until the back-off has passed.
    pub refused: bool,
}

/// What the volumes ask for this pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VolumePlan {
    /// `(claim, class)` patches.
    pub patches: Vec<(String, String)>,
    /// `VolumeAttributesClassApplied`; `None` when no volume asks for a class.
    pub condition: Option<Desired>,
}

/// The plan for `claims`.
pub fn plan(claims: &[Claim]) -> VolumePlan {
    let mut out = VolumePlan::default();
    // Worst first: (rank, reason, detail).
    let mut states: Vec<(u8, &'static str, String)> = Vec::new();
    for c in claims {
        let Some(want) = &c.desired else {
            continue;
        };
        let Some(pvc) = &c.pvc else {
            states.push((
                2,
                reason::REASON_WAITING_FOR_BIND,
                format!("{} does not exist yet", c.name),
            ));
            continue;
        };
        let bound = pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
        if !bound {
            states.push((
                2,
                reason::REASON_WAITING_FOR_BIND,
                format!("{} is not bound yet", c.name),
            ));
            continue;
        }
        let spec = pvc
            .spec
            .as_ref()
            .and_then(|s| s.volume_attributes_class_name.as_ref());
        if spec != Some(want) {
            if c.refused {
                states.push((
                    4,
                    reason::REASON_UNSUPPORTED,
                    format!(
                        "the API server refuses a VolumeAttributesClass on {} (the feature is off or too old: Kubernetes 1.34, or 1.31-1.33 with the feature enabled)",
                        c.name
                    ),
                ));
            } else {
                out.patches.push((c.name.clone(), want.clone()));
                states.push((
                    1,
                    reason::REASON_MODIFY_IN_PROGRESS,
                    format!("{} is being set to {want}", c.name),
                ));
            }
            continue;
        }
        let status = pvc.status.as_ref();
        let current = status.and_then(|s| s.current_volume_attributes_class_name.as_ref());
        let modify = status.and_then(|s| s.modify_volume_status.as_ref());
        match modify.map(|m| m.status.as_str()) {
            Some("Infeasible") | Some("Pending") => states.push((
                3,
                reason::REASON_INFEASIBLE,
                format!(
                    "{}: class {} {} (the claim stays on {}); fix the class or point the volume at another",
                    c.name,
                    modify
                        .and_then(|m| m.target_volume_attributes_class_name.clone())
                        .unwrap_or_else(|| want.clone()),
                    if modify.is_some_and(|m| m.status == "Pending") {
                        "does not exist"
                    } else {
                        "was refused by the driver"
                    },
                    current.map_or("no class", String::as_str)
                ),
            )),
            _ if current == Some(want) => {
                states.push((0, reason::REASON_APPLIED, String::new()));
            }
            _ => states.push((
                1,
                reason::REASON_MODIFY_IN_PROGRESS,
                format!("{} is being modified to {want}", c.name),
            )),
        }
    }
    if states.is_empty() {
        return out;
    }
    states.sort_by_key(|s| std::cmp::Reverse(s.0));
    let (rank, why, _) = states[0].clone();
    let details: Vec<String> = states
        .iter()
        .filter(|s| s.0 == rank && !s.2.is_empty())
        .map(|s| s.2.clone())
        .collect();
    out.condition = Some(Desired {
        type_: node_conditions::CONDITION_VOLUME_ATTRIBUTES_CLASS_APPLIED,
        status: rank == 0,
        reason: why,
        message: details.join("; "),
    });
    out
}

#[cfg(test)]
mod tests;
