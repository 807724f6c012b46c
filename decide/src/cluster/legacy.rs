//! Shapes only the Go operator migrates. Before it moved to one StatefulSet per GarageNode, it
//! ran a cluster's storage as one StatefulSet named after the cluster; its own migration
//! turns that into per-node workloads, keeping each pod's claims and so its Garage identity.
//! This operator does not carry that migration: rendering per-node members beside the old
//! StatefulSet would start new Garage identities next to the running ones. A cluster that
//! still has it is refused, with nothing rendered or changed, until the Go operator has
//! migrated it.

use k8s_openapi::api::apps::v1::StatefulSet;
use kube::ResourceExt;

use crate::desired::{DesiredError, is_controlled_by};

/// The refusal for a cluster `name` (UID `uid`) that still controls a StatefulSet of its own
/// name among `statefulsets`; `None` when it controls none.
pub fn refused(name: &str, uid: &str, statefulsets: &[StatefulSet]) -> Option<DesiredError> {
    let legacy = statefulsets
        .iter()
        .any(|s| s.name_any() == name && is_controlled_by(s, uid));
    legacy.then(|| DesiredError::UnsupportedChange {
        field: "spec.storage",
        message: format!(
            "the cluster still runs its storage as the StatefulSet {name}, the shape the Go operator used before one StatefulSet per GarageNode; this operator does not migrate it, and rendering its own members beside it would start new Garage identities next to the running ones. Run the Go operator until its LegacySTSMigrated condition is True, then switch; nothing is rendered or changed until the StatefulSet {name} is gone"
        ),
    })
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

    #[test]
    fn only_a_statefulset_of_the_clusters_name_it_controls_is_refused() {
        for (sets, refused_) in [
            (vec![], false),
            (vec![set("garage-storage-0", Some(("u1", true)))], false),
            (vec![set("garage", Some(("u1", true)))], true),
            // A GarageNode named like the cluster owns its own StatefulSet.
            (vec![set("garage", Some(("node-uid", true)))], false),
            (vec![set("garage", Some(("u1", false)))], false),
            (vec![set("garage", None)], false),
            (
                vec![
                    set("garage-storage-0", Some(("u1", true))),
                    set("garage", Some(("u1", true))),
                ],
                true,
            ),
        ] {
            assert_eq!(
                refused("garage", "u1", &sets).is_some(),
                refused_,
                "{sets:?}"
            );
        }
    }

    #[test]
    fn the_refusal_names_the_statefulset_and_what_to_do() {
        let e = refused("garage", "u1", &[set("garage", Some(("u1", true)))]).unwrap();
        let text = e.to_string();
        assert!(text.starts_with("spec.storage: "), "{text}");
        assert!(text.contains("StatefulSet garage"), "{text}");
        assert!(text.contains("LegacySTSMigrated"), "{text}");
        assert_eq!(
            e.reported_as().0,
            shared_types::conditions::reason::REASON_UNSUPPORTED
        );
    }
}
