//! SH-20: the terminal storage-drain token that authorises a prepared
//! GarageNode deletion, including its SHA-256 target hash.

use crate::admission::shared::node_id::{canonical_id, is_canonical_id_set};
use shared_types::garage_cluster::common::{DrainActorKind, StorageDrainStatus};

/// The object a terminal drain must name as its actor.
pub struct ExpectedActor<'a> {
    /// apiVersion, e.g. `garage.rajsingh.info/v1beta1`.
    pub api_version: &'a str,
    /// Kind of the actor.
    pub kind: DrainActorKind,
    /// Namespace.
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
    /// UID of the exact incarnation.
    pub uid: &'a str,
}

/// Node IDs the caller requires in the token's sets.
#[derive(Default)]
pub struct Required<'a> {
    /// Must be in roleRemovalNodeIds.
    pub role_removal: &'a [String],
    /// Must be in removedStorageNodeIds.
    pub removed_storage: &'a [String],
}

pub use shared_types::drain::target_hash;

/// Why `drain` is not a valid terminal token for `expected`, or `Ok`.
pub fn verify(
    drain: Option<&StorageDrainStatus>,
    expected: &ExpectedActor<'_>,
    required: &Required<'_>,
) -> Result<(), String> {
    let drain = drain.ok_or("no terminal storage-drain token is recorded")?;
    if expected.uid.trim().is_empty() {
        return Err("the expected drain actor has no UID".into());
    }
    let actor = drain
        .actor
        .as_ref()
        .ok_or("terminal storage-drain token has no actor")?;
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let matches = text(&actor.api_version) == expected.api_version
        && actor.kind == Some(expected.kind)
        && text(&actor.namespace) == expected.namespace
        && text(&actor.name) == expected.name
        && text(&actor.uid) == expected.uid
        && !expected.api_version.is_empty()
        && !expected.namespace.is_empty()
        && !expected.name.is_empty();
    if !matches {
        return Err("terminal storage-drain actor does not match the expected Kubernetes object incarnation".into());
    }
    if drain
        .transaction_id
        .as_deref()
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        return Err("terminal storage-drain token has no transactionId".into());
    }
    // Go's zero time (year 1) is what an unset timestamp decodes to there.
    const GO_ZERO_SECONDS: i64 = -62_135_596_800;
    let started = drain
        .started_at
        .as_ref()
        .map(|t| t.0)
        .filter(|t| t.as_second() > GO_ZERO_SECONDS);
    let completed = drain
        .completed_at
        .as_ref()
        .map(|t| t.0)
        .filter(|t| t.as_second() > GO_ZERO_SECONDS);
    match (started, completed) {
        (Some(s), Some(c)) if c >= s => {}
        _ => return Err("terminal storage-drain timestamps are invalid (startedAt and completedAt must be set, completedAt not before startedAt)".into()),
    }
    let roles = drain.role_removal_node_ids.clone().unwrap_or_default();
    let removed = drain.removed_storage_node_ids.clone().unwrap_or_default();
    let unavailable = drain
        .unavailable_source_node_ids
        .clone()
        .unwrap_or_default();
    for (name, ids) in [
        ("roleRemovalNodeIds", &roles),
        ("removedStorageNodeIds", &removed),
        ("unavailableSourceNodeIds", &unavailable),
    ] {
        if !is_canonical_id_set(ids) {
            return Err(format!(
                "terminal storage-drain {name} must be sorted, de-duplicated, lower-case 64-hex node IDs"
            ));
        }
    }
    if !removed.iter().all(|i| roles.contains(i)) {
        return Err(
            "terminal storage-drain removedStorageNodeIds must be a subset of roleRemovalNodeIds"
                .into(),
        );
    }
    if !unavailable.iter().all(|i| removed.contains(i)) {
        return Err("terminal storage-drain unavailableSourceNodeIds must be a subset of removedStorageNodeIds".into());
    }
    if drain.target_hash.as_deref() != Some(target_hash(&roles, &removed, &unavailable).as_str()) {
        return Err("terminal storage-drain targetHash does not match its node sets".into());
    }
    for id in required.role_removal {
        if !roles.contains(&canonical_id(id)) {
            return Err(format!(
                "terminal storage-drain roleRemovalNodeIds does not include {id}"
            ));
        }
    }
    for id in required.removed_storage {
        if !removed.contains(&canonical_id(id)) {
            return Err(format!(
                "terminal storage-drain removedStorageNodeIds does not include {id}"
            ));
        }
    }
    Ok(())
}
