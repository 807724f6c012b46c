//! The ten pod-scheduling fields that v1beta1 keeps at the top of `spec` and v1beta2 keeps in the
//! pod template of each tier.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, PodSecurityContext, ResourceRequirements, SecurityContext, Toleration,
    TopologySpreadConstraint,
};

/// The pod fields shared by the v1beta1 top level, `storage` and `gateway`, carried as one value
/// so that each direction moves all ten or none.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct PodFields {
    pub affinity: Option<Affinity>,
    pub container_security_context: Option<SecurityContext>,
    pub node_selector: Option<BTreeMap<String, String>>,
    pub pod_annotations: Option<BTreeMap<String, String>>,
    pub pod_labels: Option<BTreeMap<String, String>>,
    pub priority_class_name: Option<String>,
    pub resources: Option<ResourceRequirements>,
    pub security_context: Option<PodSecurityContext>,
    pub tolerations: Option<Vec<Toleration>>,
    pub topology_spread_constraints: Option<Vec<TopologySpreadConstraint>>,
}
