//! The GarageNode decision: a pure function of [`Observed`]. It chooses the workload to
//! ensure (StatefulSet and RPC Service), the identity to record, the finalizer and, for a
//! deleting node, whether its workload may stop.

use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use shared_types::common::ClusterPhase;
use shared_types::conditions::{common, node as node_conditions, reason};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNodeStatus;
use shared_types::keys::annotation::{
    ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_DRAIN,
    ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID,
};
use shared_types::keys::finalizer::FINALIZER_NODE;

use super::observed::Observed;
use crate::conditions::Desired;
use crate::config::Config;
use crate::desired::statefulset::{NodeInputs, statefulset};
use crate::desired::{DesiredError, data_dirs, nodes, secrets, services};
use crate::finalizers;
use crate::names;
use crate::note::Note;
use garage_api_types::NodeId;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use shared_types::drain;

/// Condition types the node controller owns.
pub const OWNED: &[&str] = &[
    common::CONDITION_READY,
    node_conditions::CONDITION_NODE_DISCOVERED,
    node_conditions::CONDITION_DRAIN_PREPARED,
    node_conditions::CONDITION_VOLUME_ATTRIBUTES_CLASS_APPLIED,
    node_conditions::CONDITION_STORAGE_EXPANSION_IN_PROGRESS,
    node_conditions::CONDITION_STORAGE_EXPANSION_BLOCKED,
    node_conditions::CONDITION_SUSPENDED,
];

/// Condition types a suspended pass changes: every other condition keeps what the last
/// pass before the suspension said.
pub const OWNED_WHILE_SUSPENDED: &[&str] = &[node_conditions::CONDITION_SUSPENDED];

/// Everything one pass does.
#[derive(Debug, Clone, Default)]
pub struct Decision {
    /// `Some(true)`: add the finalizer (and do nothing else this pass); `Some(false)`: remove.
    pub finalizer: Option<bool>,
    /// The RPC Service to ensure.
    pub service: Option<Service>,
    /// The StatefulSet to ensure.
    pub statefulset: Option<StatefulSet>,
    /// Delete the StatefulSet and the RPC Service (teardown of a deleting node).
    pub delete_workload: bool,
    /// `(claim, class)`: VolumeAttributesClass patches of bound claims.
    pub claim_classes: Vec<(String, String)>,
    /// `(claim, request)`: bound claims to grow.
    pub claim_sizes: Vec<(String, Quantity)>,
    /// Reservations, identity records and releases of the node's claims.
    pub claim_patches: Vec<super::claims::ClaimPatch>,
    /// A leaving pool member: remove these label and annotation keys (its pool's activation
    /// and identity record) from this Kubernetes Node, which stops its pool pod.
    pub unbind: Option<(String, Vec<String>)>,
    /// Status to publish (conditions merged by act); `None` leaves status alone.
    pub status: Option<GarageNodeStatus>,
    /// Conditions this controller owns.
    pub conditions: Vec<Desired>,
    /// Events.
    pub notes: Vec<Note>,
    /// When to look again; `None` waits for a change.
    pub requeue: Option<Duration>,
    /// The node is suspended: only [`OWNED_WHILE_SUSPENDED`] conditions change.
    pub suspended: bool,
}

/// The decision for `o`: the node's preconditions, then its workload, its identity, its drain
/// and its claims, each a sub-decision below.
pub fn decide(o: &Observed, t: &Config) -> Result<Decision, DesiredError> {
    if o.node.metadata.deletion_timestamp.is_some() {
        return Ok(super::finalize::finalize(o, t));
    }
    let node = o.node.as_ref();
    if let Some(cause) = crate::suspension::of_node(node, o.parent.as_ref()) {
        return Ok(suspended(o, &cause, t));
    }
    let mut status = node.status.clone().unwrap_or_default();
    let settings = o.settings.as_ref().and_then(|s| s.as_ref().ok());
    status.zone = Some(crate::zone::resolve(node, settings, &o.zone_host));
    let a = match admitted(o, &mut status, t) {
        Ok(a) => a,
        Err(d) => return Ok(*d),
    };
    if !finalizers::has(node, FINALIZER_NODE) {
        return Ok(Decision {
            finalizer: Some(true),
            ..Decision::default()
        });
    }
    let mut d = Decision {
        requeue: Some(t.resync),
        ..Decision::default()
    };
    if let nodes::NodeShape::External { node_id, address } = &a.shape {
        external(&mut d, status, node_id, address);
        return Ok(d);
    }
    volumes(&mut d, o, t);
    let pool_member = matches!(a.shape, nodes::NodeShape::Pool { .. });
    let fenced = fenced(o);
    let capped = !pool_member && o.statefulset.is_none() && rollout_capped(o, a.cluster);
    workload(&mut d, o, &a, fenced, capped, t)?;
    let pod_name = o
        .pod
        .as_ref()
        .map(ResourceExt::name_any)
        .unwrap_or_else(|| names::node_pod(&node.name_any()));
    if fenced {
        fence(&mut d, &mut status, o, &a, &pod_name);
    } else if !capped {
        identity(&mut d, &mut status, o, &a, &pod_name, t);
    }
    if let Some(prepared) = drain_prepared(o) {
        if !prepared.status {
            d.requeue = Some(t.short_requeue);
        }
        d.conditions.push(prepared);
    }
    keep_claims(&mut d, o, &status, t);
    d.status = Some(status);
    Ok(d)
}

/// The decision of a suspended node: no workload, claim, Node or identity write, status as
/// it was but for the `Suspended` condition, and a look again at the resync interval (the
/// lifting of the node's own switch is a change that triggers a pass by itself).
fn suspended(o: &Observed, cause: &crate::suspension::Cause, t: &Config) -> Decision {
    Decision {
        status: Some(o.node.status.clone().unwrap_or_default()),
        conditions: vec![cause.condition()],
        requeue: Some(t.resync),
        suspended: true,
        ..Decision::default()
    }
}

/// What a node that passed its preconditions runs under.
struct Admitted<'a> {
    /// Its parent.
    cluster: &'a GarageCluster,
    /// The parent's settings.
    settings: &'a crate::desired::Settings,
    /// Its shape.
    shape: nodes::NodeShape,
}

/// The node's preconditions: a parent whose settings can be read, a shape this version runs,
/// data directories its pod can mount. Otherwise the decision that only reports why (a running
/// workload is left as it is).
fn admitted<'a>(
    o: &'a Observed,
    status: &mut GarageNodeStatus,
    t: &Config,
) -> Result<Admitted<'a>, Box<Decision>> {
    let node = o.node.as_ref();
    let parent_name = &node.spec.cluster_ref.name;
    let stop_with = |status: &mut GarageNodeStatus, phase, reason, message| {
        status.phase = Some(phase);
        Box::new(idle(status.clone(), reason, message, t.resync))
    };
    let (Some(cluster), Some(settings)) = (&o.parent, &o.settings) else {
        return Err(stop_with(
            status,
            ClusterPhase::Pending,
            reason::REASON_WAITING_FOR_DEPENDENCY,
            format!(
                "GarageCluster {parent_name} does not exist in this namespace; the node waits for it"
            ),
        ));
    };
    let shape = match nodes::shape(node) {
        Ok(shape) => shape,
        Err(e) => {
            let (why, phase, _) = e.reported_as();
            return Err(stop_with(status, phase, why, e.to_string()));
        }
    };
    if let Some(e) = crate::zone::refusal(&o.zone_host) {
        let (why, phase, _) = e.reported_as();
        return Err(stop_with(status, phase, why, e.to_string()));
    }
    let settings = match settings {
        Ok(s) => s,
        // The cluster reports why.
        Err(e) => {
            return Err(Box::new(idle(
                status.clone(),
                reason::REASON_WAITING_FOR_DEPENDENCY,
                format!("GarageCluster {parent_name} cannot be reconciled: {e}"),
                t.resync,
            )));
        }
    };
    // Its pod would mount the cluster's garage.toml: data directories that file does not
    // list would lose their blocks with the pod.
    if shape == nodes::NodeShape::Managed
        && let Err(e) = data_dirs::check_node(node, settings)
    {
        return Err(stop_with(
            status,
            ClusterPhase::Pending,
            reason::REASON_UNSUPPORTED,
            e.to_string(),
        ));
    }
    Ok(Admitted {
        cluster,
        settings,
        shape,
    })
}

/// An external node: its declared identity, no workload.
fn external(d: &mut Decision, mut status: GarageNodeStatus, node_id: &NodeId, address: &str) {
    status.node_id = Some(node_id.to_string());
    status.address = Some(address.to_owned());
    status.phase = Some(ClusterPhase::Ready);
    d.conditions.push(Desired {
        type_: common::CONDITION_READY,
        status: true,
        reason: reason::REASON_RECONCILE_SUCCESS,
        message: format!(
            "external Garage node {} at {address}; no workload is run for it",
            node_id.short()
        ),
    });
    d.status = Some(status);
}

/// The classes and sizes of the node's claims; looked at again soon while either moves.
fn volumes(d: &mut Decision, o: &Observed, t: &Config) {
    let volumes = super::volumes::plan(&o.claims);
    d.claim_classes = volumes.patches;
    if let Some(c) = volumes.condition {
        if c.reason == reason::REASON_MODIFY_IN_PROGRESS
            || c.reason == reason::REASON_WAITING_FOR_BIND
        {
            d.requeue = Some(t.short_requeue);
        }
        d.conditions.push(c);
    }
    grow_claims(d, o, t);
}

/// True when the parent's rollout already remembers as many replaced workloads of this node as
/// it can: creating one more would retire one more incarnation.
fn rollout_capped(o: &Observed, cluster: &GarageCluster) -> bool {
    cluster
        .status
        .as_ref()
        .and_then(|st| st.storage_rollout.as_ref())
        .is_some_and(|r| {
            r.garage_node_uid == o.node.metadata.uid && crate::machine::rollout::retired_full(r)
        })
}

/// The RPC Service and the StatefulSet to ensure. A template never mounts a config revision
/// that is not published yet; a pool member's pod belongs to its pool's DaemonSet, which the
/// cluster keeps.
fn workload(
    d: &mut Decision,
    o: &Observed,
    a: &Admitted<'_>,
    fenced: bool,
    capped: bool,
    t: &Config,
) -> Result<(), DesiredError> {
    let node = o.node.as_ref();
    if matches!(a.shape, nodes::NodeShape::Pool { .. }) {
        return Ok(());
    }
    d.service = Some(services::node_rpc(node, a.settings)?);
    if capped {
        // Creating the workload again would retire one more incarnation than the rollout
        // remembers: fail closed before it exists. A fenced node runs nothing either way, and
        // its Ready says why: a node has one Ready condition.
        if !fenced {
            d.conditions.push(Desired {
                type_: common::CONDITION_READY,
                status: false,
                reason: reason::REASON_RETIRED_WORKLOAD_LIMIT,
                message: format!(
                    "the StatefulSet was replaced {} times during the storage rollout; it is not created again until someone inspects it and clears the GarageCluster's status.storageRollout",
                    crate::machine::rollout::MAX_RETIRED_WORKLOADS
                ),
            });
        }
    } else if o.config_published && crate::desired::credentials::pinned(a.cluster, a.settings) {
        let revision = crate::desired::node_config::revision_for(a.cluster, a.settings, node)?;
        d.statefulset = Some(statefulset(NodeInputs {
            cluster: a.cluster,
            settings: a.settings,
            node,
            config: &revision,
            rpc_secret: &secrets::rpc_secret_source(a.cluster, a.settings),
            admin_token: &secrets::admin_token_source(a.cluster, a.settings),
            fenced,
        })?);
    } else {
        d.requeue = Some(t.short_requeue);
    }
    Ok(())
}

/// Acknowledged lost and recorded: nothing may run this identity again. A pool member's Node
/// loses the activation that would let the pool run it there.
fn fence(
    d: &mut Decision,
    status: &mut GarageNodeStatus,
    o: &Observed,
    a: &Admitted<'_>,
    pod_name: &str,
) {
    if let nodes::NodeShape::Pool { pool, node: host } = &a.shape {
        let key = crate::desired::pool::activation_key(a.settings, pool);
        if o.host
            .as_ref()
            .is_some_and(|n| n.labels().contains_key(&key))
        {
            d.unbind = Some((host.clone(), vec![key]));
        }
    }
    status.observed_pod_uid = None;
    status.phase = Some(ClusterPhase::Deleting);
    d.conditions.push(Desired {
        type_: common::CONDITION_READY,
        status: false,
        reason: reason::REASON_DRAINING,
        message: format!(
            "source acknowledged lost: the workload is fenced (scaled to zero) and pod {pod_name} must stay gone while the destination-only proof runs"
        ),
    });
}

/// The identity the node's pod reports, checked against every identity the node already has:
/// the recorded one is never overwritten, not even by a pin added after it was recorded (a pool
/// member's recovery annotation may be added later), and a pin names the only identity the node
/// may run.
fn identity(
    d: &mut Decision,
    status: &mut GarageNodeStatus,
    o: &Observed,
    a: &Admitted<'_>,
    pod_name: &str,
    t: &Config,
) {
    let node = o.node.as_ref();
    let Some(found) = &o.discovered else {
        d.requeue = Some(t.short_requeue);
        status.phase = Some(ClusterPhase::Pending);
        d.conditions.push(Desired {
            type_: common::CONDITION_READY,
            status: false,
            reason: reason::REASON_WAITING_FOR_DEPENDENCY,
            message: format!("waiting for pod {pod_name} to run and answer on its Admin API"),
        });
        return;
    };
    let recorded = status
        .node_id
        .as_deref()
        .and_then(|v| v.parse::<NodeId>().ok());
    // A pool member created from its Node's identity record must run exactly that identity.
    let pool_member = matches!(a.shape, nodes::NodeShape::Pool { .. });
    let pinned = node
        .spec
        .node_id
        .as_deref()
        .or_else(|| {
            node.annotations()
                .get(ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID)
                .map(String::as_str)
                .filter(|_| pool_member)
        })
        .map(str::to_ascii_lowercase)
        .and_then(|v| v.parse::<NodeId>().ok());
    // A gateway's old identity that the parent is swapping out for this one is not a
    // mismatch: the new one is recorded, which is what completes the swap.
    let swapped = pinned.is_none() && recorded.as_ref().is_some_and(|r| swapping(o, r));
    let mismatch = recorded
        .iter()
        .filter(|_| !swapped)
        .chain(pinned.iter())
        .find(|e| **e != found.id);
    if let Some(expected) = mismatch
        && nodes::is_gateway(node)
    {
        d.conditions.push(Desired {
            type_: common::CONDITION_READY,
            status: false,
            reason: reason::REASON_IDENTITY_CHANGED,
            message: format!(
                "pod {pod_name} reports Garage node {} but this gateway was {expected}; the parent GarageCluster hands the gateway role to the new identity in one layout version",
                found.id.short(),
            ),
        });
        status.observed_pod_uid = None;
        status.phase = Some(ClusterPhase::Pending);
        d.requeue = Some(t.short_requeue);
        return;
    }
    if let Some(expected) = mismatch {
        d.conditions.push(Desired {
            type_: common::CONDITION_READY,
            status: false,
            reason: reason::REASON_IDENTITY_CHANGED,
            message: format!(
                "pod {pod_name} reports Garage node {} but this node is {expected}; the new identity is left unassigned and no layout change is made. Restore the original metadata volume, or recover the old identity as lost: annotate this GarageNode {ANNOTATION_DRAIN}=true and {ANNOTATION_ACKNOWLEDGE_LOST_SOURCE}={expected}",
                found.id.short(),
            ),
        });
        // Evidence that the expected identity runs is gone.
        status.observed_pod_uid = None;
        status.phase = Some(ClusterPhase::Failed);
        return;
    }
    status.node_id = Some(found.id.to_string());
    status.observed_pod_uid = Some(found.pod_uid.clone());
    status.address = Some(format!("{}:{}", found.ip, a.settings.rpc_port));
    status.phase = Some(ClusterPhase::Ready);
    d.conditions.push(Desired {
        type_: node_conditions::CONDITION_NODE_DISCOVERED,
        status: true,
        reason: reason::REASON_RECONCILE_SUCCESS,
        message: format!("Garage node {} runs in pod {pod_name}", found.id.short()),
    });
    d.conditions.push(Desired {
        type_: common::CONDITION_READY,
        status: true,
        reason: reason::REASON_RECONCILE_SUCCESS,
        message: String::new(),
    });
}

/// True when the parent's role-only transaction names this gateway incarnation and is
/// retiring its identity `recorded`: the swap of a gateway that runs a new identity.
fn swapping(o: &Observed, recorded: &NodeId) -> bool {
    let node = o.node.as_ref();
    nodes::is_gateway(node)
        && node.metadata.deletion_timestamp.is_none()
        && o.parent
            .as_ref()
            .and_then(|c| c.status.as_ref())
            .and_then(|s| s.storage_drain.as_ref())
            .is_some_and(|r| {
                drain::role_only(r)
                    && drain::hash_consistent(r)
                    && drain::actor_is_node(
                        r,
                        &node.namespace().unwrap_or_default(),
                        &node.name_any(),
                        node.metadata.uid.as_deref().unwrap_or_default(),
                    )
                    && r.role_removal_node_ids
                        .iter()
                        .flatten()
                        .any(|id| *id == recorded.to_string())
            })
}

/// The node's claims: reserved, with the identity its current pod proved; a retired claim in
/// the way holds the workload (neither created nor updated) and becomes the node's Ready.
fn keep_claims(d: &mut Decision, o: &Observed, status: &GarageNodeStatus, t: &Config) {
    let proven = o
        .discovered
        .as_ref()
        .filter(|f| status.observed_pod_uid.as_deref() == Some(f.pod_uid.as_str()));
    let identity = proven.and(status.node_id.as_deref());
    let plan = super::claims::live(
        &claim_list(o),
        o.node.metadata.uid.as_deref().unwrap_or_default(),
        identity,
    );
    d.claim_patches = plan.patches;
    d.notes.extend(plan.notes);
    if let Some(hold) = plan.hold {
        d.statefulset = None;
        d.conditions.retain(|c| c.type_ != common::CONDITION_READY);
        d.conditions.push(hold);
        // A claim the user deletes is not watched: look again soon.
        d.requeue = Some(t.short_requeue.max(Duration::from_secs(5)));
    }
}

/// The node's claims as read, by name.
pub(super) fn claim_list(
    o: &Observed,
) -> Vec<(
    String,
    Option<k8s_openapi::api::core::v1::PersistentVolumeClaim>,
)> {
    o.claims
        .iter()
        .map(|c| (c.name.clone(), c.pvc.clone()))
        .collect()
}

/// True when the parent's drain record is complete for exactly this incarnation and names
/// its identity among the removed sources.
/// The claims to grow, and where their growth stands; looked at again soon while it moves.
fn grow_claims(d: &mut Decision, o: &Observed, t: &Config) {
    let expansion = super::expansion::plan(&o.expansions);
    if !expansion.conditions.is_empty() {
        d.requeue = Some(t.short_requeue);
    }
    d.claim_sizes = expansion.patches;
    d.conditions.extend(expansion.conditions);
    d.notes.extend(expansion.notes);
}

pub(super) fn drain_proven(o: &Observed) -> bool {
    let node = o.node.as_ref();
    let Some(record) = o
        .parent
        .as_ref()
        .and_then(|c| c.status.as_ref())
        .and_then(|s| s.storage_drain.as_ref())
    else {
        return false;
    };
    let id = node.status.as_ref().and_then(|s| s.node_id.clone());
    id.is_some_and(|id| {
        drain::removal_proven(
            record,
            &node.namespace().unwrap_or_default(),
            &node.name_any(),
            node.metadata.uid.as_deref().unwrap_or_default(),
            &id,
        )
    })
}

/// True when the parent's drain record names exactly this incarnation as an acknowledged
/// lost source: its workload must not run again.
fn fenced(o: &Observed) -> bool {
    let node = o.node.as_ref();
    let Some(id) = node.status.as_ref().and_then(|s| s.node_id.clone()) else {
        return false;
    };
    let acknowledged = node
        .annotations()
        .get(ANNOTATION_ACKNOWLEDGE_LOST_SOURCE)
        .is_some_and(|v| v.eq_ignore_ascii_case(&id));
    let Some(record) = o
        .parent
        .as_ref()
        .and_then(|c| c.status.as_ref())
        .and_then(|s| s.storage_drain.as_ref())
    else {
        return false;
    };
    acknowledged
        && drain::hash_consistent(record)
        && drain::actor_is_node(
            record,
            &node.namespace().unwrap_or_default(),
            &node.name_any(),
            node.metadata.uid.as_deref().unwrap_or_default(),
        )
        && record
            .unavailable_source_node_ids
            .iter()
            .flatten()
            .any(|r| *r == id)
}

/// `DrainPrepared` for a node that asks to be drained; `None` when it does not.
fn drain_prepared(o: &Observed) -> Option<Desired> {
    if !crate::cluster::removal::drain_requested(&o.node) {
        return None;
    }
    if drain_proven(o) {
        return Some(Desired {
            type_: node_conditions::CONDITION_DRAIN_PREPARED,
            status: true,
            reason: reason::REASON_NODE_DRAIN_PREPARED,
            message: "role absent and the removed-source/current-destination block proof is complete; deletion is now safe".into(),
        });
    }
    // The parent's StorageDrainReady says what the transaction waits for.
    let waiting = o
        .parent
        .as_ref()
        .and_then(|c| c.status.as_ref())
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| {
            c.iter().find(|c| {
                c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_DRAIN_READY
            })
        })
        .filter(|c| c.status == "False");
    let blocked = waiting.is_some_and(|c| {
        [
            reason::REASON_REPLICATION_UNSAFE,
            reason::REASON_UNVERIFIED_PEERS_BLOCKED,
            reason::REASON_UNSUPPORTED_CONSISTENCY_MODE,
            reason::REASON_NODE_DRAIN_BLOCKED,
        ]
        .contains(&c.reason.as_str())
    });
    Some(Desired {
        type_: node_conditions::CONDITION_DRAIN_PREPARED,
        status: false,
        reason: if blocked {
            reason::REASON_NODE_DRAIN_BLOCKED
        } else {
            reason::REASON_NODE_DRAIN_PREPARING
        },
        message: waiting
            .map(|c| format!("{}: {}", c.reason, c.message))
            .unwrap_or_else(|| {
                "waiting for the parent GarageCluster to record and run the drain".into()
            }),
    })
}

/// A node that only reports why nothing runs for it.
fn idle(
    status: GarageNodeStatus,
    reason: &'static str,
    message: String,
    requeue: Duration,
) -> Decision {
    Decision {
        status: Some(status),
        conditions: vec![Desired {
            type_: common::CONDITION_READY,
            status: false,
            reason,
            message,
        }],
        requeue: Some(requeue),
        ..Decision::default()
    }
}
