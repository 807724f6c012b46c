//! A deleting GarageNode: whether its workload may stop, and what goes before its finalizer.
//! A storage identity stops only after the parent's drain proof for it (or when the parent
//! tears the whole store down); a gateway once its role is out of the layout; a pool member by
//! losing its Node's activation.

use std::time::Duration;

use kube::ResourceExt;
use shared_types::common::ClusterPhase;
use shared_types::conditions::{common, reason};
use shared_types::drain;
use shared_types::garage_cluster::common::DeletionPolicy;
use shared_types::garage_node::GarageNodeStatus;
use shared_types::keys::finalizer::FINALIZER_NODE;

use super::decision::{Decision, claim_list, drain_proven};
use super::observed::Observed;
use crate::conditions::Desired;
use crate::config::Config;
use crate::desired::{data_dirs, nodes};
use crate::finalizers;
use crate::note::Note;

/// A deleting node: its workload stops only when the parent tears the whole store down;
/// a storage identity leaving on its own needs the drain proof, so nothing is stopped.
pub(super) fn finalize(o: &Observed, t: &Config) -> Decision {
    let node = o.node.as_ref();
    if !finalizers::has(node, FINALIZER_NODE) {
        return Decision::default();
    }
    let mut status = node.status.clone().unwrap_or_default();
    status.phase = Some(ClusterPhase::Deleting);
    let destroying = o.parent.as_ref().is_some_and(|c| {
        c.metadata.deletion_timestamp.is_some()
            && c.effective_deletion_policy() == DeletionPolicy::Destroy
    });
    // A shape this version refuses never got a workload: nothing to wait for.
    let refused = match (nodes::shape(node), &o.settings) {
        (Err(_), _) => true,
        (Ok(nodes::NodeShape::Managed), Some(Ok(s))) => data_dirs::check_node(node, s).is_err(),
        _ => false,
    };
    let nothing_ran = refused && o.statefulset.is_none() && o.pod.is_none();
    // A completed drain proof for exactly this incarnation authorises stopping the source
    // without proving again: it is expected to vanish now. A gateway needs its role out of
    // the layout only.
    let gateway = nodes::is_gateway(node);
    let proven = if gateway {
        gateway_retired(o)
    } else {
        drain_proven(o)
    };
    if (destroying || proven)
        && let Ok(nodes::NodeShape::Pool { pool, node: host }) = nodes::shape(node)
        && let Some(Ok(s)) = &o.settings
    {
        return finalize_pool_member(o, s, &pool, &host, proven, status, t);
    }
    if destroying || nothing_ran || proven {
        let workload_left = o.statefulset.is_some() || o.pod.is_some() || o.service_exists;
        // The claims' reservations go once nothing mounts them, before the finalizer; after a
        // proof each claim records the identity that left, so it is never started on again.
        // A gateway's metadata claim may serve it again: it stores no data to go stale.
        let retired = (proven && !gateway)
            .then(|| node.status.as_ref().and_then(|s| s.node_id.as_deref()))
            .flatten();
        let releases = super::claims::release(&claim_list(o), retired);
        if !workload_left && !releases.is_empty() {
            return Decision {
                claim_patches: releases,
                requeue: Some(t.short_requeue.min(Duration::from_secs(2))),
                ..Decision::default()
            };
        }
        if !workload_left {
            return Decision {
                finalizer: Some(false),
                notes: vec![Note::normal(
                    reason::REASON_DELETING,
                    "StopWorkload",
                    "workload stopped; finalizer released".into(),
                )],
                ..Decision::default()
            };
        }
        return Decision {
            delete_workload: o.statefulset.is_some() || o.service_exists,
            status: Some(status),
            conditions: vec![Desired {
                type_: common::CONDITION_READY,
                status: false,
                reason: reason::REASON_DELETING,
                message: if gateway && proven {
                    "the gateway's role is out of the layout; stopping its workload".into()
                } else if proven {
                    "drained with a complete block proof; stopping this node's workload".into()
                } else {
                    "the parent GarageCluster is tearing the store down; stopping this node's workload".into()
                },
            }],
            requeue: Some(t.short_requeue.min(Duration::from_secs(2))),
            ..Decision::default()
        };
    }
    if gateway {
        return Decision {
            status: Some(status),
            conditions: vec![Desired {
                type_: common::CONDITION_READY,
                status: false,
                reason: reason::REASON_DELETING,
                message: "the gateway keeps running until the parent GarageCluster has removed its role from the layout and every node has synced that version".into(),
            }],
            requeue: Some(t.short_requeue),
            ..Decision::default()
        };
    }
    let message = match &o.parent {
        None => format!(
            "the parent GarageCluster {} is gone; this storage identity keeps its finalizer and workload. Restore the parent, or complete a documented manual recovery",
            node.spec.cluster_ref.name
        ),
        Some(_) => "a storage GarageNode leaves only through a prepared drain: set annotation garage.rajsingh.info/drain=true and wait for DrainPrepared=True; the workload keeps running and nothing was removed".into(),
    };
    Decision {
        status: Some(status),
        conditions: vec![Desired {
            type_: common::CONDITION_READY,
            status: false,
            reason: reason::REASON_NODE_DRAIN_BLOCKED,
            message: message.clone(),
        }],
        notes: vec![Note::warning(
            reason::REASON_NODE_DRAIN_BLOCKED,
            "StopWorkload",
            message,
        )],
        requeue: Some(t.resync),
        ..Decision::default()
    }
}

/// A leaving pool member: its Node loses the pool's activation label and identity record,
/// which makes the DaemonSet stop its pod, then, once the pod is gone, the pool's HostPath
/// claim; the finalizer goes after that. Its HostPath data stays on the Node.
fn finalize_pool_member(
    o: &Observed,
    s: &crate::desired::Settings,
    pool: &str,
    host: &str,
    proven: bool,
    status: GarageNodeStatus,
    t: &Config,
) -> Decision {
    let mut keys = vec![
        crate::desired::pool::activation_key(s, pool),
        crate::desired::pool::node_id_key(s, pool),
    ];
    // The HostPath claim goes last, once no pod of the member mounts the disks any more.
    if o.pod.is_none() {
        keys.push(crate::desired::hostpath_claim::key(s, pool));
    }
    let bound: Vec<String> = o
        .host
        .as_ref()
        .map(|n| {
            keys.iter()
                .filter(|k| n.labels().contains_key(*k) || n.annotations().contains_key(*k))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    if bound.is_empty() && o.pod.is_none() {
        return Decision {
            finalizer: Some(false),
            notes: vec![Note::normal(
                reason::REASON_DELETING,
                "StopWorkload",
                format!(
                    "pool pod on Node {host} is gone; finalizer released (HostPath data stays)"
                ),
            )],
            ..Decision::default()
        };
    }
    Decision {
        unbind: (!bound.is_empty()).then(|| (host.to_owned(), bound)),
        status: Some(status),
        conditions: vec![Desired {
            type_: common::CONDITION_READY,
            status: false,
            reason: reason::REASON_DELETING,
            message: if proven {
                format!(
                    "drained with a complete block proof; Node {host} loses its pool activation and the pool pod stops"
                )
            } else {
                format!(
                    "the parent GarageCluster is tearing the store down; Node {host} loses its pool activation and the pool pod stops"
                )
            },
        }],
        requeue: Some(t.short_requeue.min(Duration::from_secs(2))),
        ..Decision::default()
    }
}

/// True when a deleting gateway may stop: its role left the layout through the parent's
/// role-only transaction for exactly this incarnation, or it has nothing to retire (no
/// identity was ever recorded, or the parent is gone and no layout is left to write).
fn gateway_retired(o: &Observed) -> bool {
    let node = o.node.as_ref();
    let Some(parent) = o.parent.as_ref() else {
        return true;
    };
    let Some(id) = node.status.as_ref().and_then(|s| s.node_id.clone()) else {
        return true;
    };
    parent
        .status
        .as_ref()
        .and_then(|s| s.storage_drain.as_ref())
        .is_some_and(|record| {
            drain::role_retired(
                record,
                &node.namespace().unwrap_or_default(),
                &node.name_any(),
                node.metadata.uid.as_deref().unwrap_or_default(),
                &id,
            )
        })
}
