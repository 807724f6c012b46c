//! Whole-store teardown of a deleting GarageCluster under `deletionPolicy: Destroy`: its
//! GarageNodes first (each one's own finalizer stops its workload; claims follow the PVC
//! retention policy), then every other object the cluster controls, then the finalizer.
//!
//! The phase is derived from what still exists, so a restart resumes where it stopped and
//! every step is idempotent. [`step`] is pure; the cluster controller carries the step out.

use shared_types::garage_cluster::common::DeletionPolicy;

/// A child object of the cluster, by kind and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Child {
    /// Kind (`GarageNode`, `Service`, `ConfigMap`, `Secret`, `PodDisruptionBudget`,
    /// `NetworkPolicy`, ...).
    pub kind: &'static str,
    /// Name.
    pub name: String,
    /// True once its deletion has been accepted (it carries a deletion timestamp).
    pub deleting: bool,
}

/// What the teardown decides from.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Every GarageNode that references the cluster (generated and user-written).
    pub nodes: Vec<Child>,
    /// Every other object the cluster controls.
    pub owned: Vec<Child>,
}

/// Where a teardown stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// The policy asks for a drain, which runs before DELETE is admitted; nothing is removed.
    Refused(String),
    /// GarageNodes exist that have not been asked to go.
    DeleteNodes(Vec<String>),
    /// Every GarageNode has been asked to go; some are still finishing.
    WaitForNodes(Vec<String>),
    /// Only cluster-level objects remain.
    DeleteOwned(Vec<Child>),
    /// Nothing is left: the finalizer can go.
    Done,
}

/// The next step.
pub fn step(policy: DeletionPolicy, o: &Observed) -> Phase {
    if policy == DeletionPolicy::Drain {
        return Phase::Refused(
            "deletionPolicy: Drain retires this site from a federated layout, which this operator version does not implement; nothing was removed. Set spec.deletionPolicy: Destroy to tear the whole store down".into(),
        );
    }
    let fresh: Vec<String> = o
        .nodes
        .iter()
        .filter(|n| !n.deleting)
        .map(|n| n.name.clone())
        .collect();
    if !fresh.is_empty() {
        return Phase::DeleteNodes(fresh);
    }
    if !o.nodes.is_empty() {
        return Phase::WaitForNodes(o.nodes.iter().map(|n| n.name.clone()).collect());
    }
    let remaining: Vec<Child> = o.owned.iter().filter(|c| !c.deleting).cloned().collect();
    if !remaining.is_empty() {
        return Phase::DeleteOwned(remaining);
    }
    if !o.owned.is_empty() {
        // Objects with finalizers of their own: wait until the API server drops them.
        return Phase::WaitForNodes(o.owned.iter().map(|c| c.name.clone()).collect());
    }
    Phase::Done
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared_types::garage_cluster::v1beta2::GarageCluster;

    fn child(kind: &'static str, name: &str, deleting: bool) -> Child {
        Child {
            kind,
            name: name.into(),
            deleting,
        }
    }

    #[test]
    fn nodes_go_first_then_owned_objects_then_the_finalizer() {
        let all = Observed {
            nodes: vec![
                child("GarageNode", "g-storage-0", false),
                child("GarageNode", "manual-a", true),
            ],
            owned: vec![child("Service", "g", false)],
        };
        assert_eq!(
            step(DeletionPolicy::Destroy, &all),
            Phase::DeleteNodes(vec!["g-storage-0".into()])
        );
        let waiting = Observed {
            nodes: vec![child("GarageNode", "manual-a", true)],
            ..all.clone()
        };
        assert_eq!(
            step(DeletionPolicy::Destroy, &waiting),
            Phase::WaitForNodes(vec!["manual-a".into()])
        );
        let owned = Observed {
            nodes: vec![],
            ..all.clone()
        };
        assert_eq!(
            step(DeletionPolicy::Destroy, &owned),
            Phase::DeleteOwned(vec![child("Service", "g", false)])
        );
        assert_eq!(
            step(DeletionPolicy::Destroy, &Observed::default()),
            Phase::Done
        );
    }

    #[test]
    fn drain_policy_removes_nothing() {
        let o = Observed {
            nodes: vec![child("GarageNode", "g-storage-0", false)],
            owned: vec![],
        };
        assert!(matches!(
            step(DeletionPolicy::Drain, &o),
            Phase::Refused(m) if m.contains("spec.deletionPolicy: Destroy")
        ));
    }

    #[test]
    fn federated_sites_default_to_drain() {
        let mut c = GarageCluster::new("g", Default::default());
        assert_eq!(c.effective_deletion_policy(), DeletionPolicy::Destroy);
        c.spec.remote_clusters = Some(vec![Default::default()]);
        assert_eq!(c.effective_deletion_policy(), DeletionPolicy::Drain);
        c.spec.deletion_policy = Some(DeletionPolicy::Destroy);
        assert_eq!(c.effective_deletion_policy(), DeletionPolicy::Destroy);
    }
}
