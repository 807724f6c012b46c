//! GarageNode shape rules GN-C1…GN-C20 (GN-C21, storage, lives in
//! [`super::storage`]). They run on CREATE and, on UPDATE, on the validation
//! copy; the first broken rule is reported, because later rules assume the
//! earlier ones hold (for example the backing-specific rules assume a known
//! backing).

use super::facts::{self, cluster_namespace, is_external, is_gateway, is_pool};
use super::{Step, deny, storage};
use crate::admission::Verdict;
use crate::admission::shared::env::check_env;
use crate::admission::shared::labels::check_pod_labels;
use crate::admission::shared::names::{is_dns1123_label, is_dns1123_subdomain, is_qualified_name};
use crate::admission::shared::node_id::is_node_id;
use shared_types::common::{PublicEndpointConfig, PublicEndpointType};
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::{
    ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_CYCLE, ANNOTATION_DRAIN,
    ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID,
};
use shared_types::keys::tag::{
    RESERVED_TAG_PREFIXES, TAG_PREFIX_CLUSTER, TAG_PREFIX_KUBERNETES_NODE,
    TAG_PREFIX_NODE_LOCAL_POOL, TAG_PREFIX_TIER,
};

/// Longest name of a StatefulSet-backed managed node: `<name>-0` must still
/// be a valid Pod label value (63 characters).
pub const MAX_STATEFULSET_NAME: usize = 61;
/// Longest name of any other GarageNode.
pub const MAX_NAME: usize = 63;

/// Name limit for this node's backing.
pub fn name_limit(node: &GarageNode) -> usize {
    if facts::is_managed_statefulset(node) {
        MAX_STATEFULSET_NAME
    } else {
        MAX_NAME
    }
}

/// GN-C4: whether the name fits its backing.
pub fn name_fits(node: &GarageNode) -> bool {
    facts::name(node).len() <= name_limit(node)
}

/// Runs GN-C1…GN-C21 in order. `legacy` relaxes GN-C12 (the spec is
/// unchanged on this UPDATE, so a released reference stays updatable).
pub fn check(node: &GarageNode, legacy: bool, warnings: &mut Verdict) -> Step {
    let spec = &node.spec;
    if spec
        .external
        .as_ref()
        .is_some_and(|e| e.remote_cluster_ref.is_some())
    {
        return Err(deny(
            "GN-C1",
            "spec.external.remoteClusterRef",
            "external.remoteClusterRef is not supported: the operator reaches GarageClusters only through its own Kubernetes client; remove it",
        ));
    }
    if let Some(endpoint) = &spec.public_endpoint {
        public_endpoint("spec.publicEndpoint", endpoint)?;
    }
    // GN-C3 (backing must be StatefulSet or NodeLocalPool) is enforced by
    // decoding: `NodeBacking` has exactly those variants, so an obsolete value
    // such as `StoragePool` never reaches the rules.
    if !name_fits(node) {
        return Err(deny(
            "GN-C4",
            "metadata.name",
            format!(
                "maximum {} characters for this GarageNode backing (a StatefulSet-backed node needs room for the \"-0\" Pod suffix); choose a shorter name",
                name_limit(node)
            ),
        ));
    }
    annotations(node, warnings)?;
    if let Some(problem) = check_env("spec", spec.env.as_ref(), spec.env_from.as_ref())
        .into_iter()
        .next()
    {
        return Err(problem.violation("GN-C9"));
    }
    if let Some(problem) = check_pod_labels("spec.podLabels", spec.pod_labels.as_ref())
        .into_iter()
        .next()
    {
        return Err(problem.violation("GN-C10"));
    }
    cluster_ref(node, legacy)?;
    if spec.zone.is_empty() {
        return Err(deny(
            "GN-C14",
            "spec.zone",
            "zone is required: set the Garage layout zone of this node",
        ));
    }
    tags(node)?;
    zone_from(node, warnings)?;
    if !is_gateway(node) && spec.capacity.is_none() {
        return Err(deny(
            "GN-C17",
            "spec.capacity",
            "capacity is required for storage nodes (set gateway: true for gateway-only nodes)",
        ));
    }
    if is_gateway(node) && spec.capacity.is_some() {
        warnings.warn(
            "GN-W3",
            "spec.capacity: capacity is set but will be ignored for gateway nodes",
        );
    }
    if let Some(id) = &spec.node_id {
        if !is_node_id(id.trim()) {
            return Err(deny(
                "GN-C18",
                "spec.nodeId",
                "nodeId must be a 64-character hex string (Ed25519 public key)",
            ));
        }
        if facts::is_managed_statefulset(node) {
            warnings.warn("GN-W4", "spec.nodeId on a managed GarageNode is an expected identity pin: the operator refuses layout and status changes if the pod reports another identity");
        }
    }
    if is_pool(node) {
        pool_member(node)?;
        ignored_pool_overrides(node, warnings);
    } else if is_external(node) {
        external(node)?;
    } else {
        managed(node)?;
        storage::check(node, warnings)?;
    }
    Ok(())
}

/// SH-15 for a GarageNode public endpoint (reported as GN-C2).
fn public_endpoint(field: &str, endpoint: &PublicEndpointConfig) -> Step {
    let fail = |sub: &str, msg: &str| Err(deny("GN-C2", format!("{field}{sub}"), msg));
    if endpoint.external_ip.is_some() || endpoint.type_ == Some(PublicEndpointType::ExternalIP) {
        return fail(
            ".externalIP",
            "externalIP is not supported; use LoadBalancer, NodePort, or set spec.network.rpcPublicAddr",
        );
    }
    match endpoint.type_ {
        Some(PublicEndpointType::Headless) => fail(
            ".type",
            "type Headless is not supported; use LoadBalancer or NodePort",
        ),
        Some(PublicEndpointType::LoadBalancer) if endpoint.node_port.is_some() => fail(
            ".nodePort",
            "nodePort is only valid with type NodePort; remove it or change the type",
        ),
        Some(PublicEndpointType::NodePort) if endpoint.load_balancer.is_some() => fail(
            ".loadBalancer",
            "loadBalancer is only valid with type LoadBalancer; remove it or change the type",
        ),
        Some(PublicEndpointType::NodePort)
            if endpoint
                .node_port
                .as_ref()
                .is_none_or(|n| n.external_addresses.is_empty()) =>
        {
            fail(
                ".nodePort.externalAddresses",
                "must contain at least one externally reachable address for type NodePort",
            )
        }
        Some(PublicEndpointType::LoadBalancer | PublicEndpointType::NodePort) => Ok(()),
        _ => fail(".type", "type must be LoadBalancer or NodePort"),
    }
}

/// GN-C5…GN-C8: the request annotations.
fn annotations(node: &GarageNode, warnings: &mut Verdict) -> Step {
    let field = |key: &str| format!("metadata.annotations[{key}]");
    if let Some(value) = facts::annotation(node, ANNOTATION_DRAIN) {
        if value != "true" {
            return Err(deny(
                "GN-C5",
                field(ANNOTATION_DRAIN),
                format!(
                    "annotation {ANNOTATION_DRAIN} must be \"true\" (got {value:?}); remove it to cancel a drain that has not started"
                ),
            ));
        }
        if is_gateway(node) {
            return Err(deny(
                "GN-C5",
                field(ANNOTATION_DRAIN),
                format!(
                    "annotation {ANNOTATION_DRAIN} is only valid on positive-capacity storage GarageNodes; delete a gateway node directly"
                ),
            ));
        }
    }
    if let Some(value) = facts::annotation(node, ANNOTATION_CYCLE) {
        if value != "true" {
            return Err(deny(
                "GN-C6",
                field(ANNOTATION_CYCLE),
                format!("annotation {ANNOTATION_CYCLE} must be \"true\" (got {value:?})"),
            ));
        }
        if is_pool(node) {
            return Err(deny(
                "GN-C6",
                field(ANNOTATION_CYCLE),
                format!(
                    "annotation {ANNOTATION_CYCLE} is not valid on an operator-generated node-local-pool member; pool pods are replaced by the parent's one-at-a-time rollout"
                ),
            ));
        }
        if is_external(node) {
            return Err(deny(
                "GN-C6",
                field(ANNOTATION_CYCLE),
                format!(
                    "annotation {ANNOTATION_CYCLE} is not valid on an external node, whose process the operator does not run"
                ),
            ));
        }
    }
    if let Some(value) = facts::annotation(node, ANNOTATION_ACKNOWLEDGE_LOST_SOURCE) {
        let f = field(ANNOTATION_ACKNOWLEDGE_LOST_SOURCE);
        if !facts::drain_requested(node) {
            return Err(deny(
                "GN-C7",
                f,
                format!(
                    "annotation {ANNOTATION_ACKNOWLEDGE_LOST_SOURCE} requires {ANNOTATION_DRAIN}=\"true\" in the same object; add both atomically"
                ),
            ));
        }
        if is_gateway(node) {
            return Err(deny(
                "GN-C7",
                f,
                format!(
                    "annotation {ANNOTATION_ACKNOWLEDGE_LOST_SOURCE} is only valid on positive-capacity storage GarageNodes"
                ),
            ));
        }
        if !is_node_id(value.trim()) {
            return Err(deny(
                "GN-C7",
                f,
                format!(
                    "annotation {ANNOTATION_ACKNOWLEDGE_LOST_SOURCE} must contain the exact lost Garage node ID (64 hex characters from status.nodeId)"
                ),
            ));
        }
        warnings.warn("GN-W1", format!("annotation {ANNOTATION_ACKNOWLEDGE_LOST_SOURCE} cannot recover blocks whose only copy was on the unavailable process; the drain proof only checks the surviving destinations"));
    }
    if let Some(value) = facts::annotation(node, ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID) {
        let f = field(ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID);
        if !is_pool(node) {
            return Err(deny(
                "GN-C8",
                f,
                format!(
                    "annotation {ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID} is only valid on an internal node-local-pool-backed GarageNode; remove it"
                ),
            ));
        }
        if !is_node_id(value.trim()) {
            return Err(deny(
                "GN-C8",
                f,
                format!(
                    "annotation {ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID} must contain the exact retained HostPath Garage node ID (64 hex characters)"
                ),
            ));
        }
    }
    Ok(())
}

/// GN-C11…GN-C13: the cluster reference.
fn cluster_ref(node: &GarageNode, legacy: bool) -> Step {
    let r = &node.spec.cluster_ref;
    if r.name.is_empty() {
        return Err(deny(
            "GN-C11",
            "spec.clusterRef.name",
            "clusterRef.name is required: name the parent GarageCluster",
        ));
    }
    if !legacy {
        if r.kube_config_secret_ref.is_some() {
            return Err(deny(
                "GN-C12",
                "spec.clusterRef.kubeConfigSecretRef",
                "kubeConfigSecretRef is not supported; the operator can reference GarageClusters only through its configured Kubernetes client",
            ));
        }
        if !is_dns1123_subdomain(&r.name) {
            return Err(deny(
                "GN-C12",
                "spec.clusterRef.name",
                format!(
                    "clusterRef.name {:?} is invalid: use a DNS-1123 subdomain",
                    r.name
                ),
            ));
        }
        if let Some(ns) = r.namespace.as_deref().filter(|ns| !ns.is_empty())
            && !is_dns1123_label(ns)
        {
            return Err(deny(
                "GN-C12",
                "spec.clusterRef.namespace",
                format!("clusterRef.namespace {ns:?} is invalid: use a DNS-1123 label"),
            ));
        }
    }
    if let Some(ns) = r.namespace.as_deref().filter(|ns| !ns.is_empty())
        && ns != facts::namespace(node)
    {
        return Err(deny(
            "GN-C13",
            "spec.clusterRef.namespace",
            "clusterRef.namespace is not permitted on GarageNode: node management requires a same-namespace cluster reference; create the GarageNode in the cluster's namespace",
        ));
    }
    Ok(())
}

/// GN-C15: operator-reserved layout tags only with their canonical value.
fn tags(node: &GarageNode) -> Step {
    let spec = &node.spec;
    let mut allowed = vec![
        format!(
            "{TAG_PREFIX_CLUSTER}{}/{}",
            spec.cluster_ref.name,
            cluster_namespace(node)
        ),
        format!(
            "{TAG_PREFIX_TIER}{}",
            if is_gateway(node) {
                "gateway"
            } else {
                "storage"
            }
        ),
    ];
    if is_pool(node) {
        if let Some(pool) = &spec.node_local_pool_name {
            allowed.push(format!("{TAG_PREFIX_NODE_LOCAL_POOL}{pool}"));
        }
        if let Some(k8s_node) = &spec.kubernetes_node_name {
            allowed.push(format!("{TAG_PREFIX_KUBERNETES_NODE}{k8s_node}"));
        }
    }
    for (i, tag) in spec.tags.iter().flatten().enumerate() {
        let Some(prefix) = RESERVED_TAG_PREFIXES.iter().find(|p| tag.starts_with(*p)) else {
            continue;
        };
        if !allowed.contains(tag) {
            return Err(deny(
                "GN-C15",
                format!("spec.tags[{i}]"),
                format!(
                    "tags[{i}] {tag:?} uses operator-managed prefix {prefix:?}; use clusterRef, gateway, backing/nodeLocalPoolName/kubernetesNodeName, or network.rpcPublicAddr instead"
                ),
            ));
        }
    }
    Ok(())
}

/// GN-C16: zoneFrom.
fn zone_from(node: &GarageNode, warnings: &mut Verdict) -> Step {
    let Some(zf) = &node.spec.zone_from else {
        return Ok(());
    };
    if zf.node_label.is_empty() || !is_qualified_name(&zf.node_label) {
        return Err(deny(
            "GN-C16",
            "spec.zoneFrom.nodeLabel",
            format!(
                "zoneFrom.nodeLabel: {:?} is not a valid label key",
                zf.node_label
            ),
        ));
    }
    if is_external(node) {
        return Err(deny(
            "GN-C16",
            "spec.zoneFrom",
            "zoneFrom is not valid on external nodes, which have no pod on a Kubernetes Node; set spec.zone",
        ));
    }
    if is_gateway(node) {
        warnings.warn("GN-W2", "spec.zoneFrom: zoneFrom on a gateway node can break layout apply under replication.zoneRedundancyMode: Maximum when it creates a zone without storage");
    }
    Ok(())
}

/// GN-C19: a node-local-pool member is an internal child of its cluster.
fn pool_member(node: &GarageNode) -> Step {
    let spec = &node.spec;
    let fail = |field: &str, msg: &str| Err(deny("GN-C19", field, msg));
    if !facts::controlled_by_referenced_cluster(node) {
        return fail(
            "metadata.ownerReferences",
            "node-local-pool-backed GarageNodes are internal children and require a GarageCluster controller owner matching clusterRef.name; declare the pool in spec.storage.nodeLocalPools instead",
        );
    }
    if spec
        .kubernetes_node_name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        return fail(
            "spec.kubernetesNodeName",
            "kubernetesNodeName is required for backing NodeLocalPool",
        );
    }
    if spec
        .node_local_pool_name
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        return fail(
            "spec.nodeLocalPoolName",
            "nodeLocalPoolName is required for backing NodeLocalPool",
        );
    }
    if spec.node_id.is_some() {
        return fail(
            "spec.nodeId",
            "nodeId is not allowed with backing NodeLocalPool: the operator must discover the exact HostPath process identity",
        );
    }
    if spec.external.is_some() {
        return fail(
            "spec.external",
            "external is not allowed with backing NodeLocalPool",
        );
    }
    if spec.storage.is_some() {
        return fail(
            "spec.storage",
            "storage is not allowed with backing NodeLocalPool: volumes come from the pool's HostPaths",
        );
    }
    if is_gateway(node) {
        return fail(
            "spec.gateway",
            "gateway is not allowed with backing NodeLocalPool",
        );
    }
    if spec.public_endpoint.is_some() {
        return fail(
            "spec.publicEndpoint",
            "publicEndpoint is not allowed with backing NodeLocalPool; use the pool's network.rpcPublicAddrTemplate",
        );
    }
    if let Some(network) = &spec.network
        && network
            .rpc_public_addr
            .as_deref()
            .unwrap_or_default()
            .is_empty()
    {
        return fail(
            "spec.network.rpcPublicAddr",
            "network.rpcPublicAddr must be non-empty when network is set on a node-local-pool member",
        );
    }
    if spec.logging.is_some() {
        return fail(
            "spec.logging",
            "logging is not allowed with backing NodeLocalPool; configure spec.logging on the parent GarageCluster",
        );
    }
    Ok(())
}

/// GN-C20: an external node is only a layout entry.
fn external(node: &GarageNode) -> Step {
    let spec = &node.spec;
    let fail = |field: &str, msg: String| Err(deny("GN-C20", field, msg));
    if spec.kubernetes_node_name.is_some() {
        return fail(
            "spec.kubernetesNodeName",
            "kubernetesNodeName is only valid when backing is NodeLocalPool".into(),
        );
    }
    if spec.node_local_pool_name.is_some() {
        return fail(
            "spec.nodeLocalPoolName",
            "nodeLocalPoolName is only valid when backing is NodeLocalPool".into(),
        );
    }
    if spec
        .node_id
        .as_deref()
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        return fail(
            "spec.nodeId",
            "nodeId is required for external nodes: it is the only source of their identity".into(),
        );
    }
    let Some(ext) = &spec.external else {
        return Ok(());
    };
    if ext.address.is_empty() {
        return fail(
            "spec.external.address",
            "external.address is required: the RPC host name or IP of the external process".into(),
        );
    }
    if let Some(port) = ext.port
        && !(1..=65535).contains(&port)
    {
        return fail(
            "spec.external.port",
            format!("external.port {port} must be between 1 and 65535"),
        );
    }
    if spec.storage.is_some() {
        return fail(
            "spec.storage",
            "storage is not allowed on external nodes: the operator runs no workload for them"
                .into(),
        );
    }
    Ok(())
}

/// GN-C21 (first part): a managed StatefulSet node needs storage and no pool
/// fields.
fn managed(node: &GarageNode) -> Step {
    let spec = &node.spec;
    let fail = |field: &str, msg: &str| Err(deny("GN-C21", field, msg));
    if spec.kubernetes_node_name.is_some() {
        return fail(
            "spec.kubernetesNodeName",
            "kubernetesNodeName is only valid when backing is NodeLocalPool",
        );
    }
    if spec.node_local_pool_name.is_some() {
        return fail(
            "spec.nodeLocalPoolName",
            "nodeLocalPoolName is only valid when backing is NodeLocalPool",
        );
    }
    if spec.storage.is_none() {
        return fail(
            "spec.storage",
            "storage is required for managed nodes (use external for externally-managed nodes)",
        );
    }
    Ok(())
}

/// GN-W10: a pool member's pod comes from the pool DaemonSet, so per-node
/// workload overrides render nothing; say so instead of silently ignoring.
fn ignored_pool_overrides(node: &GarageNode, warnings: &mut Verdict) {
    let s = &node.spec;
    let set = [
        ("image", s.image.is_some()),
        ("imageRepository", s.image_repository.is_some()),
        ("imagePullPolicy", s.image_pull_policy.is_some()),
        ("imagePullSecrets", s.image_pull_secrets.is_some()),
        ("resources", s.resources.is_some()),
        ("nodeSelector", s.node_selector.is_some()),
        ("tolerations", s.tolerations.is_some()),
        ("affinity", s.affinity.is_some()),
        ("podAnnotations", s.pod_annotations.is_some()),
        ("podLabels", s.pod_labels.is_some()),
        ("priorityClassName", s.priority_class_name.is_some()),
        ("serviceAccountName", s.service_account_name.is_some()),
        ("securityContext", s.security_context.is_some()),
        (
            "containerSecurityContext",
            s.container_security_context.is_some(),
        ),
        (
            "topologySpreadConstraints",
            s.topology_spread_constraints.is_some(),
        ),
        ("env", s.env.is_some()),
        ("envFrom", s.env_from.is_some()),
    ];
    let fields: Vec<&str> = set.iter().filter(|(_, on)| *on).map(|(f, _)| *f).collect();
    if !fields.is_empty() {
        warnings.warn("GN-W10", format!(
            "spec.{} has no effect on a node-local-pool member, whose pod comes from the pool DaemonSet; configure spec.storage.nodeLocalPools[].podTemplate on the parent GarageCluster instead",
            fields.join(", spec.")
        ));
    }
}
