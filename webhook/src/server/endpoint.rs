//! The admission endpoints: their paths (webhooks spec §1.1), the resource each reviews and
//! the lists its rules read.

use super::context_reader::Needs;
use crate::admission::Operation;
use crate::convert::GROUP;

/// Path of the CRD conversion endpoint.
pub const CONVERT_PATH: &str = "/convert";

/// An admission endpoint (webhooks spec §1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// DEF-GC2, the v1beta2 GarageCluster defaulter.
    MutateClusterV1beta2,
    /// GC-*, the v1beta2 GarageCluster validator.
    ValidateClusterV1beta2,
    /// DEF-GC1, the v1beta1 GarageCluster defaulter.
    MutateClusterV1beta1,
    /// G1-*, the v1beta1 GarageCluster validator.
    ValidateClusterV1beta1,
    /// SC-*, the `garageclusters/scale` validator.
    ValidateClusterScale,
    /// DEF-GN, the GarageNode defaulter.
    MutateNode,
    /// GN-*, the GarageNode validator.
    ValidateNode,
    /// PVC-*, the managed PVC finalizer guard.
    PvcFinalizerGuard,
}

impl Endpoint {
    /// Every admission endpoint.
    pub const ALL: [Endpoint; 8] = [
        Endpoint::MutateClusterV1beta2,
        Endpoint::ValidateClusterV1beta2,
        Endpoint::MutateClusterV1beta1,
        Endpoint::ValidateClusterV1beta1,
        Endpoint::ValidateClusterScale,
        Endpoint::MutateNode,
        Endpoint::ValidateNode,
        Endpoint::PvcFinalizerGuard,
    ];

    /// The HTTP path the webhook configurations point at.
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::MutateClusterV1beta2 => "/mutate-garage-rajsingh-info-v1beta2-garagecluster",
            Endpoint::ValidateClusterV1beta2 => {
                "/validate-garage-rajsingh-info-v1beta2-garagecluster"
            }
            Endpoint::MutateClusterV1beta1 => "/mutate-garage-rajsingh-info-v1beta1-garagecluster",
            Endpoint::ValidateClusterV1beta1 => {
                "/validate-garage-rajsingh-info-v1beta1-garagecluster"
            }
            Endpoint::ValidateClusterScale => "/validate-garage-rajsingh-info-garagecluster-scale",
            Endpoint::MutateNode => "/mutate-garage-rajsingh-info-v1beta1-garagenode",
            Endpoint::ValidateNode => "/validate-garage-rajsingh-info-v1beta1-garagenode",
            Endpoint::PvcFinalizerGuard => "/validate-core-v1-managed-pvc-finalizer",
        }
    }

    /// The endpoint served at `path`.
    pub fn from_path(path: &str) -> Option<Self> {
        Endpoint::ALL.into_iter().find(|e| e.path() == path)
    }

    /// The endpoint whose rules apply to a request for `resource` (group, version, plural,
    /// subresource), as the CLI picks it: validating unless `mutating`.
    pub fn for_resource(
        group: &str,
        version: &str,
        resource: &str,
        sub_resource: Option<&str>,
        mutating: bool,
    ) -> Option<Self> {
        let endpoint = match (group, version, resource, sub_resource.unwrap_or_default()) {
            (GROUP, _, "garageclusters", "scale") => Endpoint::ValidateClusterScale,
            (GROUP, "v1beta2", "garageclusters", "") if mutating => Endpoint::MutateClusterV1beta2,
            (GROUP, "v1beta2", "garageclusters", "") => Endpoint::ValidateClusterV1beta2,
            (GROUP, "v1beta1", "garageclusters", "") if mutating => Endpoint::MutateClusterV1beta1,
            (GROUP, "v1beta1", "garageclusters", "") => Endpoint::ValidateClusterV1beta1,
            (GROUP, "v1beta1", "garagenodes", "") if mutating => Endpoint::MutateNode,
            (GROUP, "v1beta1", "garagenodes", "") => Endpoint::ValidateNode,
            ("", "v1", "persistentvolumeclaims", "") => Endpoint::PvcFinalizerGuard,
            _ => return None,
        };
        Some(endpoint)
    }

    /// Whether the endpoint answers with a patch rather than a verdict.
    pub fn is_mutating(self) -> bool {
        matches!(
            self,
            Endpoint::MutateClusterV1beta2 | Endpoint::MutateClusterV1beta1 | Endpoint::MutateNode
        )
    }

    /// What the API server must send here: group, version (`None`: any), resource and
    /// subresource; an empty resource means the rule set checks its target itself.
    pub(super) fn target(self) -> Target {
        let cluster = |version: &'static str| Target {
            group: GROUP,
            version: Some(version),
            resource: "garageclusters",
            sub_resource: "",
        };
        match self {
            Endpoint::MutateClusterV1beta2 | Endpoint::ValidateClusterV1beta2 => cluster("v1beta2"),
            Endpoint::MutateClusterV1beta1 | Endpoint::ValidateClusterV1beta1 => cluster("v1beta1"),
            Endpoint::ValidateClusterScale => Target {
                group: GROUP,
                version: None,
                resource: "garageclusters",
                sub_resource: "scale",
            },
            Endpoint::MutateNode | Endpoint::ValidateNode => Target {
                group: GROUP,
                version: Some("v1beta1"),
                resource: "garagenodes",
                sub_resource: "",
            },
            // The guard checks its target itself (PVC-1) so that its message is the rulebook's.
            Endpoint::PvcFinalizerGuard => Target {
                group: "",
                version: None,
                resource: "",
                sub_resource: "",
            },
        }
    }

    /// The lists the endpoint's rules may read for `operation`, hence the RBAC it needs. A
    /// GarageCluster review whose rules read none of them (no node-local pools) skips the read
    /// altogether; see `dispatch`.
    pub fn needs(self, operation: Operation) -> Needs {
        match self {
            Endpoint::ValidateClusterV1beta2
            | Endpoint::ValidateClusterV1beta1
            | Endpoint::ValidateClusterScale => Needs {
                garage_clusters: true,
                garage_nodes: true,
                nodes: operation != Operation::Delete,
                pods: false,
                node_queries: None,
            },
            Endpoint::ValidateNode => Needs {
                garage_clusters: true,
                garage_nodes: true,
                nodes: false,
                pods: operation == Operation::Delete,
                node_queries: None,
            },
            _ => Needs::default(),
        }
    }
}

pub(super) struct Target {
    pub(super) group: &'static str,
    pub(super) version: Option<&'static str>,
    pub(super) resource: &'static str,
    pub(super) sub_resource: &'static str,
}
