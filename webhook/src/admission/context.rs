//! What a rule may know besides the object under review: a snapshot of other
//! objects, read live from the API server by the adapter (or from a state
//! directory by the CLI) before the rules run.
//!
//! Rules treat the snapshot as complete. An adapter that cannot read a list
//! a rule set needs must deny the request (fail closed) rather than pass an
//! empty list, because an empty list would prove "no conflict".

use k8s_openapi::api::core::v1::{Namespace, Node, PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::garage_reference_grant::GarageReferenceGrant;

/// Objects the admission rules read.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// Every GarageCluster in every namespace (v1beta2, as stored), for
    /// cross-cluster checks such as overlapping node-local HostPaths.
    pub garage_clusters: Vec<GarageCluster>,
    /// Every GarageNode in every namespace.
    pub garage_nodes: Vec<GarageNode>,
    /// PersistentVolumeClaims in the namespace under review.
    pub persistent_volume_claims: Vec<PersistentVolumeClaim>,
    /// Kubernetes Nodes, for selector-based limits. Rules read only their
    /// metadata (labels); the server's adapter fetches nothing else.
    pub nodes: Vec<Node>,
    /// Pods in the namespace under review. GarageNode deletion (GN-D7) reads
    /// them to prove that the managed workload of an acknowledged lost source
    /// is gone before the GarageNode may disappear.
    pub pods: Vec<Pod>,
    /// `AdmissionRequest.options` of a DELETE under review. GarageNode
    /// deletion (GN-D6, GN-D7) refuses foreground propagation, which would let
    /// dependent workloads vanish before the finalizer proves the handoff.
    /// `None` for other operations or when the request carried no options.
    pub delete_options: Option<DeleteOptions>,
    /// The API version the client addressed (`AdmissionRequest.requestKind.version`
    /// when its group is `garage.rajsingh.info`, else `kind.version`). The
    /// v1beta1 GarageCluster validator applies its conversion-transport rules
    /// (G1-T1, G1-T2) only when this is `v1beta1` or unknown (`None`), because
    /// under matchPolicy Equivalent it also sees every v1beta2 write (INV-8).
    pub requested_version: Option<String>,
    /// The GarageReferenceGrants of every namespace a reviewed GarageBucket or GarageKey
    /// references into (RG-CHK). Complete for those namespaces; other namespaces' grants are
    /// not read.
    pub reference_grants: Vec<GarageReferenceGrant>,
    /// The referring object's Namespace (metadata only), read when a grant of a namespace it
    /// references into selects namespaces by label (RG-CHK step 5). Absent means it does not
    /// exist, which denies a selector grant.
    pub namespaces: Vec<Namespace>,
    /// What the install allows Garage pods on the Nodes (HostPath roots, privileged
    /// containers): configuration of the webhook, not an object read.
    pub host_access: super::host_access::HostAccessPolicy,
}
