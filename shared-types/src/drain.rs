//! The storage-drain transaction record (`GarageCluster.status.storageDrain`) as both
//! processes read it: the target hash that binds its node sets, and the phase a record is in.
//! The webhook's deletion rules and the reconciler's drain machine use these same functions.

use sha2::{Digest, Sha256};

use crate::garage_cluster::common::{DrainActor, DrainActorKind, StorageDrainStatus};

/// `"sha256:" + hex(SHA-256(P))` where P is `roles`, `storage` and (when non-empty)
/// `unavailable`, each header followed by its sorted IDs, all NUL-separated.
pub fn target_hash(roles: &[String], removed: &[String], unavailable: &[String]) -> String {
    let mut payload = format!(
        "roles\0{}\0storage\0{}",
        roles.join("\0"),
        removed.join("\0")
    );
    if !unavailable.is_empty() {
        payload.push_str("\0unavailable\0");
        payload.push_str(&unavailable.join("\0"));
    }
    format!("sha256:{}", sha256_hex(payload.as_bytes()))
}

/// Lower-case hex SHA-256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where a recorded transaction stands, read from the record alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// No transaction is recorded.
    Idle,
    /// A transaction is recorded and its proof is not complete: the removal may or may not
    /// have been committed yet, and nothing it targets may be released.
    Active,
    /// The proof is complete (`completedAt` set): the actor may be released.
    Completed,
}

/// The phase of `record`.
pub fn phase(record: Option<&StorageDrainStatus>) -> Phase {
    match record {
        None => Phase::Idle,
        Some(r) if r.completed_at.is_some() => Phase::Completed,
        Some(_) => Phase::Active,
    }
}

/// True when `record`'s actor is exactly the GarageNode `namespace/name` with `uid`.
pub fn actor_is_node(record: &StorageDrainStatus, namespace: &str, name: &str, uid: &str) -> bool {
    record.actor.as_ref().is_some_and(|a: &DrainActor| {
        a.kind == Some(DrainActorKind::GarageNode)
            && a.namespace.as_deref() == Some(namespace)
            && a.name.as_deref() == Some(name)
            && a.uid.as_deref() == Some(uid)
    })
}

/// True when `record` is a complete, untampered proof that the GarageNode `namespace/name`
/// with `uid` left the layout as the identity `node_id`: what lets that exact incarnation be
/// deleted without proving again.
pub fn removal_proven(
    record: &StorageDrainStatus,
    namespace: &str,
    name: &str,
    uid: &str,
    node_id: &str,
) -> bool {
    completed_for(record, namespace, name, uid)
        && record
            .removed_storage_node_ids
            .iter()
            .flatten()
            .any(|id| id == node_id)
}

/// True when `record` is a role-only transaction: it removes layout roles and no storage (the
/// retirement of a capacity-less gateway identity, which needs no block proof).
pub fn role_only(record: &StorageDrainStatus) -> bool {
    record
        .role_removal_node_ids
        .as_ref()
        .is_some_and(|r| !r.is_empty())
        && record
            .removed_storage_node_ids
            .as_ref()
            .is_none_or(Vec::is_empty)
}

/// True when `record` is a complete, untampered role-only transaction that took the gateway
/// identity `node_id` of the GarageNode `namespace/name` with `uid` out of the layout: what
/// lets that gateway's workload stop.
pub fn role_retired(
    record: &StorageDrainStatus,
    namespace: &str,
    name: &str,
    uid: &str,
    node_id: &str,
) -> bool {
    completed_for(record, namespace, name, uid)
        && role_only(record)
        && record
            .role_removal_node_ids
            .iter()
            .flatten()
            .any(|id| id == node_id)
}

/// True when `record` is complete, untampered and names the GarageNode `namespace/name` with
/// `uid` as its actor.
fn completed_for(record: &StorageDrainStatus, namespace: &str, name: &str, uid: &str) -> bool {
    phase(Some(record)) == Phase::Completed
        && hash_consistent(record)
        && actor_is_node(record, namespace, name, uid)
}

/// True when the hash recorded in `record` matches its node sets.
pub fn hash_consistent(record: &StorageDrainStatus) -> bool {
    let roles = record.role_removal_node_ids.clone().unwrap_or_default();
    let removed = record.removed_storage_node_ids.clone().unwrap_or_default();
    let unavailable = record
        .unavailable_source_node_ids
        .clone()
        .unwrap_or_default();
    record.target_hash.as_deref() == Some(target_hash(&roles, &removed, &unavailable).as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_the_fips_vectors() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn empty_sets_hash_the_bare_headers() {
        assert_eq!(
            target_hash(&[], &[], &[]),
            format!("sha256:{}", sha256_hex(b"roles\0\0storage\0"))
        );
    }

    #[test]
    fn phases_follow_the_record() {
        assert_eq!(phase(None), Phase::Idle);
        let mut r = StorageDrainStatus::default();
        assert_eq!(phase(Some(&r)), Phase::Active);
        r.completed_at = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        assert_eq!(phase(Some(&r)), Phase::Completed);
        let ids = vec!["a".to_owned()];
        r.role_removal_node_ids = Some(ids.clone());
        r.removed_storage_node_ids = Some(ids.clone());
        assert!(!hash_consistent(&r));
        r.target_hash = Some(target_hash(&ids, &ids, &[]));
        assert!(hash_consistent(&r));
    }

    #[test]
    fn a_role_only_record_proves_a_gateway_retirement_and_no_storage_removal() {
        let ids = vec!["a".to_owned()];
        let mut r = StorageDrainStatus {
            actor: Some(DrainActor {
                kind: Some(DrainActorKind::GarageNode),
                namespace: Some("ns".into()),
                name: Some("g-gateway-1".into()),
                uid: Some("u".into()),
                ..Default::default()
            }),
            role_removal_node_ids: Some(ids.clone()),
            removed_storage_node_ids: Some(Vec::new()),
            target_hash: Some(target_hash(&ids, &[], &[])),
            ..Default::default()
        };
        assert!(role_only(&r));
        assert!(
            !role_retired(&r, "ns", "g-gateway-1", "u", "a"),
            "not complete"
        );
        r.completed_at = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        assert!(role_retired(&r, "ns", "g-gateway-1", "u", "a"));
        assert!(!role_retired(&r, "ns", "g-gateway-1", "other", "a"));
        assert!(!removal_proven(&r, "ns", "g-gateway-1", "u", "a"));
        r.removed_storage_node_ids = Some(ids.clone());
        r.target_hash = Some(target_hash(&ids, &ids, &[]));
        assert!(!role_only(&r));
        assert!(!role_retired(&r, "ns", "g-gateway-1", "u", "a"));
    }
}
