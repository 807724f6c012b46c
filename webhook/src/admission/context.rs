//! What a rule may know besides the object under review: a snapshot of other
//! objects, read live from the API server by the adapter (or from a state
//! directory by the CLI) before the rules run.
//!
//! Rules treat the snapshot as complete. An adapter that cannot read a list
//! a rule set needs must deny the request (fail closed) rather than pass an
//! empty list, because an empty list would prove "no conflict".

use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;

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
    /// Kubernetes Nodes, for selector-based limits.
    pub nodes: Vec<Node>,
}
