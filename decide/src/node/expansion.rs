//! Growing a GarageNode's own claims when its volumes ask for more space.
//!
//! A StatefulSet's claim templates cannot change, so the claim itself is grown: a bound claim
//! whose request is below the size its volume asks for gets the new request, and the storage
//! driver does the rest. Claims only grow: a smaller size never reaches a claim (admission
//! refuses it too). A claim the API server refused to grow (its StorageClass lacks
//! `allowVolumeExpansion`, most often) is reported by name and left as it is.
//!
//! The conditions say where the node stands; the layout capacity the cluster gives the node
//! follows its claims' reported capacity, not the size asked (see the cluster's `expansion`).
//! [`plan`] is pure.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use shared_types::conditions::{node as node_conditions, reason};

use crate::conditions::Desired;
use crate::desired::quantity;
use crate::note::Note;

/// The PVC conditions that say a resize has not finished.
pub const RESIZE_PENDING_CONDITIONS: &[&str] = &["Resizing", "FileSystemResizePending"];

/// One managed claim of the node and the size its volume asks for.
#[derive(Debug, Clone)]
pub struct Sized {
    /// Claim name.
    pub name: String,
    /// The size its volume asks for.
    pub want: Quantity,
    /// The claim as read, when it exists.
    pub pvc: Option<PersistentVolumeClaim>,
    /// The API server's answer when it last refused to grow this claim, while that refusal
    /// is recent: the claim is not asked again meanwhile.
    pub refused: Option<String>,
}

/// What growing the claims asks for this pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExpansionPlan {
    /// `(claim, new request)` patches.
    pub patches: Vec<(String, Quantity)>,
    /// `StorageExpansionInProgress` and `StorageExpansionBlocked`, each only while true.
    pub conditions: Vec<Desired>,
    /// Events: one per claim asked to grow.
    pub notes: Vec<Note>,
}

/// The storage request of `pvc`'s spec and its reported capacity, in bytes.
pub fn request_and_capacity(pvc: &PersistentVolumeClaim) -> (Option<u64>, Option<u64>) {
    let request = pvc
        .spec
        .as_ref()
        .and_then(|s| s.resources.as_ref())
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .and_then(|q| quantity::to_bytes(&q.0));
    let capacity = pvc
        .status
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| quantity::to_bytes(&q.0));
    (request, capacity)
}

/// The resize condition `pvc` reports as still running, if any.
pub fn resize_pending(pvc: &PersistentVolumeClaim) -> Option<&'static str> {
    let conditions = pvc.status.as_ref()?.conditions.as_ref()?;
    RESIZE_PENDING_CONDITIONS
        .iter()
        .find(|t| {
            conditions
                .iter()
                .any(|c| c.type_ == **t && c.status == "True")
        })
        .copied()
}

/// True when `pvc` is bound and reports at least `want` bytes with no resize pending: the
/// file system behind it has that space.
pub fn proves(pvc: &PersistentVolumeClaim, want: u64) -> bool {
    let bound = pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
    let (_, capacity) = request_and_capacity(pvc);
    bound && capacity.is_some_and(|c| c >= want) && resize_pending(pvc).is_none()
}

/// The plan for `claims`.
pub fn plan(claims: &[Sized]) -> ExpansionPlan {
    let mut out = ExpansionPlan::default();
    let mut growing: Vec<String> = Vec::new();
    let mut blocked: Vec<String> = Vec::new();
    for c in claims {
        // A claim not created or not bound yet is created at the asked size.
        let Some(pvc) = c
            .pvc
            .as_ref()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound"))
        else {
            continue;
        };
        let Some(want) = quantity::to_bytes(&c.want.0) else {
            continue;
        };
        let (request, capacity) = request_and_capacity(pvc);
        let shown =
            |b: Option<u64>| b.map_or_else(|| "nothing".to_owned(), |b| format!("{b} bytes"));
        if request.is_none_or(|r| want > r) {
            match &c.refused {
                Some(why) => blocked.push(format!(
                    "{} asks for {} and stays at {}: {why}; its StorageClass must set allowVolumeExpansion: true",
                    c.name, c.want.0, shown(request)
                )),
                None => {
                    out.patches.push((c.name.clone(), c.want.clone()));
                    growing.push(format!("{} grows from {} to {}", c.name, shown(request), c.want.0));
                    out.notes.push(Note::normal(
                        reason::REASON_RESIZING,
                        "ExpandClaim",
                        format!("claim {} asked to grow from {} to {}", c.name, shown(request), c.want.0),
                    ));
                }
            }
            continue;
        }
        if let Some(pending) = resize_pending(pvc) {
            growing.push(format!("{} reports {pending}", c.name));
        } else if capacity.is_none_or(|cap| request.is_some_and(|r| cap < r)) {
            growing.push(format!(
                "{} reports {} of {}",
                c.name,
                shown(capacity),
                shown(request)
            ));
        }
    }
    if !growing.is_empty() {
        out.conditions.push(Desired {
            type_: node_conditions::CONDITION_STORAGE_EXPANSION_IN_PROGRESS,
            status: true,
            reason: reason::REASON_RESIZING,
            message: growing.join("; "),
        });
    }
    if !blocked.is_empty() {
        out.conditions.push(Desired {
            type_: node_conditions::CONDITION_STORAGE_EXPANSION_BLOCKED,
            status: true,
            reason: reason::REASON_EXPANSION_REFUSED,
            message: blocked.join("; "),
        });
    }
    out
}

#[cfg(test)]
mod tests;
