//! The storage members of one GarageCluster, computed from its GarageNodes and their pods:
//! what the layout coordinator plans for, and what status reports. Pure.

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use shared_types::garage_node::GarageNode;
use shared_types::keys::tag;

use crate::desired::{Settings, data_dirs, nodes, quantity, rpc_address};
use crate::layout::{self, DesiredRole, Member};
use crate::names;
use crate::pods::{is_ready, running_ip};
use crate::pools::membership;
use garage_api_types::NodeId;

/// One storage member and the facts about its process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberView {
    /// What the layout planner sees.
    pub member: Member,
    /// `host:port` other Garage nodes reach it at, when known.
    pub rpc_address: Option<String>,
    /// The address it advertises instead of its pod's (`rpc_public_addr`), if any: Garage
    /// reports a peer that dialled in at that address, so it is no sign of a stale connection.
    pub advertised: Option<String>,
    /// The member runs outside Kubernetes (`spec.external`).
    pub external: bool,
    /// Its pod is Ready (external members: always true, they have no pod).
    pub ready: bool,
    /// True for a generated Auto member.
    pub generated: bool,
    /// When its pod was created, on the API server's clock (managed members). Not the
    /// kubelet's `status.startTime`: that is stamped with the Node's clock, and a Node whose
    /// clock is off would stretch or skip the reconnect grace that depends on this.
    pub started_at: Option<k8s_openapi::jiff::Timestamp>,
    /// Its pod, when one runs for it.
    pub pod_name: Option<String>,
    /// Its pod as the `seen-without-role` mark names it, when it runs one.
    pub mark: Option<PodMark>,
    /// The node-local pool it belongs to.
    pub pool: Option<String>,
    /// The user (or an operation) suspended this GarageNode: its layout entry is not changed
    /// and its pod is not replaced until the suspension is lifted.
    pub suspended: bool,
    /// The edge gateway it belongs to, for a member of a connected edge: it joins this
    /// cluster's layout, but the edge's own status reports it.
    pub edge: Option<String>,
}

/// A member's pod as the `seen-without-role` annotation names its process: the node ID it runs
/// and how often its Garage container has restarted (a restart is a new process).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodMark {
    /// The pod's UID.
    pub uid: String,
    /// Restarts of its Garage container so far (a sidecar's do not make a new Garage process).
    pub restarts: i32,
    /// The annotation it carries, if any.
    pub carried: Option<String>,
}

impl PodMark {
    /// The annotation's value for the pod's current process running `id`.
    pub fn value(&self, id: &NodeId) -> String {
        format!("{id}/{}", self.restarts)
    }

    /// Reads the mark of `pod`; none without a UID.
    pub fn of(pod: &Pod) -> Option<PodMark> {
        Some(PodMark {
            uid: pod.metadata.uid.clone()?,
            restarts: pod
                .status
                .iter()
                .flat_map(|s| s.container_statuses.iter().flatten())
                .filter(|c| c.name == crate::desired::statefulset::CONTAINER)
                .map(|c| c.restart_count)
                .sum(),
            carried: pod
                .annotations()
                .get(shared_types::keys::annotation::ANNOTATION_SEEN_WITHOUT_ROLE)
                .cloned(),
        })
    }
}

/// A `seen-without-role` annotation to write: on `pod` (while its UID is `uid`), `value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark {
    /// The pod's name.
    pub pod: String,
    /// Its UID: a pod made again under the name is a new process and gets no mark.
    pub uid: String,
    /// The annotation's value.
    pub value: String,
}

impl MemberView {
    /// True when its pod's current process was seen running `id` while the layout held no
    /// role for it.
    pub fn ran_without_role(&self, id: &NodeId) -> bool {
        self.mark
            .as_ref()
            .is_some_and(|m| m.carried.as_deref() == Some(m.value(id).as_str()))
    }

    /// True when `addr`, as Garage reports the member, is where its current pod is: the pod's
    /// address or the one the member advertises.
    pub fn at_current_address(&self, addr: Option<&str>) -> bool {
        let Some(addr) = addr else {
            return true;
        };
        self.rpc_address.is_none()
            || self.rpc_address.as_deref() == Some(addr)
            || self.advertised.as_deref() == Some(addr)
    }
}

/// The pod that runs `node`: its StatefulSet's pod, or for a pool member the pool pod
/// scheduled on its Kubernetes Node (a live one before a terminating one).
pub fn pod_of<'a>(node: &GarageNode, pods: &'a [Pod]) -> Option<&'a Pod> {
    match nodes::shape(node) {
        Ok(nodes::NodeShape::Pool { pool, node: host }) => {
            let mut on_host: Vec<&Pod> = pods
                .iter()
                .filter(|p| membership::runs_on(p, &pool, &host))
                .collect();
            on_host.sort_by_key(|p| p.metadata.deletion_timestamp.is_some());
            on_host.first().copied()
        }
        _ => pods
            .iter()
            .find(|p| p.name_any() == names::node_pod(&node.name_any())),
    }
}

/// The member of `node`, with its pod among `pods`. `None` for a node of a shape this
/// operator version does not run (the node controller reports it).
pub fn member(
    node: &GarageNode,
    pods: &[Pod],
    s: &Settings,
    generated: bool,
) -> Option<MemberView> {
    let shape = nodes::shape(node).ok()?;
    // The parent's own suspension stops the whole cluster pass before members are computed.
    let suspended = crate::suspension::of_node(node, None).is_some();
    // A node whose volumes do not fit the cluster's garage.toml gets no workload.
    if shape == nodes::NodeShape::Managed && data_dirs::check_node(node, s).is_err() {
        return None;
    }
    let name = node.name_any();
    let status = node.status.clone().unwrap_or_default();
    let pod = pod_of(node, pods);
    let gateway = nodes::is_gateway(node);
    let tier = if gateway {
        layout::tags::Tier::Gateway
    } else {
        layout::tags::Tier::Storage
    };
    let tags = member_tags(node, &shape, pod, s, tier);
    // A gateway holds a role without capacity, whatever its spec says (admission warns).
    let capacity = (!gateway).then(|| {
        node.spec
            .capacity
            .as_ref()
            .and_then(|q| quantity::to_bytes(&q.0))
            .unwrap_or(s.capacity)
    });
    let role = DesiredRole {
        zone: crate::zone::layout_zone(node, s),
        capacity,
        tags,
    };
    match &shape {
        nodes::NodeShape::External { node_id, address } => Some(MemberView {
            member: Member {
                name,
                node_id: Some(node_id.clone()),
                role,
            },
            rpc_address: Some(address.clone()),
            advertised: None,
            external: true,
            ready: true,
            generated,
            started_at: None,
            pod_name: None,
            mark: None,
            pool: None,
            suspended,
            edge: None,
        }),
        nodes::NodeShape::Managed | nodes::NodeShape::Pool { .. } => {
            let pool = match &shape {
                nodes::NodeShape::Pool { pool, .. } => Some(pool.clone()),
                _ => None,
            };
            // An ID counts only while the pod it was read from is the one running now.
            let proven = pod.is_some_and(|p| {
                p.metadata.uid.is_some() && p.metadata.uid == status.observed_pod_uid
            });
            let node_id = status
                .node_id
                .as_deref()
                .filter(|_| proven)
                .and_then(|id| id.parse::<NodeId>().ok());
            let rpc_address = pod.and_then(running_ip).map(|ip| {
                let host = if ip.contains(':') {
                    format!("[{ip}]")
                } else {
                    ip
                };
                format!("{host}:{}", s.rpc_port)
            });
            Some(MemberView {
                member: Member {
                    name,
                    node_id,
                    role,
                },
                rpc_address,
                advertised: crate::desired::node_config::advertised(node, s),
                external: false,
                ready: pod.is_some_and(is_ready),
                generated,
                started_at: pod
                    .and_then(|p| p.metadata.creation_timestamp.as_ref())
                    .map(|t| t.0),
                pod_name: pod.map(ResourceExt::name_any),
                mark: pod.and_then(PodMark::of),
                pool,
                suspended,
                edge: None,
            })
        }
    }
}

/// The tags of `node`'s role: the operator's, the user's, and for a pool member its pool and
/// Node, and the address it publishes.
fn member_tags(
    node: &GarageNode,
    shape: &nodes::NodeShape,
    pod: Option<&Pod>,
    s: &Settings,
    tier: layout::tags::Tier,
) -> Vec<String> {
    let mut tags = layout::tags::role_tags(
        &s.name,
        &s.namespace,
        &s.uid,
        tier,
        node.spec.tags.as_deref().unwrap_or_default(),
    );
    // A pool role names its pool and Node, so cold recovery can find it by tags alone.
    if let nodes::NodeShape::Pool { pool, node: host } = shape {
        tags.push(format!("{}{pool}", tag::TAG_PREFIX_NODE_LOCAL_POOL));
        tags.push(format!("{}{host}", tag::TAG_PREFIX_KUBERNETES_NODE));
        // Last, after the user's tags: the address peers reconnect to from the layout.
        if let Some(address) = s
            .pools
            .iter()
            .find(|p| &p.name == pool)
            .and_then(|p| pool_rpc_address(p, host, node, pod, s))
        {
            tags.push(format!("{}{address}", tag::TAG_PREFIX_RPC_ADDRESS));
        }
    }
    // A member with an address of its own publishes it as the pool members do.
    if let Some(address) = crate::desired::node_config::own_rpc_public_addr(node, s) {
        tags.push(format!("{}{address}", tag::TAG_PREFIX_RPC_ADDRESS));
    }
    tags
}

/// The `rpc-address:` a pool member publishes. Its pod's IPs are candidates only while the pod
/// runs; the address its GarageNode last discovered stays a candidate after, so a pod being
/// replaced keeps the tag until the replacement has an address of its own.
fn pool_rpc_address(
    pool: &shared_types::garage_cluster::v1beta2::NodeLocalPoolSpec,
    host: &str,
    node: &GarageNode,
    pod: Option<&Pod>,
    s: &Settings,
) -> Option<String> {
    let mut ips: Vec<std::net::IpAddr> = Vec::new();
    if let Some(p) = pod.filter(|p| running_ip(p).is_some()) {
        let status = p.status.as_ref();
        let listed = status
            .and_then(|st| st.pod_ips.as_ref())
            .into_iter()
            .flatten()
            .map(|i| i.ip.clone());
        ips.extend(
            status
                .and_then(|st| st.pod_ip.clone())
                .into_iter()
                .chain(listed)
                .filter_map(|ip| ip.parse::<std::net::IpAddr>().ok()),
        );
    }
    let discovered = node
        .status
        .as_ref()
        .and_then(|st| st.address.as_deref())
        .and_then(|a| a.rsplit_once(':'))
        .and_then(|(ip, _)| ip.trim_matches(['[', ']']).parse::<std::net::IpAddr>().ok());
    ips.extend(discovered);
    rpc_address::pool_member(
        pool,
        host,
        s.rpc_public_addr_subnet.as_ref(),
        &ips,
        s.rpc_port,
    )
}

/// The members of an edge gateway connected to the cluster: one per pod of the
/// edge that runs, with the identity the edge recorded for that pod (read from the pod's own
/// Admin API), a capacity-less role in the edge's zone tagged with the edge's name and UID,
/// and the pod's address to reconnect to.
pub fn edge_members(edge: &super::observed::Edge) -> Vec<MemberView> {
    let c = &edge.cluster;
    // A deleting edge's roles are retired (`super::edge::retire`); wanting them too would
    // hold the retirement off as other layout work for as long as its pods run.
    if c.metadata.deletion_timestamp.is_some() {
        return Vec::new();
    }
    let Ok(es) = crate::desired::Settings::from_edge(c) else {
        return Vec::new();
    };
    let recorded = c
        .status
        .as_ref()
        .and_then(|st| st.nodes.as_ref())
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for pod in &edge.pods {
        let Some(ip) = running_ip(pod) else { continue };
        let name = pod.name_any();
        // A member scaled away runs until its role is retired: it wants none.
        if super::edge::ordinal(&es.name, &name).is_some_and(|i| i >= es.gateway_replicas) {
            continue;
        }
        let node_id = recorded
            .iter()
            .find(|n| n.pod_name.as_deref() == Some(name.as_str()))
            .and_then(|n| n.node_id.as_deref())
            .and_then(|id| id.parse::<NodeId>().ok());
        let mut user = c.spec.default_node_tags.clone().unwrap_or_default();
        user.push(name.clone());
        let tags = layout::tags::role_tags(
            &es.name,
            &es.namespace,
            &es.uid,
            layout::tags::Tier::Gateway,
            &user,
        );
        let host = if ip.contains(':') {
            format!("[{ip}]")
        } else {
            ip
        };
        out.push(MemberView {
            member: Member {
                name: name.clone(),
                node_id,
                role: DesiredRole {
                    zone: es.zone.clone(),
                    capacity: None,
                    tags,
                },
            },
            rpc_address: Some(format!("{host}:{}", es.rpc_port)),
            advertised: None,
            external: false,
            ready: is_ready(pod),
            generated: false,
            started_at: pod.metadata.creation_timestamp.as_ref().map(|t| t.0),
            pod_name: Some(name),
            mark: PodMark::of(pod),
            pool: None,
            suspended: false,
            edge: Some(es.name.clone()),
        });
    }
    out
}
