//! The cluster's part of prepared deletion, decided purely: which member drains next (Auto
//! scale-down picks its highest extra slot), the step of the recorded transaction, the
//! conditions that report it, and `StorageRolloutReady`, which admission reads before it lets
//! any storage identity go.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use shared_types::conditions::{cluster as cc, reason};
use shared_types::drain::{self as contract, Phase};
use shared_types::garage_cluster::common::{StorageDrainStatus, UnverifiedPeersPolicy};
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::{ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_DRAIN};

use super::members::MemberView;
use super::observed::{GarageRead, Observed};
use crate::conditions::Desired;
use crate::desired::{Settings, nodes};
use crate::machine::drain::{self, Candidate, LostFacts, Step};
use garage_api_types::NodeId;

/// What the cluster does about removals this pass.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Removal {
    /// The drain transaction's step.
    pub step: Option<Step>,
    /// Generated GarageNodes to ask to drain (annotation), Auto scale-down.
    pub annotate: Vec<String>,
    /// Generated GarageNodes whose drain is proven: delete them.
    pub delete: Vec<String>,
    /// Names of members that are draining or drained: kept out of layout planning.
    pub excluded: Vec<String>,
    /// Gateway pods to take out of the gateway Service (their tier label removed) or put back.
    pub serving: super::gateways::Serving,
    /// Conditions to publish.
    pub conditions: Vec<Desired>,
}

/// True when `node` asks to be drained.
pub fn drain_requested(node: &GarageNode) -> bool {
    node.annotations().get(ANNOTATION_DRAIN).map(String::as_str) == Some("true")
}

/// The removal decision. `views` are the members (generated below `replicas` and
/// user-written); `extra` are generated slots at or above `replicas`, highest first.
pub fn decide(
    o: &Observed,
    s: &Settings,
    views: &[MemberView],
    extra: &[&GarageNode],
    read: Option<&GarageRead>,
    quiet: std::time::Duration,
    transaction_id: &str,
) -> Removal {
    let mut r = Removal::default();
    let record = o
        .cluster
        .status
        .as_ref()
        .and_then(|st| st.storage_drain.as_ref());
    let all_nodes: Vec<&GarageNode> = o
        .generated
        .values()
        .chain(o.user_nodes.iter())
        .chain(o.pool_members.iter())
        .chain(o.retiring.iter())
        .chain(o.gateways.values())
        .collect();

    // Auto scale-down: one extra slot at a time asks to drain; a proven one is deleted. A
    // suspended slot is not asked: the scale-down waits for its suspension to be lifted. Nor
    // is a slot in a cycle: the cycle drains it itself and promotes its sibling first.
    if let Some(highest) = extra.first()
        && !extra.iter().any(|n| drain_requested(n))
        && record.is_none()
        && !suspended(highest)
        && !super::cycle::in_cycle(highest)
    {
        r.annotate.push(highest.name_any());
    }
    let Requested {
        candidates,
        excluded,
        colliding,
    } = requested(extra, &all_nodes, &o.pods, read);
    // Gateways go first: their retirement takes one layout version, not a proof.
    let gateways = super::gateways::candidates(&all_nodes, &o.pods, read, views, record);
    // The gateways this pass asks to dial their peers (`garage_facts`): running an identity
    // the operator has not proven.
    let unproven: Vec<String> = views
        .iter()
        .filter(|v| super::gateways::unproven(v))
        .map(|v| v.member.name.clone())
        .collect();
    r.serving = super::gateways::serving(&all_nodes, &o.pods, read, (&gateways, &unproven), record);
    let candidates: Vec<Candidate> = gateways.iter().cloned().chain(candidates).collect();
    r.excluded = excluded;
    if let Some(actor) = record
        .and_then(|rec| rec.actor.as_ref())
        .and_then(|a| a.name.clone())
        && !r.excluded.contains(&actor)
    {
        r.excluded.push(actor);
    }

    let actor_requests = actor_requests(record, &all_nodes, &gateways);
    let Some(read) = read else {
        // Garage cannot be read: nothing is removed, proven or cleared; a recorded
        // transaction resumes from its record once Garage answers again.
        let unreadable = match &o.garage {
            super::observed::GarageView::Unavailable(why) => why.clone(),
            super::observed::GarageView::Read(_) => String::new(),
        };
        let step = (contract::phase(record) == Phase::Active || !candidates.is_empty()).then(|| {
            Step::Wait {
                reason: reason::REASON_GARAGE_API_ERROR,
                message: format!(
                    "the Garage Admin API cannot be read ({unreadable}); nothing is removed and the drain resumes from status.storageDrain once it answers"
                ),
            }
        });
        r.conditions.push(drain_condition(record, step.as_ref()));
        return r;
    };
    let unverified = unverified_peers(o, views);
    let assume_consistent = views.iter().any(|v| v.external) && unverified.is_none();
    let up: Vec<NodeId> = read
        .status
        .nodes
        .iter()
        .filter(|n| n.is_up)
        .map(|n| n.id.clone())
        .collect();
    let step = drain::step(&drain::Observed {
        record,
        candidates: &candidates,
        actor_requests,
        layout: &read.layout,
        history: &read.history,
        health: read.health.as_ref(),
        up: &up,
        consistent: s.consistency_mode == "consistent",
        replication_factor: s.replication_factor,
        unverified_peers: unverified,
        requires_empty_queue: assume_consistent,
        proof: o.proof.as_ref(),
        now: o.now,
        quiet,
        rpc_timeout: s.rpc_timeout,
        new_transaction_id: transaction_id,
    });
    r.delete = proven_extra(record, extra);
    let step = idle_refusals(step, o, &colliding);
    r.conditions.push(drain_condition(record, Some(&step)));
    r.conditions
        .extend(scale_down_blocked(s, extra, &step, record));
    r.step = Some(step);
    r
}

/// Whether the recorded transaction's actor still asks for it: a storage node asking to drain,
/// a gateway leaving with the identity the record retires, or a gateway whose swap is active.
fn actor_requests(
    record: Option<&StorageDrainStatus>,
    all_nodes: &[&GarageNode],
    gateways: &[Candidate],
) -> bool {
    record.is_some_and(|rec| {
        all_nodes.iter().any(|n| {
            contract::actor_is_node(
                rec,
                &n.namespace().unwrap_or_default(),
                &n.name_any(),
                n.metadata.uid.as_deref().unwrap_or_default(),
            ) && (drain_requested(n) && !nodes::is_gateway(n)
                // A gateway that took another identity since asks for a new transaction.
                || gateway_leaving(n) && targets_recorded_id(rec, n)
                // A swap asks until it is complete; then the record goes.
                || contract::phase(record) == Phase::Active
                    && gateways.iter().any(|c| c.name == n.name_any() && c.swap.is_some()))
        })
    })
}

/// The drain-requested members, in the order they drain.
struct Requested {
    /// Those that may drain: Managed and pool members not being deleted.
    candidates: Vec<Candidate>,
    /// Every drain-requested member: kept out of layout planning.
    excluded: Vec<String>,
    /// Drain-requested members that share their node ID with another GarageNode.
    colliding: Vec<String>,
}

/// Drain-requested members, extra slots first (highest ordinal first), then the others by
/// name.
fn requested(
    extra: &[&GarageNode],
    all_nodes: &[&GarageNode],
    pods: &[Pod],
    read: Option<&GarageRead>,
) -> Requested {
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut excluded: Vec<String> = Vec::new();
    let mut requested: Vec<&GarageNode> = extra
        .iter()
        .copied()
        .filter(|n| drain_requested(n))
        .collect();
    let mut rest: Vec<&GarageNode> = all_nodes
        .iter()
        .copied()
        .filter(|n| drain_requested(n) && !extra.iter().any(|e| e.name_any() == n.name_any()))
        .collect();
    rest.sort_by_key(|n| n.name_any());
    requested.extend(rest);
    // Two GarageNodes that report one node ID are one Garage identity: draining either would
    // remove the role the other still serves, so neither is drained.
    let shared_id = |n: &GarageNode| {
        let id = n.status.as_ref().and_then(|s| s.node_id.as_deref());
        id.is_some_and(|id| {
            all_nodes.iter().any(|other| {
                other.metadata.uid != n.metadata.uid
                    && other.status.as_ref().and_then(|s| s.node_id.as_deref()) == Some(id)
            })
        })
    };
    let mut colliding: Vec<String> = Vec::new();
    for n in &requested {
        excluded.push(n.name_any());
        if shared_id(n) {
            colliding.push(n.name_any());
            continue;
        }
        // A gateway has no storage to drain (admission refuses the annotation on one): it
        // leaves by deletion, through its own role-only transaction.
        if nodes::is_gateway(n) {
            continue;
        }
        if nodes::shape(n).is_ok_and(|sh| {
            matches!(
                sh,
                nodes::NodeShape::Managed | nodes::NodeShape::Pool { .. }
            )
        }) && n.metadata.deletion_timestamp.is_none()
        {
            candidates.push(candidate(n, pods, read));
        }
    }
    Requested {
        candidates,
        excluded,
        colliding,
    }
}

/// Extra slots whose drain the record proves complete: they are deleted.
fn proven_extra(record: Option<&StorageDrainStatus>, extra: &[&GarageNode]) -> Vec<String> {
    let mut delete = Vec::new();
    if contract::phase(record) == Phase::Completed
        && let Some(rec) = record
    {
        for n in extra {
            if contract::actor_is_node(
                rec,
                &n.namespace().unwrap_or_default(),
                &n.name_any(),
                n.metadata.uid.as_deref().unwrap_or_default(),
            ) && n.metadata.deletion_timestamp.is_none()
                // A cycle's source is deleted by the cycle, once its sibling is promoted: a
                // deletion before that would take the sibling, which it controls, with it.
                && !super::cycle::in_cycle(n)
            {
                delete.push(n.name_any());
            }
        }
    }
    delete
}

/// An idle drain that was asked for something it does not do says so.
fn idle_refusals(step: Step, o: &Observed, colliding: &[String]) -> Step {
    // `drain=true` on the GarageCluster asks for whole-site retirement, which exists only
    // for a federated site; say so rather than let the request look accepted.
    let step = if step == Step::Idle
        && o.cluster
            .annotations()
            .get(ANNOTATION_DRAIN)
            .map(String::as_str)
            == Some("true")
    {
        Step::Wait {
            reason: reason::REASON_UNSUPPORTED,
            message: format!(
                "{ANNOTATION_DRAIN}=true on a GarageCluster retires a whole site of a federated Garage cluster; this version does not run federation, so nothing is retired. Drain storage GarageNodes one at a time instead"
            ),
        }
    } else {
        step
    };
    if step == Step::Idle && !colliding.is_empty() {
        Step::Wait {
            reason: reason::REASON_IDENTITY_COLLISION,
            message: format!(
                "{} report a Garage node ID another GarageNode also reports; draining either would remove the role the other serves, so nothing is drained. Stop the duplicate process and give it its own metadata directory first",
                colliding.join(", ")
            ),
        }
    } else {
        step
    }
}

fn suspended(node: &GarageNode) -> bool {
    crate::suspension::of_node(node, None).is_some()
}

/// `StorageScaleDownBlocked` while the extra slots of a scale-down wait to drain.
fn scale_down_blocked(
    s: &Settings,
    extra: &[&GarageNode],
    step: &Step,
    record: Option<&StorageDrainStatus>,
) -> Option<Desired> {
    if let Some(cycling) = extra.first().filter(|n| super::cycle::in_cycle(n))
        && record.is_none()
        && !extra.iter().any(|n| drain_requested(n))
    {
        return Some(Desired {
            type_: cc::CONDITION_STORAGE_SCALE_DOWN_BLOCKED,
            status: true,
            reason: reason::REASON_CYCLE_BLOCKED,
            message: format!(
                "spec.storage.replicas is {} and {} is the next member to drain, but it is being cycled; the scale-down goes on once its cycle has finished. Nothing was removed",
                s.replicas,
                cycling.name_any()
            ),
        });
    }
    if let Some(held) = extra.first().filter(|n| suspended(n))
        && record.is_none()
        && !extra.iter().any(|n| drain_requested(n))
    {
        return Some(Desired {
            type_: cc::CONDITION_STORAGE_SCALE_DOWN_BLOCKED,
            status: true,
            reason: reason::REASON_MAINTENANCE_SUSPENDED,
            message: format!(
                "spec.storage.replicas is {} and {} is the next member to drain, but it is suspended; it is asked to drain once its suspension is lifted. Nothing was removed",
                s.replicas,
                held.name_any()
            ),
        });
    }
    if !extra.is_empty()
        && let Step::Wait {
            reason: rs,
            message,
        } = step
        && record.is_none()
    {
        return Some(Desired {
            type_: cc::CONDITION_STORAGE_SCALE_DOWN_BLOCKED,
            status: true,
            reason: rs,
            message: format!(
                "spec.storage.replicas is {} and {} waits to be drained: {message}. Nothing was removed",
                s.replicas,
                extra
                    .iter()
                    .map(|n| n.name_any())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    None
}

pub(super) fn candidate(n: &GarageNode, pods: &[Pod], read: Option<&GarageRead>) -> Candidate {
    let status = n.status.clone().unwrap_or_default();
    let pod = super::members::pod_of(n, pods);
    let proven =
        pod.is_some_and(|p| p.metadata.uid.is_some() && p.metadata.uid == status.observed_pod_uid);
    let recorded_id: Option<NodeId> = status.node_id.as_deref().and_then(|id| id.parse().ok());
    // Another identity Garage sees at this pod's address: what a wiped metadata volume runs.
    let pod_ip = pod.and_then(crate::pods::running_ip);
    let replacement = read
        .zip(pod_ip)
        .and_then(|(read, ip)| seen_at(read, &ip, recorded_id.as_ref(), false));
    let lost = LostFacts {
        acknowledged: n
            .annotations()
            .get(ANNOTATION_ACKNOWLEDGE_LOST_SOURCE)
            .map(|v| {
                v.to_ascii_lowercase()
                    .parse::<NodeId>()
                    .map_err(|_| v.clone())
            }),
        recorded_id,
        pod: pod.map(ResourceExt::name_any),
        replacement,
    };
    Candidate {
        lost,
        namespace: n.namespace().unwrap_or_default(),
        name: n.name_any(),
        uid: n.metadata.uid.clone().unwrap_or_default(),
        node_id: status
            .node_id
            .as_deref()
            .filter(|_| proven)
            .and_then(|id| id.parse().ok()),
        pod_uid: status.observed_pod_uid.filter(|_| proven),
        gateway: nodes::is_gateway(n),
        swap: None,
        serving: pod.is_some_and(|p| {
            p.metadata.deletion_timestamp.is_none()
                && p.labels()
                    .get(shared_types::keys::label::LABEL_TIER)
                    .map(String::as_str)
                    == Some(shared_types::keys::label::value::TIER_GATEWAY)
        }),
    }
}

/// The first identity other than `other_than` that Garage lists at address `ip` (up only, when
/// `up`): what a pod runs after its metadata was lost.
pub(super) fn seen_at(
    read: &GarageRead,
    ip: &str,
    other_than: Option<&NodeId>,
    up: bool,
) -> Option<NodeId> {
    read.status
        .nodes
        .iter()
        .find(|node| {
            (node.is_up || !up)
                && Some(&node.id) != other_than
                && node
                    .addr
                    .as_deref()
                    .and_then(|a| a.rsplit_once(':'))
                    .is_some_and(|(host, _)| host.trim_matches(['[', ']']) == ip)
        })
        .map(|node| node.id.clone())
}

/// True when `record` retires the identity `n` records.
fn targets_recorded_id(record: &StorageDrainStatus, n: &GarageNode) -> bool {
    let id = n.status.as_ref().and_then(|s| s.node_id.as_deref());
    id.is_some_and(|id| {
        record
            .role_removal_node_ids
            .iter()
            .flatten()
            .any(|t| t == id)
    })
}

/// True when `n` is a gateway GarageNode being deleted whose finalizer waits for its role to
/// leave the layout: it has a recorded identity that may hold a role.
pub fn gateway_leaving(n: &GarageNode) -> bool {
    nodes::is_gateway(n)
        && n.metadata.deletion_timestamp.is_some()
        && crate::finalizers::has(n, shared_types::keys::finalizer::FINALIZER_NODE)
        && n.status.as_ref().is_some_and(|s| s.node_id.is_some())
}

/// Why Garage processes exist that the operator cannot verify, when the policy blocks on it.
fn unverified_peers(o: &Observed, views: &[MemberView]) -> Option<String> {
    let c = o.cluster.as_ref();
    let policy = c
        .spec
        .layout_management
        .as_ref()
        .and_then(|l| l.drain.as_ref())
        .and_then(|d| d.unverified_peers_policy)
        .unwrap_or(UnverifiedPeersPolicy::Block);
    if policy == UnverifiedPeersPolicy::AssumeConsistent {
        return None;
    }
    let external: Vec<&str> = views
        .iter()
        .filter(|v| v.external)
        .map(|v| v.member.name.as_str())
        .collect();
    if external.is_empty() {
        return None;
    }
    Some(format!(
        "external GarageNodes {} run Garage processes this operator cannot verify; set spec.layoutManagement.drain.unverifiedPeersPolicy: AssumeConsistent to drain anyway",
        external.join(", ")
    ))
}

/// `StorageDrainReady`: Idle, Completed, or what the transaction waits for.
pub(super) fn drain_condition(record: Option<&StorageDrainStatus>, step: Option<&Step>) -> Desired {
    let (status, rs, message) = match (contract::phase(record), step) {
        (Phase::Completed, _) => (true, reason::REASON_COMPLETED, String::new()),
        (
            Phase::Idle,
            Some(Step::Wait {
                reason: rs,
                message,
            }),
        ) => (false, *rs, message.clone()),
        (Phase::Idle, _) => (true, reason::REASON_STORAGE_DRAIN_IDLE, String::new()),
        (
            Phase::Active,
            Some(Step::Wait {
                reason: rs,
                message,
            }),
        ) => (false, *rs, message.clone()),
        (Phase::Active, _) => (false, reason::REASON_DRAINING, String::new()),
    };
    Desired {
        type_: cc::CONDITION_STORAGE_DRAIN_READY,
        status,
        reason: rs,
        message,
    }
}
