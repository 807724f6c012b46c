//! Shapes only the Go operator migrates. Before it moved to one StatefulSet per GarageNode, it
//! ran a cluster's storage as one StatefulSet named after the cluster; its own migration turns
//! that into per-node workloads, keeping each pod's claims and so its Garage identity. It
//! deletes the old StatefulSet first (leaving its pods) and its pods in a later step, and
//! reports its progress in the cluster's `LegacySTSMigrated` condition.
//!
//! This operator does not carry that migration: rendering per-node members beside the old
//! pods would start new Garage identities next to the running ones, or a second process on
//! the same claims. A cluster that still has the old StatefulSet, or whose migration the Go
//! operator reports unfinished, is refused before the operator adds anything to it (no
//! finalizer, no credentials copy, nothing rendered) until the Go operator has finished.

use k8s_openapi::api::apps::v1::StatefulSet;
use kube::ResourceExt;
use shared_types::conditions::cluster::CONDITION_LEGACY_STS_MIGRATED;
use shared_types::conditions::common::CONDITION_READY;
use shared_types::garage_cluster::v1beta2::GarageCluster;

use crate::conditions::Desired;
use crate::desired::{DesiredError, is_controlled_by};

/// The refusal for `cluster` when it controls `statefulset` (the StatefulSet of its own name,
/// when there is one) or its `LegacySTSMigrated` condition is there and not `True`; `None`
/// otherwise.
pub fn refused(cluster: &GarageCluster, statefulset: Option<&StatefulSet>) -> Option<DesiredError> {
    let name = cluster.name_any();
    let uid = cluster.metadata.uid.as_deref().unwrap_or_default();
    let old_set = statefulset.filter(|s| s.name_any() == name && is_controlled_by(*s, uid));
    let unfinished = cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == CONDITION_LEGACY_STS_MIGRATED))
        .filter(|c| c.status != "True");
    let why = match (old_set, unfinished) {
        (Some(_), _) => format!(
            "the cluster still runs its storage as the StatefulSet {name}, the shape the Go operator used before one StatefulSet per GarageNode"
        ),
        (None, Some(c)) => format!(
            "the Go operator's move from the StatefulSet {name} to per-node workloads is not finished ({CONDITION_LEGACY_STS_MIGRATED} is {}: {}); its old pods may still hold the claims",
            c.status, c.message
        ),
        (None, None) => return None,
    };
    Some(DesiredError::UnsupportedChange {
        field: "spec.storage",
        message: format!(
            "{why}. This operator does not migrate it: its own members beside the old pods would start new Garage identities next to the running ones. Run the Go operator until {CONDITION_LEGACY_STS_MIGRATED} is True, then switch; nothing is added or changed until then"
        ),
    })
}

/// `Ready=False` saying why, as the refusal is published.
pub fn condition(e: &DesiredError) -> Desired {
    Desired {
        type_: CONDITION_READY,
        status: false,
        reason: e.reported_as().0,
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(name: &str, controller: Option<(&str, bool)>) -> StatefulSet {
        let owners: Vec<_> = controller
            .into_iter()
            .map(|(uid, c)| {
                json!({"apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
                       "name": "garage", "uid": uid, "controller": c})
            })
            .collect();
        serde_json::from_value(json!({"metadata": {"name": name, "ownerReferences": owners}}))
            .unwrap()
    }

    fn cluster(migrated: Option<&str>) -> GarageCluster {
        let conditions: Vec<_> = migrated
            .into_iter()
            .map(|s| {
                json!({"type": CONDITION_LEGACY_STS_MIGRATED, "status": s, "reason": "R",
                       "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"})
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
            "metadata": {"name": "garage", "namespace": "ns", "uid": "u1"},
            "spec": {},
            "status": {"conditions": conditions},
        }))
        .unwrap()
    }

    #[test]
    fn the_old_statefulset_or_an_unfinished_migration_is_refused() {
        let own = set("garage", Some(("u1", true)));
        for (set_, migrated, refused_) in [
            (None, None, false),
            (None, Some("True"), false),
            (Some(own.clone()), None, true),
            (Some(own.clone()), Some("True"), true),
            (None, Some("False"), true),
            (None, Some("Unknown"), true),
            // A GarageNode named like the cluster owns its own StatefulSet.
            (Some(set("garage", Some(("node-uid", true)))), None, false),
            (Some(set("garage", Some(("u1", false)))), None, false),
            (Some(set("garage", None)), None, false),
            (Some(set("other", Some(("u1", true)))), None, false),
        ] {
            let got = refused(&cluster(migrated), set_.as_ref());
            assert_eq!(got.is_some(), refused_, "{set_:?} {migrated:?}");
        }
    }

    #[test]
    fn the_refusal_names_the_field_the_statefulset_and_what_to_do() {
        let own = set("garage", Some(("u1", true)));
        for (set_, migrated, says) in [
            (
                Some(own),
                None,
                "runs its storage as the StatefulSet garage",
            ),
            (None, Some("False"), "LegacySTSMigrated is False: m"),
        ] {
            let e = refused(&cluster(migrated), set_.as_ref()).unwrap();
            let text = e.to_string();
            assert!(text.starts_with("spec.storage: "), "{text}");
            assert!(text.contains(says), "{text}");
            assert!(text.contains("Run the Go operator until LegacySTSMigrated is True"));
            let c = condition(&e);
            assert_eq!((c.type_, c.status), (CONDITION_READY, false));
            assert_eq!(
                c.reason,
                shared_types::conditions::reason::REASON_UNSUPPORTED
            );
        }
    }
}
