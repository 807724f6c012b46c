//! Which cluster secret a GarageKey without `spec.importKey` derives its material from, decided
//! from what the key records, the access key ID it already has, the keys of its cluster and
//! the key-derivation Secret as it is. Reading the secrets, recording the choice on the key and
//! creating the key-derivation Secret are the reconciler's (its `key::derivation` says why in
//! that order).

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use shared_types::garage_key::GarageKey;
use shared_types::keys::annotation;

use super::material::Derivation;
use crate::desired::{is_controlled_by, secrets};
use crate::garage_objects::reach::leads_to;

/// What a pass does about the derivation of a key that imports nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The key records this derivation: use it.
    Use(Derivation),
    /// The key records none yet: record this one, then use it.
    Record(Derivation),
    /// The key records a value this operator never writes: derive nothing rather than guess
    /// (a wrong guess would replace the key's credentials).
    Unknown,
    /// The key records none but already has an access key ID: the derivation is the one that
    /// gives that ID. Keys created before derivations were recorded used the RPC secret, but
    /// a record removed by hand may have said either, so the ID decides, never an assumption.
    Infer,
}

/// The derivation of a key from its `key-derivation` annotation (`recorded`) and its
/// `status.accessKeyId`. Without a record, a key that already has an access key ID keeps the
/// derivation that gives it ([`Choice::Infer`]); a key without one is new and gets the
/// key-derivation Secret.
pub fn choose(recorded: Option<&str>, access_key_id: Option<&str>) -> Choice {
    match recorded {
        Some(value) => Derivation::from_annotation(value).map_or(Choice::Unknown, Choice::Use),
        None if access_key_id.is_some_and(|id| !id.is_empty()) => Choice::Infer,
        None => Choice::Record(Derivation::KeyDerivationSecret),
    }
}

/// The first of `candidates` (a derivation and the access key ID it gives, when its secret was
/// readable) whose ID is `access_key_id`.
pub fn matching(
    access_key_id: &str,
    candidates: &[(Derivation, Option<String>)],
) -> Option<Derivation> {
    candidates
        .iter()
        .find(|(_, id)| id.as_deref() == Some(access_key_id))
        .map(|(d, _)| *d)
}

/// `material`, derived as `derivation` for a key whose status holds `access_key_id`, or why it
/// is not used. Under [`Derivation::RpcSecretBytesSpecName`] the material follows `spec.name`:
/// derived for any other name than the one the key was made under, it would be new
/// credentials, and the pass would retire the key every client holds. So a material that does
/// not give the key's own ID is refused there, with the way back.
pub fn pinned(
    derivation: Derivation,
    material: super::material::Material,
    access_key_id: Option<&str>,
) -> Result<super::material::Material, String> {
    match access_key_id.filter(|id| !id.is_empty()) {
        Some(id)
            if derivation == Derivation::RpcSecretBytesSpecName && material.access_key_id != id =>
        {
            Err(format!(
                "access key {id} was derived from this key's spec.name by an older Go operator, and the spec.name it has now gives other credentials; set spec.name back to the value it had (the Garage key's name) to keep them"
            ))
        }
        _ => Ok(material),
    }
}

/// The access key IDs that keys of the GarageCluster `cluster_ns`/`cluster_name` got from its
/// key-derivation Secret, as their status and record say.
pub fn derived_ids(keys: &[Arc<GarageKey>], cluster_ns: &str, cluster_name: &str) -> Vec<String> {
    let recorded = Derivation::KeyDerivationSecret.annotation_value();
    keys.iter()
        .filter(|k| leads_to(k, cluster_ns, cluster_name) && k.spec.import_key.is_none())
        .filter(|k| {
            k.annotations()
                .get(annotation::ANNOTATION_KEY_DERIVATION)
                .is_some_and(|v| v == recorded)
        })
        .filter_map(|k| k.status.as_ref()?.access_key_id.clone())
        .filter(|id| !id.is_empty())
        .collect()
}

/// The first of `derived` that Garage still holds: proof that a missing key-derivation Secret
/// was lost, not never made (a cluster created again under the same name holds none of them).
pub fn lost_proof<'a>(derived: &'a [String], in_garage: &BTreeSet<String>) -> Option<&'a str> {
    derived
        .iter()
        .find(|id| in_garage.contains(*id))
        .map(String::as_str)
}

/// The secret bytes of a key-derivation Secret: only one the cluster (`cluster_uid`) controls,
/// holding 64 hex digits. The error says why not, without the value.
pub fn usable(live: &Secret, cluster_uid: &str) -> Result<Vec<u8>, &'static str> {
    if !is_controlled_by(live, cluster_uid) {
        return Err(
            "is not controlled by the GarageCluster, so keys are not derived from it; remove it or move it aside",
        );
    }
    let value = live
        .data
        .as_ref()
        .and_then(|d| d.get(secrets::KEY_DERIVATION_SECRET_KEY))
        .map(|b| String::from_utf8_lossy(&b.0).trim_end().to_owned())
        .filter(|v| secrets::is_valid_key_derivation_secret(v))
        .ok_or("does not hold 64 hex digits under its key; keys are not derived from it")?;
    Ok(value.into_bytes())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use k8s_openapi::ByteString;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;
    use crate::garage_objects::key::material;

    #[test]
    fn the_record_decides_then_an_existing_id_then_newness() {
        use Choice::{Infer, Record, Unknown, Use};
        use Derivation::{KeyDerivationSecret as Kds, RpcSecret as Rpc};
        let cases: &[(&str, Option<&str>, Option<&str>, Choice)] = &[
            // A record is kept, whatever the status says.
            (
                "recorded rpc, in Garage",
                Some("rpc-secret"),
                Some("GK1"),
                Use(Rpc),
            ),
            (
                "recorded rpc, not yet in Garage",
                Some("rpc-secret"),
                None,
                Use(Rpc),
            ),
            (
                "recorded new, in Garage",
                Some("key-derivation-secret"),
                Some("GK1"),
                Use(Kds),
            ),
            (
                "recorded new, not yet in Garage",
                Some("key-derivation-secret"),
                None,
                Use(Kds),
            ),
            // Unrecorded and in Garage: created by an earlier version from the RPC secret, or
            // its record removed by hand; the ID tells which.
            ("unrecorded, in Garage", None, Some("GK1"), Infer),
            // Unrecorded and new: the key-derivation Secret.
            ("unrecorded, new", None, None, Record(Kds)),
            ("unrecorded, empty id", None, Some(""), Record(Kds)),
            // An unknown record is never guessed over.
            ("unknown, in Garage", Some("hmac"), Some("GK1"), Unknown),
            ("unknown, new", Some(""), None, Unknown),
        ];
        for (what, recorded, id, want) in cases {
            assert_eq!(choose(*recorded, *id), *want, "{what}");
        }
    }

    #[test]
    fn an_unrecorded_key_keeps_the_derivation_that_gives_its_id_or_none() {
        use Derivation::{KeyDerivationSecret as Kds, RpcSecret as Rpc};
        let rpc = material::derive_with(Rpc, b"rpc", "ns", "k", None).access_key_id;
        let kds = material::derive_with(Kds, &[7; 32], "ns", "k", None).access_key_id;
        let both = [(Rpc, Some(rpc.clone())), (Kds, Some(kds.clone()))];
        type Case<'a> = (
            &'a str,
            &'a str,
            &'a [(Derivation, Option<String>)],
            Option<Derivation>,
        );
        let cases: &[Case<'_>] = &[
            ("made from the RPC secret", &rpc, &both, Some(Rpc)),
            // The case a removed record used to get wrong: the RPC secret was assumed.
            ("record removed from a new key", &kds, &both, Some(Kds)),
            ("neither gives it", "GKother", &both, None),
            (
                "the key-derivation Secret is unreadable",
                &kds,
                &[(Rpc, Some(rpc.clone())), (Kds, None)],
                None,
            ),
        ];
        for (what, id, candidates, want) in cases {
            assert_eq!(matching(id, candidates), *want, "{what}");
        }
    }

    #[test]
    fn a_key_derived_from_its_spec_name_keeps_its_id_or_is_refused() {
        use Derivation::{RpcSecretBytes as Go, RpcSecretBytesSpecName as Legacy};
        let named = |name: &str| {
            let mut k = (*key("ns", "k", None, Some("GK1"))).clone();
            k.spec.name = Some(name.into());
            k
        };
        let secret = b"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let made = material::derive_for(Legacy, secret, &named("display"));
        // Keyed by spec.name, not by the object name.
        assert_ne!(
            made.access_key_id,
            material::derive_for(Go, secret, &named("display")).access_key_id
        );
        assert_eq!(
            made,
            material::derive_for(Go, secret, &{
                let mut k = named("display");
                k.metadata.name = Some("display".into());
                k
            })
        );
        let id = made.access_key_id.clone();
        assert_eq!(pinned(Legacy, made.clone(), Some(&id)), Ok(made.clone()));
        // spec.name changed since: refused, never new credentials.
        let renamed = material::derive_for(Legacy, secret, &named("renamed"));
        let refused = pinned(Legacy, renamed.clone(), Some(&id)).unwrap_err();
        assert!(refused.contains("set spec.name back"), "{refused}");
        // Other derivations follow the object name, which never changes: no check.
        assert_eq!(pinned(Go, renamed.clone(), Some(&id)), Ok(renamed));
    }

    /// A key `ns/name` of cluster `garage` in `ns`, with its record and status ID.
    fn key(ns: &str, name: &str, recorded: Option<&str>, id: Option<&str>) -> Arc<GarageKey> {
        let mut annotations = serde_json::Map::new();
        if let Some(r) = recorded {
            annotations.insert(annotation::ANNOTATION_KEY_DERIVATION.into(), r.into());
        }
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "apiVersion": "garage.rajsingh.info/v1beta1",
                "kind": "GarageKey",
                "metadata": {"name": name, "namespace": ns, "annotations": annotations},
                "spec": {"clusterRef": {"name": "garage", "namespace": "ns"}},
                "status": {"accessKeyId": id},
            }))
            .unwrap(),
        )
    }

    #[test]
    fn only_keys_of_the_cluster_derived_from_its_secret_and_in_garage_count() {
        let kds = Some("key-derivation-secret");
        let mut imported = (*key("ns", "imported", kds, Some("GKimp"))).clone();
        imported.spec.import_key = Some(Default::default());
        let mut elsewhere = (*key("ns", "elsewhere", kds, Some("GKother"))).clone();
        elsewhere.spec.cluster_ref.name = "other".into();
        let keys = vec![
            key("ns", "new", kds, Some("GKnew")),
            key("apps", "granted", kds, Some("GKapps")),
            key("ns", "legacy", Some("rpc-secret"), Some("GKrpc")),
            key("ns", "unrecorded", None, Some("GKold")),
            key("ns", "pending", kds, None),
            key("ns", "empty", kds, Some("")),
            Arc::new(imported),
            Arc::new(elsewhere),
        ];
        let derived = derived_ids(&keys, "ns", "garage");
        assert_eq!(derived, ["GKnew", "GKapps"]);
        assert!(derived_ids(&keys, "ns", "gone").is_empty());
        let garage = |ids: &[&str]| ids.iter().map(|i| (*i).to_owned()).collect::<BTreeSet<_>>();
        assert_eq!(
            lost_proof(&derived, &garage(&["GKapps", "GKrpc"])),
            Some("GKapps")
        );
        // A cluster created again under the same name holds none of them: nothing was lost.
        assert_eq!(lost_proof(&derived, &garage(&["GKrpc", "GKold"])), None);
        assert_eq!(lost_proof(&[], &garage(&["GKnew"])), None);
    }

    fn secret(owner_uid: &str, value: Option<&str>) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("garage-key-derivation".into()),
                owner_references: Some(vec![OwnerReference {
                    uid: owner_uid.into(),
                    controller: Some(true),
                    ..Default::default()
                }]),
                ..Default::default()
            },
            data: value.map(|v| {
                BTreeMap::from([(
                    secrets::KEY_DERIVATION_SECRET_KEY.to_owned(),
                    ByteString(v.as_bytes().to_vec()),
                )])
            }),
            ..Default::default()
        }
    }

    #[test]
    fn only_a_well_formed_secret_the_cluster_controls_is_used() {
        let hex = "ab".repeat(32);
        assert_eq!(
            usable(&secret("uid-1", Some(&format!("{hex}\n"))), "uid-1").unwrap(),
            hex.as_bytes()
        );
        assert!(usable(&secret("someone-else", Some(&hex)), "uid-1").is_err());
        assert!(usable(&secret("uid-1", Some("abc")), "uid-1").is_err());
        assert!(usable(&secret("uid-1", None), "uid-1").is_err());
        let e = usable(&secret("uid-1", Some(&"zz".repeat(32))), "uid-1").unwrap_err();
        assert!(!e.contains("zz"), "the value never shows: {e}");
    }
}
