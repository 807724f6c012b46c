//! The pod defaults a GarageNode takes from its cluster: `spec.storage` for a storage node,
//! `spec.gateway` for a gateway. The node's own field wins over either.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, EnvFromSource, EnvVar, PodSecurityContext, Probe, ResourceRequirements,
    SecurityContext, Toleration, TopologySpreadConstraint,
};
use shared_types::garage_cluster::common::PvcRetentionPolicy;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

/// The tier's pod template, field by field; `None` where the tier (or the tier block) sets none.
#[derive(Debug, Clone, Copy, Default)]
pub struct TierDefaults<'a> {
    /// Pod security context.
    pub security_context: Option<&'a PodSecurityContext>,
    /// Garage container security context.
    pub container_security_context: Option<&'a SecurityContext>,
    /// Extra environment.
    pub env: Option<&'a Vec<EnvVar>>,
    /// Extra environment sources.
    pub env_from: Option<&'a Vec<EnvFromSource>>,
    /// Container resources.
    pub resources: Option<&'a ResourceRequirements>,
    /// Node selector.
    pub node_selector: Option<&'a BTreeMap<String, String>>,
    /// Tolerations.
    pub tolerations: Option<&'a Vec<Toleration>>,
    /// Affinity.
    pub affinity: Option<&'a Affinity>,
    /// PriorityClass.
    pub priority_class_name: Option<&'a String>,
    /// Topology spread constraints.
    pub topology_spread_constraints: Option<&'a Vec<TopologySpreadConstraint>>,
    /// Extra pod labels.
    pub pod_labels: Option<&'a BTreeMap<String, String>>,
    /// Extra pod annotations.
    pub pod_annotations: Option<&'a BTreeMap<String, String>>,
    /// What happens to the claims when the StatefulSet goes.
    pub pvc_retention_policy: Option<&'a PvcRetentionPolicy>,
    /// The gateway tier's readiness probe override (storage has none).
    pub readiness_probe: Option<&'a Probe>,
}

impl<'a> TierDefaults<'a> {
    /// The defaults of the tier `node` belongs to in `cluster`.
    pub fn of(cluster: &'a GarageCluster, node: &GarageNode) -> Self {
        if node.spec.gateway == Some(true) {
            let Some(g) = cluster.spec.gateway.as_ref() else {
                return Self::default();
            };
            return Self {
                security_context: g.security_context.as_ref(),
                container_security_context: g.container_security_context.as_ref(),
                env: g.env.as_ref(),
                env_from: g.env_from.as_ref(),
                resources: g.resources.as_ref(),
                node_selector: g.node_selector.as_ref(),
                tolerations: g.tolerations.as_ref(),
                affinity: g.affinity.as_ref(),
                priority_class_name: g.priority_class_name.as_ref(),
                topology_spread_constraints: g.topology_spread_constraints.as_ref(),
                pod_labels: g.pod_labels.as_ref(),
                pod_annotations: g.pod_annotations.as_ref(),
                pvc_retention_policy: g.pvc_retention_policy.as_ref(),
                readiness_probe: g.readiness_probe.as_ref(),
            };
        }
        let Some(s) = cluster.spec.storage.as_ref() else {
            return Self::default();
        };
        Self {
            security_context: s.security_context.as_ref(),
            container_security_context: s.container_security_context.as_ref(),
            env: s.env.as_ref(),
            env_from: s.env_from.as_ref(),
            resources: s.resources.as_ref(),
            node_selector: s.node_selector.as_ref(),
            tolerations: s.tolerations.as_ref(),
            affinity: s.affinity.as_ref(),
            priority_class_name: s.priority_class_name.as_ref(),
            topology_spread_constraints: s.topology_spread_constraints.as_ref(),
            pod_labels: s.pod_labels.as_ref(),
            pod_annotations: s.pod_annotations.as_ref(),
            pvc_retention_policy: s.pvc_retention_policy.as_ref(),
            readiness_probe: None,
        }
    }
}
