//! SH-20: the terminal storage-drain token that authorises a prepared
//! deletion (of a GarageNode, GN-D5, or of a whole GarageCluster, GC-D6),
//! including its SHA-256 target hash.
//!
//! One implementation serves both rules so that a record is judged the same
//! whichever object's deletion it is meant to authorise.

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

/// The SH-20 target hash of a record's node sets. It is the function the
/// reconciler hashes with when it writes a record, so the webhook accepts
/// exactly what the reconciler writes; the tests below pin it to the SH-20
/// definition with digests computed outside this crate.
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn hex(c: char) -> String {
        std::iter::repeat_n(c, 64).collect()
    }

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|i| (*i).to_owned()).collect()
    }

    /// SH-20 digests computed outside this crate (Python `hashlib.sha256`)
    /// from the definition, so that the hash function is checked against the
    /// definition rather than against itself.
    #[test]
    fn the_hash_follows_the_sh_20_definition() {
        let (a, b) = (hex('a'), hex('b'));
        let cases = [
            (
                ids(&[]),
                ids(&[]),
                ids(&[]),
                "caef2d293bbac3d3d33711edf643e687c1f52cad4c7bb1d8361cc6d16a2bd006",
            ),
            (
                ids(&[&a]),
                ids(&[&a]),
                ids(&[]),
                "557da8946bf94cc288b028c3067853b711e0f918f0b26c8d0368ea1157f4c6bd",
            ),
            (
                ids(&[&a, &b]),
                ids(&[&b]),
                ids(&[]),
                "43f8bcb6d468d0a6e167a2f451802f8c6e7f1e203386a8e20ea7a05802444095",
            ),
            (
                ids(&[&a, &b]),
                ids(&[&a, &b]),
                ids(&[&b]),
                "1ace42f8dd1bbad8ec01ff9065333509ee022d0e42a86242edad70f03deb4f59",
            ),
            // The unavailable section is left out when that set is empty.
            (
                ids(&[&a, &b]),
                ids(&[&a, &b]),
                ids(&[]),
                "0e20f82b319c1ca4b15f2090589d53f7c2235a3555797a313606624db60459ec",
            ),
        ];
        for (roles, removed, unavailable, digest) in cases {
            assert_eq!(
                target_hash(&roles, &removed, &unavailable),
                format!("sha256:{digest}"),
                "{roles:?} {removed:?} {unavailable:?}"
            );
        }
    }

    fn token(patch: Value) -> StorageDrainStatus {
        let a = hex('a');
        let mut v = json!({
            "actor": {"apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster", "namespace": "ns", "name": "site", "uid": "uid-1"},
            "transactionId": "t1",
            "startedAt": "2026-01-01T00:00:00Z",
            "completedAt": "2026-01-01T01:00:00Z",
            "roleRemovalNodeIds": [a],
            "removedStorageNodeIds": [a],
            "targetHash": target_hash(&ids(&[&a]), &ids(&[&a]), &[]),
        });
        json_patch::merge(&mut v, &patch);
        serde_json::from_value(v).unwrap()
    }

    const SITE: ExpectedActor<'static> = ExpectedActor {
        api_version: "garage.rajsingh.info/v1beta2",
        kind: DrainActorKind::GarageCluster,
        namespace: "ns",
        name: "site",
        uid: "uid-1",
    };

    #[test]
    fn exact_tokens_pass_and_altered_ones_fail() {
        let (a, b) = (hex('a'), hex('b'));
        let hash = |roles: &[&str], removed: &[&str]| target_hash(&ids(roles), &ids(removed), &[]);
        let cases: Vec<(&str, Value, Option<&str>)> = vec![
            ("exact token", json!({}), None),
            (
                "two roles, one removed, rehashed",
                json!({"roleRemovalNodeIds": [a, b], "targetHash": hash(&[&a, &b], &[&a])}),
                None,
            ),
            (
                "non-hex ID",
                json!({"roleRemovalNodeIds": [hex('z')], "removedStorageNodeIds": [hex('z')], "targetHash": hash(&[&hex('z')], &[&hex('z')])}),
                Some("roleRemovalNodeIds"),
            ),
            (
                "unsorted IDs",
                json!({"roleRemovalNodeIds": [b, a], "targetHash": hash(&[&b, &a], &[&a])}),
                Some("roleRemovalNodeIds"),
            ),
            (
                "removed not a role removal",
                json!({"removedStorageNodeIds": [b], "targetHash": hash(&[&a], &[&b])}),
                Some("subset of roleRemovalNodeIds"),
            ),
            (
                "unavailable not removed",
                json!({"unavailableSourceNodeIds": [b]}),
                Some("subset of removedStorageNodeIds"),
            ),
            (
                "corrupt hash",
                json!({"targetHash": "sha256:corrupt"}),
                Some("targetHash"),
            ),
            (
                "hash of other node sets",
                json!({"targetHash": hash(&[], &[])}),
                Some("targetHash"),
            ),
            (
                "another incarnation",
                json!({"actor": {"uid": "uid-2"}}),
                Some("incarnation"),
            ),
            (
                "Go zero completedAt",
                json!({"completedAt": "0001-01-01T00:00:00Z"}),
                Some("timestamps"),
            ),
        ];
        for (name, patch, want) in cases {
            let got = verify(Some(&token(patch)), &SITE, &Required::default());
            match (want, got) {
                (None, Err(e)) => panic!("{name}: expected valid, got {e}"),
                (Some(part), Ok(())) => panic!("{name}: expected a refusal naming {part}"),
                (Some(part), Err(e)) => assert!(e.contains(part), "{name}: {e}"),
                (None, Ok(())) => {}
            }
        }
        let missing = [b.clone()];
        let required = Required {
            role_removal: &missing,
            removed_storage: &[],
        };
        assert!(verify(Some(&token(json!({}))), &SITE, &required).is_err());
    }
}
