//! The claims a GarageNode's StatefulSet generates, through their life: reserved while the
//! member lives, marked retired when its identity leaves through a proven drain, never
//! started on again once retired.
//!
//! - **Reservation.** Every claim of a live node carries the reservation finalizer (which the
//!   PVC guard lets only the reconciler remove), the node's UID and, once its pod reported it,
//!   the Garage node ID it holds. A stray `kubectl delete pvc` then leaves the claim
//!   terminating with its volume intact instead of taking the member's disk.
//! - **Release.** A node's reservations are released only as it is finalized: after a proven
//!   drain (each claim then carries the retired identity) or when the whole store is destroyed.
//!   The StatefulSet's retention policy decides what happens to the claims after that.
//! - **Retired claims.** A node whose StatefulSet would mount a claim marked retired (a slot
//!   drained earlier and scaled up again, a Manual node deleted after its drain and created
//!   again under the same name) does not start: the claim holds an identity that left the
//!   layout and whose data moved elsewhere, and starting it would bring that stale metadata
//!   back into the cluster. The user deletes the claims (the reconciler is not allowed to
//!   delete a claim at all); the node then starts on new, empty claims with a new identity.
//!
//! [`live`] and [`release`] are pure.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use shared_types::conditions::{common, reason};
use shared_types::keys::annotation::{
    ANNOTATION_GARAGE_NODE_UID, ANNOTATION_NODE_ID, ANNOTATION_RETIRED_NODE_ID,
};
use shared_types::keys::finalizer::FINALIZER_PVC_RESERVATION;

use crate::conditions::Desired;
use crate::note::Note;

/// A change of one claim's metadata, applied with the claim's resourceVersion as the
/// precondition (its finalizer list is written whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimPatch {
    /// Claim name.
    pub name: String,
    /// The resourceVersion the change was computed from.
    pub resource_version: String,
    /// The finalizers the claim gets.
    pub finalizers: Vec<String>,
    /// Annotations to set.
    pub annotations: BTreeMap<String, String>,
}

/// What a live node does with its claims this pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LivePlan {
    /// Reservations and identity annotations to write.
    pub patches: Vec<ClaimPatch>,
    /// `Ready=False`, reason `RetiredClaims`, while a retired claim is in the way: the
    /// StatefulSet is then neither created nor updated.
    pub hold: Option<Desired>,
    /// Events.
    pub notes: Vec<Note>,
}

fn retired_id(pvc: &PersistentVolumeClaim) -> Option<&str> {
    pvc.metadata
        .annotations
        .as_ref()?
        .get(ANNOTATION_RETIRED_NODE_ID)
        .map(String::as_str)
}

fn terminating(pvc: &PersistentVolumeClaim) -> bool {
    pvc.metadata.deletion_timestamp.is_some()
}

fn reserved(pvc: &PersistentVolumeClaim) -> bool {
    pvc.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER_PVC_RESERVATION)
}

fn annotation<'a>(pvc: &'a PersistentVolumeClaim, key: &str) -> Option<&'a str> {
    pvc.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// The plan for a live node: `claims` are its StatefulSet's claims as read (absent ones are
/// `None`), `node_uid` its UID, `identity` the Garage node ID its current pod proved this pass
/// (`None` while unknown or disputed).
pub fn live(
    claims: &[(String, Option<PersistentVolumeClaim>)],
    node_uid: &str,
    identity: Option<&str>,
) -> LivePlan {
    let mut plan = LivePlan::default();
    let mut retired: Vec<(String, String)> = Vec::new();
    for (name, pvc) in claims {
        let Some(pvc) = pvc else { continue };
        if let Some(id) = retired_id(pvc) {
            retired.push((name.clone(), id.to_owned()));
            continue;
        }
        if terminating(pvc) {
            plan.notes.push(Note::warning(
                reason::REASON_CLAIM_DELETING,
                "ReserveClaim",
                format!(
                    "claim {name} of this live member was deleted; its reservation keeps it and its volume until the member is drained (annotate garage.rajsingh.info/drain=true), and its pod is not replaced meanwhile"
                ),
            ));
            continue;
        }
        if let Some(patch) = reservation(name, pvc, node_uid, identity) {
            plan.patches.push(patch);
        }
    }
    if !retired.is_empty() {
        plan.hold = Some(hold(&retired));
    }
    plan
}

/// The change that reserves `pvc` for the node and records its identity, or `None` when it
/// already carries both.
fn reservation(
    name: &str,
    pvc: &PersistentVolumeClaim,
    node_uid: &str,
    identity: Option<&str>,
) -> Option<ClaimPatch> {
    let mut annotations = BTreeMap::new();
    if annotation(pvc, ANNOTATION_GARAGE_NODE_UID) != Some(node_uid) {
        annotations.insert(ANNOTATION_GARAGE_NODE_UID.to_owned(), node_uid.to_owned());
    }
    // The first identity seen on the claim stays: a pod reporting another one is an identity
    // change, which the node reports, not a new owner of this disk.
    if let Some(id) = identity
        && annotation(pvc, ANNOTATION_NODE_ID).is_none()
    {
        annotations.insert(ANNOTATION_NODE_ID.to_owned(), id.to_owned());
    }
    if reserved(pvc) && annotations.is_empty() {
        return None;
    }
    let mut finalizers: Vec<String> = pvc.metadata.finalizers.clone().unwrap_or_default();
    if !reserved(pvc) {
        finalizers.push(FINALIZER_PVC_RESERVATION.to_owned());
    }
    Some(ClaimPatch {
        name: name.to_owned(),
        resource_version: pvc.metadata.resource_version.clone().unwrap_or_default(),
        finalizers,
        annotations,
    })
}

fn hold(retired: &[(String, String)]) -> Desired {
    let names: Vec<&str> = retired.iter().map(|(n, _)| n.as_str()).collect();
    let ids: std::collections::BTreeSet<String> = retired
        .iter()
        .map(|(_, id)| id.chars().take(16).collect())
        .collect();
    Desired {
        type_: common::CONDITION_READY,
        status: false,
        reason: reason::REASON_RETIRED_CLAIMS,
        message: format!(
            "claims {} hold Garage node {}, which left the layout through a proven drain; this node does not start on them, so that their stale metadata never returns to the cluster. Delete them (kubectl delete pvc {}) and the node starts on new, empty claims with a new identity",
            names.join(", "),
            ids.into_iter().collect::<Vec<_>>().join(", "),
            names.join(" "),
        ),
    }
}

/// The changes that release a finalized node's reservations: each reserved claim loses the
/// reservation finalizer and, when `retired` names the identity a proven drain removed, is
/// marked with it. Claims already released (and marked, when they must be) are left alone.
pub fn release(
    claims: &[(String, Option<PersistentVolumeClaim>)],
    retired: Option<&str>,
) -> Vec<ClaimPatch> {
    let mut out = Vec::new();
    for (name, pvc) in claims {
        let Some(pvc) = pvc else { continue };
        let mut annotations = BTreeMap::new();
        if let Some(id) = retired
            && retired_id(pvc) != Some(id)
        {
            annotations.insert(ANNOTATION_RETIRED_NODE_ID.to_owned(), id.to_owned());
        }
        if !reserved(pvc) && annotations.is_empty() {
            continue;
        }
        out.push(ClaimPatch {
            name: name.clone(),
            resource_version: pvc.metadata.resource_version.clone().unwrap_or_default(),
            finalizers: pvc
                .metadata
                .finalizers
                .iter()
                .flatten()
                .filter(|f| *f != FINALIZER_PVC_RESERVATION)
                .cloned()
                .collect(),
            annotations,
        });
    }
    out
}

#[cfg(test)]
mod tests;
