//! The Kubernetes API access the reconciler needs, as one table: API group, resource, verbs,
//! scope and the reason, row by row. The chart's reconciler RBAC
//! (`charts/garage-operator/templates/rbac-reconciler.yaml`) grants exactly these rows, and
//! every API call in this crate's source is allowed by one of them; `reconciler/tests/rbac`
//! checks both, so a permission is added here, with its reason, or nowhere.
//!
//! Not listed: `GET /version` (the scheduling-gate probe reads the server version), which
//! Kubernetes allows every authenticated client through its default
//! `system:public-info-viewer` ClusterRole.

/// The API group of this operator's custom resources.
const GARAGE: &str = "garage.rajsingh.info";

/// Where a row is granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Every namespace the reconciler manages: one ClusterRole in a cluster-wide install
    /// (which also covers the reads across every namespace that node-local pools make), one
    /// Role per managed namespace in a namespace-scoped install (where those cross-namespace
    /// reads are refused and pools fail closed, saying so).
    Managed,
    /// Cluster-scoped objects, in every install.
    Cluster,
    /// The release namespace only.
    Release,
}

/// Which objects of the resource a row covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Objects {
    /// Every object in the scope.
    Any,
    /// Only the leader election Lease (`resourceNames`: the install's lease name).
    LeaderLease,
}

/// What makes the permission necessary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    /// A call of this crate (or of kube-runtime on its behalf) with each verb.
    Call,
    /// No call: objects the reconciler creates name this kind as their owner with
    /// `blockOwnerDeletion`, and the OwnerReferencesPermissionEnforcement admission plugin
    /// (enabled on OpenShift and other hardened clusters) then requires `update` on the
    /// owner's `finalizers` subresource.
    BlockOwnerDeletion,
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permission {
    /// API group (`""` for the core group).
    pub group: &'static str,
    /// Resource plural, with `/subresource` where one is meant.
    pub resource: &'static str,
    /// RBAC verbs.
    pub verbs: &'static [&'static str],
    /// Where it is granted.
    pub scope: Scope,
    /// Which objects.
    pub objects: Objects,
    /// What makes it necessary.
    pub need: Need,
    /// Why, in one line.
    pub reason: &'static str,
}

impl Permission {
    /// True when this row grants `verb` on `group`/`resource`.
    pub fn allows(&self, group: &str, resource: &str, verb: &str) -> bool {
        self.group == group && self.resource == resource && self.verbs.contains(&verb)
    }
}

/// A row for every object in `scope`, needed by a call.
const fn row(
    scope: Scope,
    group: &'static str,
    resource: &'static str,
    verbs: &'static [&'static str],
    reason: &'static str,
) -> Permission {
    Permission {
        group,
        resource,
        verbs,
        scope,
        objects: Objects::Any,
        need: Need::Call,
        reason,
    }
}

/// The `finalizers` row of an owner kind (see [`Need::BlockOwnerDeletion`]).
const fn owner(resource: &'static str, reason: &'static str) -> Permission {
    Permission {
        group: GARAGE,
        resource,
        verbs: &["update"],
        scope: Scope::Managed,
        objects: Objects::Any,
        need: Need::BlockOwnerDeletion,
        reason,
    }
}

use Scope::{Cluster, Managed, Release};

/// Every permission the reconciler needs.
pub const PERMISSIONS: &[Permission] = &[
    row(
        Managed,
        GARAGE,
        "garageclusters",
        &["get", "list", "watch", "patch"],
        "watched by the cluster and node controllers and re-read before members are created or a member acts for its cluster; finalizer, pinned-credential, recovery and managing-install annotations, and the Tables repair a bucket whose metadata Garage cannot decode requests, are merge patches",
    ),
    row(
        Managed,
        GARAGE,
        "garageclusters/status",
        &["patch"],
        "status, and the drain and rollout records behind a resourceVersion test",
    ),
    owner(
        "garageclusters/finalizers",
        "a cluster owns its Secrets, ConfigMaps, Services, PDB, NetworkPolicy, pool DaemonSets, probe pod and GarageNodes",
    ),
    row(
        Managed,
        GARAGE,
        "garagenodes",
        &["get", "list", "watch", "create", "patch", "delete"],
        "generated members are created, converged, ejected, asked to drain and deleted; finalizer by merge patch",
    ),
    row(
        Managed,
        GARAGE,
        "garagenodes/status",
        &["patch"],
        "node identity, phase and conditions",
    ),
    owner(
        "garagenodes/finalizers",
        "a GarageNode owns its StatefulSet and per-node Service",
    ),
    row(
        Managed,
        GARAGE,
        "garagebuckets",
        &["list", "watch", "patch"],
        "the bucket controller and the grant controller's usage count; finalizer by merge patch",
    ),
    row(
        Managed,
        GARAGE,
        "garagebuckets/status",
        &["patch"],
        "bucket ID, quotas and conditions",
    ),
    row(
        Managed,
        GARAGE,
        "garagekeys",
        &["list", "watch", "patch"],
        "the key controller and the grant controller's usage count; finalizer by merge patch",
    ),
    row(
        Managed,
        GARAGE,
        "garagekeys/status",
        &["patch"],
        "access key ID, Secret reference and conditions",
    ),
    owner(
        "garagekeys/finalizers",
        "a GarageKey owns the Secret holding its credentials",
    ),
    row(
        Managed,
        GARAGE,
        "garageadmintokens",
        &["list", "watch", "patch"],
        "the admin token controller; finalizer by merge patch",
    ),
    row(
        Managed,
        GARAGE,
        "garageadmintokens/status",
        &["patch"],
        "token ID and conditions",
    ),
    owner(
        "garageadmintokens/finalizers",
        "a GarageAdminToken owns the Secret holding its token",
    ),
    row(
        Managed,
        GARAGE,
        "garagereferencegrants",
        &["list", "watch"],
        "grants decide which cross-namespace references of keys and buckets are allowed",
    ),
    row(
        Managed,
        GARAGE,
        "garagereferencegrants/status",
        &["patch"],
        "a grant reports what uses it",
    ),
    row(
        Managed,
        "",
        "secrets",
        &["get", "list", "watch", "create", "update", "delete"],
        "RPC secret, admin tokens and their pinned copies, key credentials: read, created once, replaced or deleted when their owner changes or goes",
    ),
    row(
        Managed,
        "",
        "configmaps",
        &["get", "list", "watch", "create", "delete"],
        "immutable Garage configuration revisions: created, read back, pruned",
    ),
    row(
        Managed,
        "",
        "services",
        &["get", "list", "watch", "create", "patch", "delete"],
        "cluster and per-node Services",
    ),
    row(
        Managed,
        "",
        "pods",
        &["get", "list", "watch", "create", "patch", "delete"],
        "Garage pods are read and replaced one at a time; the scheduling-gate probe pod is created and deleted; pool pods have their activation gate lifted, gateway pods their tier label moved, and pods the seen-without-role mark written, by patch",
    ),
    row(
        Managed,
        "",
        "persistentvolumeclaims",
        &["get", "list", "watch", "patch"],
        "a member's claims are watched and patched (reservation finalizer, identity, VolumeAttributesClass, size); never created or deleted",
    ),
    row(
        Managed,
        "apps",
        "statefulsets",
        &["get", "list", "watch", "create", "patch", "delete"],
        "one StatefulSet per GarageNode",
    ),
    row(
        Managed,
        "apps",
        "daemonsets",
        &["get", "list", "watch", "create", "patch", "delete"],
        "one DaemonSet per node-local pool; the gate probe is a server-side dry-run create",
    ),
    row(
        Managed,
        "policy",
        "poddisruptionbudgets",
        &["get", "list", "watch", "create", "patch", "delete"],
        "the cluster's PodDisruptionBudget",
    ),
    row(
        Managed,
        "networking.k8s.io",
        "networkpolicies",
        &["get", "list", "watch", "create", "patch", "delete"],
        "the optional NetworkPolicy of a cluster's Garage pods: ensured while garageNetworkPolicy is on, deleted while it is off (so the verbs are needed in either state), watched and removed at teardown like the other children",
    ),
    row(
        Managed,
        "monitoring.coreos.com",
        "servicemonitors",
        &["get", "create", "patch", "delete"],
        "the ServiceMonitor of spec.monitoring: ensured while it is on, deleted (only the one the cluster controls) while it is off; never listed or watched, so an API server without the prometheus-operator CRDs costs nothing",
    ),
    row(
        Managed,
        "events.k8s.io",
        "events",
        &["create", "patch"],
        "layout, drain, rollout, teardown and managed-by-another-install Events (kube-runtime's recorder patches a repeated one)",
    ),
    row(
        Cluster,
        "",
        "nodes",
        &["get", "list", "watch", "patch"],
        "zoneFrom and node-local pools read Nodes, and follow their labels (one watch per install, namespace-scoped ones too); pools set and clear the activation labels and identity annotations they own",
    ),
    row(
        Cluster,
        "",
        "namespaces",
        &["get", "list"],
        "reference grants that select namespaces by label",
    ),
    row(
        Release,
        "coordination.k8s.io",
        "leases",
        &["create"],
        "leader election: the Lease is created when absent (create cannot be limited by name)",
    ),
    Permission {
        group: "coordination.k8s.io",
        resource: "leases",
        verbs: &["get", "update"],
        scope: Release,
        objects: Objects::LeaderLease,
        need: Need::Call,
        reason: "leader election: read and renew the install's own Lease",
    },
];

/// The rows that grant `verb` on `group`/`resource`.
pub fn granting<'a>(
    group: &'a str,
    resource: &'a str,
    verb: &'a str,
) -> impl Iterator<Item = &'static Permission> + 'a {
    PERMISSIONS
        .iter()
        .filter(move |p| p.allows(group, resource, verb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_specific_and_says_why() {
        for p in PERMISSIONS {
            assert!(!p.verbs.is_empty() && !p.reason.is_empty(), "{p:?}");
            assert!(!p.verbs.contains(&"*") && p.resource != "*", "{p:?}");
        }
    }

    #[test]
    fn no_verb_is_granted_twice_in_one_scope() {
        for (i, a) in PERMISSIONS.iter().enumerate() {
            for b in &PERMISSIONS[i + 1..] {
                let same = a.group == b.group && a.resource == b.resource && a.scope == b.scope;
                assert!(
                    !same || a.verbs.iter().all(|v| !b.verbs.contains(v)),
                    "{a:?} and {b:?}"
                );
            }
        }
    }
}
