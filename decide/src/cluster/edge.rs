//! An edge gateway's own pass, without I/O: which storage cluster it joins, whether it may,
//! and what its status says. Its workload is rendered by [`crate::desired::edge`]; its
//! members' roles are written by the storage cluster's pass, the single writer of that layout.

use std::time::Duration;

use shared_types::common::ClusterPhase;
use shared_types::conditions::{cluster, common, reason};
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterStatus, NodeStatus};

use garage_api_types::{LayoutRole, NodeId, RoleChange};

use super::observed::Edge;
use crate::conditions::Desired;
use crate::desired::secrets::{self, SecretSource};
use crate::desired::{DesiredError, Settings, labels};

/// Conditions the edge pass owns.
pub const OWNED: &[&str] = &[
    common::CONDITION_READY,
    cluster::CONDITION_GATEWAY_CONNECTED,
    cluster::CONDITION_GATEWAY_LAYOUT_DEGRADED,
    shared_types::conditions::node::CONDITION_SUSPENDED,
];

/// Where the storage cluster an edge joins is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Joins {
    /// A storage GarageCluster of the edge's namespace (`connectTo.clusterRef`), whose own
    /// pass writes the edge's roles into its layout.
    Cluster(String),
    /// A Garage cluster outside this Kubernetes cluster, reached at its Admin API URL
    /// (`connectTo.adminApiEndpoint`) with the bearer `connectTo.adminTokenSecretRef` holds.
    /// No pass of this install writes that layout, so the edge's own pass writes its members'
    /// roles there ([`remote_change`]), and its pods run with the RPC secret it names.
    Remote {
        /// The Admin API URL, without a trailing `/`.
        url: String,
        /// The bearer's Secret.
        token: SecretSource,
        /// The RPC secret the edge names: `spec.network.rpcSecretRef`, else
        /// `spec.connectTo.rpcSecretRef`.
        rpc: SecretSource,
    },
}

/// Where the storage cluster the edge `c` is: a `clusterRef` wins; without one, an Admin API
/// URL with its bearer, and an RPC secret (nothing else can tell the edge's pods that cluster's
/// secret).
pub fn joins(c: &GarageCluster) -> Result<Joins, DesiredError> {
    let to = c.spec.connect_to.as_ref();
    if to.and_then(|t| t.cluster_ref.as_ref()).is_some() {
        return storage_cluster(c).map(Joins::Cluster);
    }
    if to
        .and_then(|t| t.admin_api_endpoint.as_deref())
        .is_none_or(|u| u.trim().is_empty())
    {
        return Err(DesiredError::Invalid {
            field: "spec.connectTo",
            message: "an edge gateway needs clusterRef (a storage GarageCluster of this namespace), or adminApiEndpoint with adminTokenSecretRef and rpcSecretRef (a Garage cluster outside this Kubernetes cluster)".into(),
        });
    }
    let super::handle::AdminSource::Endpoint { url, token } = super::handle::admin_source(c)?
    else {
        // Without a clusterRef the source is the URL or an error.
        return Err(DesiredError::Invalid {
            field: "spec.connectTo.adminApiEndpoint",
            message: "cannot be used".into(),
        });
    };
    let Some((_, rpc)) = named_rpc_secrets(c).into_iter().next() else {
        return Err(DesiredError::Invalid {
            field: "spec.connectTo.rpcSecretRef",
            message: "required for an edge gateway of a storage cluster outside this Kubernetes cluster: name the Secret holding that cluster's RPC secret".into(),
        });
    };
    Ok(Joins::Remote { url, token, rpc })
}

/// The storage cluster of this namespace the edge `c` joins: its `connectTo.clusterRef`.
pub fn storage_cluster(c: &GarageCluster) -> Result<String, DesiredError> {
    let to = c.spec.connect_to.as_ref();
    let Some(reference) = to.and_then(|t| t.cluster_ref.as_ref()) else {
        return Err(DesiredError::Invalid {
            field: "spec.connectTo.clusterRef",
            message: "absent: this edge joins a storage cluster outside this Kubernetes cluster, through spec.connectTo.adminApiEndpoint".into(),
        });
    };
    let own = c.metadata.namespace.as_deref().unwrap_or_default();
    if reference.kube_config_secret_ref.is_some()
        || reference
            .namespace
            .as_deref()
            .is_some_and(|n| !n.is_empty() && n != own)
    {
        return Err(DesiredError::Invalid {
            field: "spec.connectTo.clusterRef",
            message: "an edge gateway joins a storage cluster of its own namespace".into(),
        });
    }
    // With a sibling to follow, the operator reaches its layout through the sibling's pods;
    // an endpoint beside it would be a second, unproven way in.
    if let Some(t) = to {
        if t.admin_api_endpoint
            .as_deref()
            .is_some_and(|e| !e.is_empty())
        {
            return Err(DesiredError::Unsupported(
                "spec.connectTo.adminApiEndpoint beside spec.connectTo.clusterRef on an edge gateway (remove it: the storage cluster is reached through its own pods)",
            ));
        }
        if t.admin_token_secret_ref.is_some() {
            return Err(DesiredError::Unsupported(
                "spec.connectTo.adminTokenSecretRef beside spec.connectTo.clusterRef on an edge gateway (remove it: the storage cluster's own token is used)",
            ));
        }
    }
    if reference.name.is_empty() || Some(reference.name.as_str()) == c.metadata.name.as_deref() {
        return Err(DesiredError::Invalid {
            field: "spec.connectTo.clusterRef.name",
            message: "must name the storage GarageCluster of this namespace".into(),
        });
    }
    Ok(reference.name.clone())
}

/// Why the edge (settings `edge`) may not join the storage cluster (settings `storage`):
/// Garage refuses a node whose replication factor or consistency mode differs from its
/// layout's.
pub fn mismatch(edge: &Settings, storage: &Settings) -> Option<DesiredError> {
    if edge.replication_factor != storage.replication_factor {
        return Some(DesiredError::Invalid {
            field: "spec.replication.factor",
            message: format!(
                "must be the storage cluster's ({}): Garage refuses a node of another factor",
                storage.replication_factor
            ),
        });
    }
    (edge.consistency_mode != storage.consistency_mode).then(|| DesiredError::Invalid {
        field: "spec.replication.consistencyMode",
        message: format!(
            "must be the storage cluster's ({})",
            storage.consistency_mode
        ),
    })
}

/// The RPC secrets the edge names itself, each with the field that names it:
/// `spec.network.rpcSecretRef`, then `spec.connectTo.rpcSecretRef`. An edge runs with its
/// storage cluster's secret (Garage nodes with different secrets cannot talk); each of these
/// must hold that same secret.
pub fn named_rpc_secrets(c: &GarageCluster) -> Vec<(&'static str, SecretSource)> {
    let network = secrets::user_rpc_source(
        c.spec
            .network
            .as_ref()
            .and_then(|n| n.rpc_secret_ref.as_ref()),
    );
    let connect = secrets::user_rpc_source(
        c.spec
            .connect_to
            .as_ref()
            .and_then(|t| t.rpc_secret_ref.as_ref()),
    );
    [
        ("spec.network.rpcSecretRef", network),
        ("spec.connectTo.rpcSecretRef", connect),
    ]
    .into_iter()
    .filter_map(|(field, source)| Some((field, source?)))
    .collect()
}

/// Why the edge cannot run yet with the RPC secret `field` names (`source`, holding
/// `named`), given the storage cluster's `storage` secret: a reason and a message naming the
/// Secret but never a value; `None` when both hold the same secret.
pub fn rpc_disagreement(
    field: &str,
    source: &SecretSource,
    named: Option<&str>,
    storage: Option<&str>,
) -> Option<(&'static str, String)> {
    let which = format!("Secret {} (key {})", source.name, source.key);
    let Some(named) = named.filter(|v| !v.trim().is_empty()) else {
        return Some((
            reason::REASON_WAITING_FOR_DEPENDENCY,
            format!("waiting for {which}, named by {field}, to exist and hold the RPC secret"),
        ));
    };
    let Some(storage) = storage else {
        return Some((
            reason::REASON_WAITING_FOR_DEPENDENCY,
            "waiting for the storage cluster's RPC secret to be made".into(),
        ));
    };
    let fingerprint = secrets::rpc_fingerprint;
    match (fingerprint(named), fingerprint(storage)) {
        (Some(a), Some(b)) if a == b => None,
        (None, _) => Some((
            reason::REASON_VALIDATION_FAILED,
            format!("{field}: {which} does not hold an RPC secret (64 hexadecimal digits)"),
        )),
        _ => Some((
            reason::REASON_VALIDATION_FAILED,
            format!(
                "{field}: {which} holds another RPC secret than the storage cluster's, and Garage nodes with different RPC secrets cannot talk; name the storage cluster's Secret, or remove the field and the edge uses it"
            ),
        )),
    }
}

/// What the edge's status is made from.
pub struct Facts {
    /// Members asked for.
    pub wanted: u32,
    /// Members whose pod is Ready.
    pub ready: u32,
    /// Pods its StatefulSet keeps running ([`held_replicas`]): more than `wanted` while
    /// members scaled away wait for their roles to go.
    pub held: u32,
    /// Why the edge cannot run, or waits.
    pub blocked: Option<(&'static str, String)>,
    /// Each running member's pod and the identity it proved: what the storage cluster's pass
    /// gives a role.
    pub nodes: Vec<NodeStatus>,
    /// `GatewayConnected` ([`connection`]), when it can be judged.
    pub connected: Option<Desired>,
    /// `GatewayLayoutDegraded` ([`layout_degraded`]), when it can be judged.
    pub degraded: Option<Desired>,
}

/// `GatewayConnected`, from the storage cluster's view `seen` of the members `recorded`: True
/// when that cluster sees every one up, else False naming those it does not (`None` when no
/// member is recorded yet: nothing to judge). An unreadable view is said as such.
pub fn connection(
    recorded: &[NodeStatus],
    seen: Option<&garage_api_types::ClusterStatus>,
) -> Option<Desired> {
    let members: Vec<(&str, &str)> = recorded
        .iter()
        .filter_map(|n| Some((n.pod_name.as_deref()?, n.node_id.as_deref()?)))
        .collect();
    if members.is_empty() {
        return None;
    }
    let condition = |status, reason, message| Desired {
        type_: cluster::CONDITION_GATEWAY_CONNECTED,
        status,
        reason,
        message,
    };
    let Some(seen) = seen else {
        return Some(condition(
            false,
            reason::REASON_ADMIN_UNREACHABLE,
            "the storage cluster's Admin API did not answer this pass; its view of the gateways is unknown".into(),
        ));
    };
    let down: Vec<&str> = members
        .iter()
        .filter(|(_, id)| !seen.nodes.iter().any(|n| n.is_up && n.id.as_str() == *id))
        .map(|(pod, _)| *pod)
        .collect();
    Some(match down.len() {
        0 => condition(
            true,
            reason::REASON_GATEWAY_CONNECTED,
            format!(
                "the storage cluster sees every gateway ({}) connected",
                members.len()
            ),
        ),
        n if n == members.len() => condition(
            false,
            reason::REASON_NODES_OFFLINE,
            format!(
                "the storage cluster sees no gateway connected: {}",
                down.join(", ")
            ),
        ),
        _ => condition(
            false,
            reason::REASON_PARTIALLY_CONNECTED,
            format!(
                "the storage cluster does not see {} connected",
                down.join(", ")
            ),
        ),
    })
}

/// `GatewayLayoutDegraded`: True (`GatewayRoleMissing`) while a recorded member still asked
/// for has no role in the storage cluster's `layout`, naming them and, when changes are
/// staged there, why none is written (no role is written beside changes another writer
/// staged); False (`GatewayRolesPresent`) once each holds one. `None` without a layout read
/// (`GatewayConnected` says so) or with no member recorded.
pub fn layout_degraded(
    name: &str,
    wanted: u32,
    recorded: &[NodeStatus],
    layout: Option<&garage_api_types::ClusterLayout>,
) -> Option<Desired> {
    let layout = layout?;
    let members: Vec<(&str, &str)> = recorded
        .iter()
        .filter_map(|n| Some((n.pod_name.as_deref()?, n.node_id.as_deref()?)))
        .filter(|(pod, _)| ordinal(name, pod).is_some_and(|i| i < wanted))
        .collect();
    if members.is_empty() {
        return None;
    }
    let missing: Vec<&str> = members
        .iter()
        .filter(|(_, id)| !layout.roles.iter().any(|r| r.id.as_str() == *id))
        .map(|(pod, _)| *pod)
        .collect();
    let condition = |status, reason, message| Desired {
        type_: cluster::CONDITION_GATEWAY_LAYOUT_DEGRADED,
        status,
        reason,
        message,
    };
    if missing.is_empty() {
        return Some(condition(
            false,
            reason::REASON_GATEWAY_ROLES_PRESENT,
            format!("every gateway ({}) holds its layout role", members.len()),
        ));
    }
    let mut message = format!("no layout role yet for {}", missing.join(", "));
    if layout.has_staged_changes() {
        message.push_str(
            "; the storage cluster's layout has staged changes, and no role is written beside changes another writer staged: apply or revert them there",
        );
    }
    Some(condition(
        true,
        reason::REASON_GATEWAY_ROLE_MISSING,
        message,
    ))
}

/// The edge's status, its conditions and when to look again.
pub fn status(
    name: &str,
    f: &Facts,
    resync: Duration,
    short: Duration,
) -> (GarageClusterStatus, Vec<Desired>, Duration) {
    let wanted = i32::try_from(f.wanted).unwrap_or(i32::MAX);
    let ready_count = i32::try_from(f.ready).unwrap_or(i32::MAX);
    let mut counted = format!("{} of {} gateways Ready", f.ready, f.wanted);
    if f.held > f.wanted {
        counted.push_str(&format!(
            "; {} scaled away keep running until the storage cluster's layout no longer holds their roles and has settled",
            f.held - f.wanted
        ));
    }
    let (ready, why, message) = match &f.blocked {
        Some((why, message)) => (false, *why, message.clone()),
        None if f.ready >= f.wanted => (true, reason::REASON_RECONCILE_SUCCESS, counted),
        None => (false, reason::REASON_CLUSTER_NOT_READY, counted),
    };
    let selector = labels::selector_string(&labels::gateway_selector(name));
    let status = GarageClusterStatus {
        phase: Some(match (&f.blocked, ready) {
            (Some(_), _) => ClusterPhase::Pending,
            (None, true) => ClusterPhase::Running,
            (None, false) => ClusterPhase::Creating,
        }),
        replicas: Some(wanted),
        ready_replicas: Some(ready_count),
        gateway_replicas: Some(wanted),
        gateway_ready_replicas: Some(ready_count),
        scale_replicas: Some(wanted),
        scale_selector: Some(selector.clone()),
        selector: Some(selector),
        nodes: Some(f.nodes.clone()),
        ..Default::default()
    };
    let mut wanted_conditions = vec![Desired {
        type_: common::CONDITION_READY,
        status: ready,
        reason: why,
        message,
    }];
    // A member not seen connected, or without its role, is looked at again soon: neither
    // wakes the pass through a watch.
    let settled = ready
        && f.connected.as_ref().is_none_or(|c| c.status)
        && f.degraded.as_ref().is_none_or(|c| !c.status);
    wanted_conditions.extend(f.connected.clone());
    wanted_conditions.extend(f.degraded.clone());
    (
        status,
        wanted_conditions,
        if settled { resync } else { short },
    )
}

/// The roles of connected edges' members that nobody runs any more, removed in one layout
/// version ([`retired_roles`] of each edge). A gateway holds no data, so no proof is needed.
/// Only with a settled history, nothing staged and no other layout work this pass.
pub fn retire(
    o: &super::observed::Observed,
    read: Option<&super::observed::GarageRead>,
    busy: bool,
) -> Option<super::decision::LayoutChange> {
    let read = read.filter(|r| r.history.is_settled())?;
    let quiet = read.layout.staged_role_changes.is_empty();
    if busy || !quiet {
        return None;
    }
    let stale: Vec<NodeId> = o
        .edges
        .iter()
        .flat_map(|edge| retired_roles(edge, &read.layout.roles))
        .collect();
    removal(stale, read.layout.version)
}

/// One layout version removing `stale`, after `version`; `None` when there is nothing to
/// remove.
fn removal(stale: Vec<NodeId>, version: u64) -> Option<super::decision::LayoutChange> {
    if stale.is_empty() {
        return None;
    }
    let changes: Vec<RoleChange> = stale.into_iter().map(RoleChange::remove).collect();
    Some(super::decision::LayoutChange {
        stage: changes.clone(),
        intended: changes,
        version: version + 1,
        bootstrap: false,
        parameters: None,
    })
}

/// The roles among `roles` of the edge's members that nobody runs any more: every role of an
/// edge being deleted, the roles of members scaled away (recorded for a pod whose ordinal is
/// no longer asked for), and, when every running pod has a recorded identity, the roles none
/// of them is (an identity a pod replaced after losing its metadata). With no member running
/// nothing proves which identities are current, and only those are kept.
pub fn retired_roles(edge: &Edge, roles: &[LayoutRole]) -> Vec<NodeId> {
    use shared_types::keys::tag;
    let c = &edge.cluster;
    let gateway_tag = format!("{}gateway", tag::TAG_PREFIX_TIER);
    let uid_tag = format!(
        "{}{}",
        tag::TAG_PREFIX_CLUSTER_UID,
        c.metadata.uid.as_deref().unwrap_or_default()
    );
    let deleting = c.metadata.deletion_timestamp.is_some();
    // Without readable settings nothing is known to be scaled away.
    let wanted = wanted_members(c).unwrap_or(u32::MAX);
    let name = c.metadata.name.as_deref().unwrap_or_default();
    let recorded: Vec<(String, String)> = c
        .status
        .as_ref()
        .and_then(|s| s.nodes.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|n| Some((n.pod_name.clone()?, n.node_id.clone()?)))
        .collect();
    let running: Vec<_> = edge
        .pods
        .iter()
        .filter(|p| crate::pods::running_ip(p).is_some())
        .collect();
    let complete = !running.is_empty()
        && running.iter().all(|p| {
            recorded
                .iter()
                .any(|(pod, _)| *pod == kube::ResourceExt::name_any(*p))
        });
    roles
        .iter()
        .filter(|role| {
            let id = role.id.to_string();
            let ours = role.capacity.is_none()
                && role.tags.contains(&uid_tag)
                && role.tags.contains(&gateway_tag);
            // A member scaled away still runs: its role goes first, and the edge stops it
            // once the layout without it is settled (`held_replicas`).
            let scaled_away = recorded
                .iter()
                .any(|(pod, r)| *r == id && ordinal(name, pod).is_some_and(|i| i >= wanted));
            let unrecorded = complete && !recorded.iter().any(|(_, r)| *r == id);
            ours && (deleting || scaled_away || unrecorded)
        })
        .map(|role| role.id.clone())
        .collect()
}

/// The one layout version an edge of a storage cluster outside this Kubernetes cluster
/// writes itself through that cluster's Admin API (no pass of this install writes that
/// layout): a capacity-less role for each running member whose identity is recorded and
/// lacks its role (or has another zone or tags), and the removal of its [`retired_roles`]
/// once the history is `settled`. Nothing while anything is staged: another writer is at
/// work, and the apply would commit its changes with ours.
pub fn remote_change(
    edge: &Edge,
    layout: &garage_api_types::ClusterLayout,
    settled: bool,
) -> Option<super::decision::LayoutChange> {
    if layout.has_staged_changes() {
        return None;
    }
    let uid_tag = format!(
        "{}{}",
        shared_types::keys::tag::TAG_PREFIX_CLUSTER_UID,
        edge.cluster.metadata.uid.as_deref().unwrap_or_default()
    );
    let mut changes: Vec<RoleChange> = Vec::new();
    for view in super::members::edge_members(edge) {
        let Some(id) = view.member.node_id else {
            continue;
        };
        let role = &view.member.role;
        let current = layout.roles.iter().find(|r| r.id == id);
        // A role the edge did not write (a storage role, another cluster's) is never
        // rewritten: the identity recorded for a pod is not proof that the role is the edge's.
        let foreign = current.is_some_and(|r| r.capacity.is_some() || !r.tags.contains(&uid_tag));
        let same = current
            .is_some_and(|r| r.capacity.is_none() && r.zone == role.zone && r.tags == role.tags);
        if !same && !foreign {
            changes.push(RoleChange::gateway(
                id,
                role.zone.clone(),
                role.tags.clone(),
            ));
        }
    }
    if settled {
        changes.extend(
            retired_roles(edge, &layout.roles)
                .into_iter()
                .map(RoleChange::remove),
        );
    }
    (!changes.is_empty()).then(|| super::decision::LayoutChange {
        stage: changes.clone(),
        intended: changes,
        version: layout.version + 1,
        bootstrap: false,
        parameters: None,
    })
}

/// The members the edge `c` asks for (`spec.gateway.replicas`, 2 by default); `None` when
/// its settings cannot be read.
pub fn wanted_members(c: &GarageCluster) -> Option<u32> {
    Settings::from_edge(c).ok().map(|s| s.gateway_replicas)
}

/// What the edge records in `status.nodes`: each pod that `answered` this pass with the
/// identity it proved, and for every other member what was recorded before, as long as its
/// pod still exists (`present`, by name, those stopping included) or the storage cluster's
/// layout (`roles`, `None` when it could not be read) may still hold its role. A member that
/// did not answer once, restarts, is deleted to be made again or is stopping is still that
/// identity: forgetting it would let its role be taken for stale (and removed while it is
/// away), or its StatefulSet be shrunk or grown back without the proof [`held_replicas`]
/// asks for. A record goes once its pod is gone and its role is out of a read layout.
pub fn recorded_nodes(
    previous: &[NodeStatus],
    answered: Vec<NodeStatus>,
    present: &[String],
    roles: Option<&[LayoutRole]>,
) -> Vec<NodeStatus> {
    let mut out = answered;
    for n in previous {
        let Some(pod) = n.pod_name.as_deref() else {
            continue;
        };
        let in_layout = |roles: &[LayoutRole]| {
            n.node_id
                .as_deref()
                .is_some_and(|id| roles.iter().any(|r| r.id.as_str() == id))
        };
        let kept = present.iter().any(|p| p == pod) || roles.is_none_or(in_layout);
        if kept && !out.iter().any(|a| a.pod_name.as_deref() == Some(pod)) {
            out.push(n.clone());
        }
    }
    out.sort_by(|a, b| a.pod_name.cmp(&b.pod_name));
    out
}

/// The ordinal of the edge `name`'s pod `pod` (`<name>-gateway-<i>`).
pub fn ordinal(name: &str, pod: &str) -> Option<u32> {
    pod.strip_prefix(name)?
        .strip_prefix("-gateway-")?
        .parse()
        .ok()
}

/// How many pods the edge `name`'s StatefulSet keeps running when `wanted` are asked for,
/// given its existing `pods` (by name) and the identities `recorded` for its members (a pod
/// deleted and not yet made again still has its record). A member scaled away stops only
/// once its recorded identity is proven out of the storage cluster's layout (`roles`) and
/// every node acknowledged that (`settled`): Garage waits for every node of every live layout
/// version, so a member stopped before it saw the version without it would hold every later
/// layout change back for good. A member with no recorded identity, or without a layout read,
/// proves nothing and keeps running; so does a recorded one whose pod is away for a moment.
pub fn held_replicas(
    name: &str,
    wanted: u32,
    pods: &[String],
    recorded: &[NodeStatus],
    layout: Option<(&[garage_api_types::LayoutRole], bool)>,
) -> u32 {
    let recorded_pods = recorded.iter().filter_map(|n| n.pod_name.as_deref());
    let mut members: Vec<&str> = pods
        .iter()
        .map(String::as_str)
        .chain(recorded_pods)
        .collect();
    members.sort_unstable();
    members.dedup();
    members
        .into_iter()
        .filter_map(|pod| {
            let i = ordinal(name, pod)?;
            let id = recorded
                .iter()
                .find(|n| n.pod_name.as_deref() == Some(pod))
                .and_then(|n| n.node_id.as_deref());
            let retired = match (id, layout) {
                (Some(id), Some((roles, true))) => !roles.iter().any(|r| r.id.as_str() == id),
                _ => false,
            };
            (i >= wanted && !retired).then_some(i + 1)
        })
        .fold(wanted, u32::max)
}

/// True when the layout `roles` still hold a role of the edge with `uid`.
pub fn holds_roles(roles: &[garage_api_types::LayoutRole], uid: &str) -> bool {
    let uid_tag = format!("{}{uid}", shared_types::keys::tag::TAG_PREFIX_CLUSTER_UID);
    roles.iter().any(|r| r.tags.contains(&uid_tag))
}

#[cfg(test)]
mod tests;
