//! GarageNode v1beta1: one Garage node, operator-run or external.

mod spec;
mod status;

pub use spec::*;
pub use status::*;

impl GarageNode {
    /// Namespace of the parent GarageCluster: `spec.clusterRef.namespace` when set, else the
    /// node's own namespace.
    pub fn parent_namespace(&self) -> &str {
        match self.spec.cluster_ref.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns,
            _ => self.metadata.namespace.as_deref().unwrap_or_default(),
        }
    }
}
