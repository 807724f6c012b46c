//! The admission endpoints: their paths, the resource each reviews and
//! the lists its rules read.

use super::context_reader::Needs;
use crate::admission::Operation;
use crate::convert::GROUP;

/// Path of the CRD conversion endpoint.
pub const CONVERT_PATH: &str = "/convert";

/// An admission endpoint, one per webhook path the chart registers.
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
    /// DEF-GB, the GarageBucket defaulter.
    MutateBucket,
    /// GB-*, the GarageBucket validator.
    ValidateBucket,
    /// DEF-GK, the GarageKey defaulter.
    MutateKey,
    /// GK-*, the GarageKey validator.
    ValidateKey,
    /// AT-*, the GarageAdminToken validator (no defaulter exists for this kind).
    ValidateAdminToken,
    /// RG-*, the GarageReferenceGrant validator (no defaulter exists for this kind).
    ValidateReferenceGrant,
}

impl Endpoint {
    /// Every admission endpoint.
    pub const ALL: [Endpoint; 14] = [
        Endpoint::MutateClusterV1beta2,
        Endpoint::ValidateClusterV1beta2,
        Endpoint::MutateClusterV1beta1,
        Endpoint::ValidateClusterV1beta1,
        Endpoint::ValidateClusterScale,
        Endpoint::MutateNode,
        Endpoint::ValidateNode,
        Endpoint::PvcFinalizerGuard,
        Endpoint::MutateBucket,
        Endpoint::ValidateBucket,
        Endpoint::MutateKey,
        Endpoint::ValidateKey,
        Endpoint::ValidateAdminToken,
        Endpoint::ValidateReferenceGrant,
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
            Endpoint::MutateBucket => "/mutate-garage-rajsingh-info-v1beta1-garagebucket",
            Endpoint::ValidateBucket => "/validate-garage-rajsingh-info-v1beta1-garagebucket",
            Endpoint::MutateKey => "/mutate-garage-rajsingh-info-v1beta1-garagekey",
            Endpoint::ValidateKey => "/validate-garage-rajsingh-info-v1beta1-garagekey",
            Endpoint::ValidateAdminToken => {
                "/validate-garage-rajsingh-info-v1beta1-garageadmintoken"
            }
            Endpoint::ValidateReferenceGrant => {
                "/validate-garage-rajsingh-info-v1beta1-garagereferencegrant"
            }
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
            (GROUP, "v1beta1", "garagebuckets", "") if mutating => Endpoint::MutateBucket,
            (GROUP, "v1beta1", "garagebuckets", "") => Endpoint::ValidateBucket,
            (GROUP, "v1beta1", "garagekeys", "") if mutating => Endpoint::MutateKey,
            (GROUP, "v1beta1", "garagekeys", "") => Endpoint::ValidateKey,
            (GROUP, "v1beta1", "garageadmintokens", "") => Endpoint::ValidateAdminToken,
            (GROUP, "v1beta1", "garagereferencegrants", "") => Endpoint::ValidateReferenceGrant,
            ("", "v1", "persistentvolumeclaims", "") => Endpoint::PvcFinalizerGuard,
            _ => return None,
        };
        Some(endpoint)
    }

    /// Whether the endpoint answers with a patch rather than a verdict.
    pub fn is_mutating(self) -> bool {
        matches!(
            self,
            Endpoint::MutateClusterV1beta2
                | Endpoint::MutateClusterV1beta1
                | Endpoint::MutateNode
                | Endpoint::MutateBucket
                | Endpoint::MutateKey
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
        let v1beta1 = |resource: &'static str| Target {
            group: GROUP,
            version: Some("v1beta1"),
            resource,
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
            Endpoint::MutateNode | Endpoint::ValidateNode => v1beta1("garagenodes"),
            Endpoint::MutateBucket | Endpoint::ValidateBucket => v1beta1("garagebuckets"),
            Endpoint::MutateKey | Endpoint::ValidateKey => v1beta1("garagekeys"),
            Endpoint::ValidateAdminToken => v1beta1("garageadmintokens"),
            Endpoint::ValidateReferenceGrant => v1beta1("garagereferencegrants"),
            // The guard checks its target itself (PVC-1) so that the denial names PVC-1.
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
    /// altogether; see `dispatch`. GarageBucket, GarageKey and GarageAdminToken reviews read
    /// only what the object names (grants of the namespaces it references into, the one
    /// cluster a token's deletion checks), which `dispatch` derives from the object.
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
                ..Needs::default()
            },
            Endpoint::ValidateNode => Needs {
                garage_clusters: true,
                garage_nodes: true,
                nodes: false,
                pods: operation == Operation::Delete,
                node_queries: None,
                ..Needs::default()
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

impl Endpoint {
    /// What a review of this endpoint for `operation` cannot prove when its reads fail, for
    /// the fail-closed denial; `None` where the reason alone says it.
    pub(super) fn unproven(self, operation: Operation) -> Option<&'static str> {
        match (self, operation) {
            (Endpoint::ValidateAdminToken, Operation::Delete) => Some(
                "cannot prove the static bootstrap Secret is unused by its GarageCluster [AT-D2]",
            ),
            (Endpoint::ValidateBucket | Endpoint::ValidateKey, _) => Some(
                "cannot prove the cross-namespace references are granted by a GarageReferenceGrant",
            ),
            _ => None,
        }
    }
}
