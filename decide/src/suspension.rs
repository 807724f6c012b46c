//! Whether the user (or the operator itself) paused the work on a GarageCluster or a
//! GarageNode, and what the `Suspended` condition says about it.
//!
//! A suspended cluster gets no write to its workloads, configuration, layout or Garage; its
//! GarageNodes are suspended with it. A suspended GarageNode keeps its StatefulSet, Service
//! and claims as they are, its layout entry is not changed, the storage rollout does not
//! replace its pod and an Auto scale-down does not pick it. Deleting either still works, and
//! so does an explicit drain request: each is a request of its own. Transaction records
//! (drain, rollout) of a suspended cluster stay in status and resume with the next pass after
//! the suspension is lifted.

use kube::ResourceExt;
use shared_types::conditions::{node as node_conditions, reason};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::{ANNOTATION_OPERATOR_SUSPENDED, ANNOTATION_PAUSE_RECONCILE};

use crate::conditions::Desired;

/// Why the work on an object is paused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// The object's own `spec.maintenance.suspended: true`.
    Maintenance,
    /// The object's `garage.rajsingh.info/pause-reconcile: "true"` annotation.
    PauseAnnotation,
    /// The parent GarageCluster is suspended (by either of the above).
    Cluster(String),
    /// A cluster-level operation holds the node (`operator-suspended`, value: its ID).
    Operator(String),
}

impl Cause {
    /// The `Suspended` condition's reason.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Maintenance | Self::PauseAnnotation => reason::REASON_MAINTENANCE_SUSPENDED,
            Self::Cluster(_) => reason::REASON_CLUSTER_MAINTENANCE_SUSPENDED,
            Self::Operator(_) => reason::REASON_OPERATOR_SUSPENDED,
        }
    }

    /// A sentence naming the switch, and how to lift it.
    pub fn message(&self) -> String {
        let what = match self {
            Self::Maintenance => "spec.maintenance.suspended is true; set it to false".to_owned(),
            Self::PauseAnnotation => format!(
                "the annotation {ANNOTATION_PAUSE_RECONCILE} is \"true\"; remove it (or use spec.maintenance.suspended)"
            ),
            Self::Cluster(name) => {
                format!("its GarageCluster {name} is suspended; lift the cluster's suspension")
            }
            Self::Operator(op) => format!(
                "the operation {op} holds it ({ANNOTATION_OPERATOR_SUSPENDED}); remove the annotation once nothing runs that operation (this operator never sets it)"
            ),
        };
        format!(
            "reconciliation is paused: {what}. Workloads, configuration and layout are left as they are; deletion still proceeds"
        )
    }

    /// The condition this cause publishes.
    pub fn condition(&self) -> Desired {
        Desired {
            type_: node_conditions::CONDITION_SUSPENDED,
            status: true,
            reason: self.reason(),
            message: self.message(),
        }
    }
}

/// The object's own switches: `spec.maintenance.suspended`, then the `pause-reconcile`
/// annotation (`"true"`, any case; other values are not a request).
fn own(
    suspended: Option<bool>,
    annotations: &std::collections::BTreeMap<String, String>,
) -> Option<Cause> {
    if suspended == Some(true) {
        return Some(Cause::Maintenance);
    }
    annotations
        .get(ANNOTATION_PAUSE_RECONCILE)
        .filter(|v| v.trim().eq_ignore_ascii_case("true"))
        .map(|_| Cause::PauseAnnotation)
}

/// Why `cluster` is suspended, if it is.
pub fn of_cluster(cluster: &GarageCluster) -> Option<Cause> {
    own(
        cluster.spec.maintenance.as_ref().and_then(|m| m.suspended),
        cluster.annotations(),
    )
}

/// Why `node` is suspended, if it is: its own switches first, then a holding operation, then
/// its parent's suspension.
pub fn of_node(node: &GarageNode, parent: Option<&GarageCluster>) -> Option<Cause> {
    if let Some(cause) = own(
        node.spec.maintenance.as_ref().and_then(|m| m.suspended),
        node.annotations(),
    ) {
        return Some(cause);
    }
    if let Some(op) = node
        .annotations()
        .get(ANNOTATION_OPERATOR_SUSPENDED)
        .filter(|v| !v.trim().is_empty())
    {
        return Some(Cause::Operator(op.trim().to_owned()));
    }
    parent
        .filter(|c| of_cluster(c).is_some())
        .map(|c| Cause::Cluster(c.name_any()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared_types::common::MaintenanceConfig;

    fn cluster(suspended: Option<bool>, pause: Option<&str>) -> GarageCluster {
        let mut c = crate::fixtures::cluster(3);
        c.spec.maintenance = suspended.map(|s| MaintenanceConfig { suspended: Some(s) });
        if let Some(v) = pause {
            c.metadata
                .annotations
                .get_or_insert_default()
                .insert(ANNOTATION_PAUSE_RECONCILE.into(), v.into());
        }
        c
    }

    fn node(suspended: Option<bool>, annotations: &[(&str, &str)]) -> GarageNode {
        let mut n = crate::fixtures::manual("n0", None);
        n.spec.maintenance = suspended.map(|s| MaintenanceConfig { suspended: Some(s) });
        for (k, v) in annotations {
            n.metadata
                .annotations
                .get_or_insert_default()
                .insert((*k).into(), (*v).into());
        }
        n
    }

    #[test]
    fn a_cluster_is_suspended_by_its_maintenance_switch_or_the_pause_annotation() {
        let cases = [
            (None, None, None),
            (Some(false), None, None),
            (Some(true), None, Some(Cause::Maintenance)),
            (None, Some("true"), Some(Cause::PauseAnnotation)),
            (None, Some(" TRUE "), Some(Cause::PauseAnnotation)),
            (None, Some("false"), None),
            (None, Some("yes"), None),
            (Some(true), Some("true"), Some(Cause::Maintenance)),
        ];
        for (suspended, pause, want) in cases {
            assert_eq!(
                of_cluster(&cluster(suspended, pause)),
                want,
                "{suspended:?} {pause:?}"
            );
        }
    }

    #[test]
    fn a_node_is_suspended_by_itself_an_operation_or_its_parent() {
        let free = cluster(None, None);
        let held = cluster(Some(true), None);
        let op = [(ANNOTATION_OPERATOR_SUSPENDED, "purge-1")];
        let cases: [(GarageNode, Option<&GarageCluster>, Option<Cause>); 7] = [
            (node(None, &[]), Some(&free), None),
            (node(None, &[]), None, None),
            (node(Some(true), &[]), Some(&free), Some(Cause::Maintenance)),
            (
                node(None, &[(ANNOTATION_PAUSE_RECONCILE, "true")]),
                None,
                Some(Cause::PauseAnnotation),
            ),
            (
                node(None, &op),
                Some(&held),
                Some(Cause::Operator("purge-1".into())),
            ),
            (
                node(None, &[(ANNOTATION_OPERATOR_SUSPENDED, " ")]),
                Some(&free),
                None,
            ),
            (
                node(Some(false), &[]),
                Some(&held),
                Some(Cause::Cluster(held.name_any())),
            ),
        ];
        for (n, parent, want) in cases {
            assert_eq!(of_node(&n, parent), want, "{:?}", n.metadata.annotations);
        }
    }

    #[test]
    fn each_cause_names_its_switch_and_reason() {
        let cases = [
            (
                Cause::Maintenance,
                "MaintenanceSuspended",
                "spec.maintenance.suspended",
            ),
            (
                Cause::PauseAnnotation,
                "MaintenanceSuspended",
                "pause-reconcile",
            ),
            (
                Cause::Cluster("c".into()),
                "ClusterMaintenanceSuspended",
                "GarageCluster c",
            ),
            (Cause::Operator("op-1".into()), "OperatorSuspended", "op-1"),
        ];
        for (cause, reason, names) in cases {
            let c = cause.condition();
            assert_eq!((c.type_, c.status, c.reason), ("Suspended", true, reason));
            assert!(c.message.contains(names), "{}", c.message);
        }
    }
}
