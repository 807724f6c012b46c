//! `StorageVolumeAttributesReady`: the cluster's roll-up of its members' VolumeAttributesClass
//! conditions.

use kube::ResourceExt;
use shared_types::conditions::{cluster as cc, reason};

use super::observed::Observed;
use crate::conditions::Desired;

/// `StorageVolumeAttributesReady`: the members' `VolumeAttributesClassApplied`, rolled up;
/// absent when no member's volumes ask for a class. Informational: nothing waits for it.
pub(super) fn volume_attributes(o: &Observed) -> Option<Desired> {
    use shared_types::conditions::node::CONDITION_VOLUME_ATTRIBUTES_CLASS_APPLIED;
    let mut any = false;
    let mut failing: Vec<String> = Vec::new();
    let mut worst: Option<&'static str> = None;
    let members = o
        .generated
        .values()
        .chain(o.user_nodes.iter())
        .chain(o.gateways.values())
        .filter(|gn| gn.metadata.deletion_timestamp.is_none());
    for gn in members {
        let Some(c) = gn
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| {
                cs.iter()
                    .find(|c| c.type_ == CONDITION_VOLUME_ATTRIBUTES_CLASS_APPLIED)
            })
        else {
            continue;
        };
        any = true;
        if c.status != "True" {
            failing.push(format!("{} ({})", gn.name_any(), c.reason));
            let rank = |r: &str| {
                [
                    reason::REASON_MODIFY_IN_PROGRESS,
                    reason::REASON_WAITING_FOR_BIND,
                    reason::REASON_INFEASIBLE,
                    reason::REASON_UNSUPPORTED,
                ]
                .iter()
                .position(|x| *x == r)
            };
            let this = [
                reason::REASON_MODIFY_IN_PROGRESS,
                reason::REASON_WAITING_FOR_BIND,
                reason::REASON_INFEASIBLE,
                reason::REASON_UNSUPPORTED,
            ]
            .into_iter()
            .find(|x| *x == c.reason)
            .unwrap_or(reason::REASON_MODIFY_IN_PROGRESS);
            if worst.is_none_or(|w| rank(this) > rank(w)) {
                worst = Some(this);
            }
        }
    }
    if !any {
        return None;
    }
    failing.sort();
    let shown = failing.len().min(5);
    Some(Desired {
        type_: cc::CONDITION_STORAGE_VOLUME_ATTRIBUTES_READY,
        status: failing.is_empty(),
        reason: worst.unwrap_or(reason::REASON_APPLIED),
        message: if failing.is_empty() {
            String::new()
        } else {
            format!(
                "{} of the members' claims are not on their VolumeAttributesClass: {}{}; see their VolumeAttributesClassApplied",
                failing.len(),
                failing[..shown].join(", "),
                if failing.len() > shown { ", ..." } else { "" }
            )
        },
    })
}
