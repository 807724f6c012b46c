//! GarageCluster v1beta2, the storage version: storage and gateway tiers,
//! node-local pools, federation and the layout-management status.

mod federation;
mod gateway;
mod lenient;
mod spec;
mod status;
mod storage;

pub use federation::*;
pub use gateway::*;
pub use spec::*;
pub use status::*;
pub use storage::*;

impl GarageCluster {
    /// The deletion policy in effect: the explicit value, else `Drain` for a federated site
    /// (non-empty `remoteClusters`), else `Destroy`.
    pub fn effective_deletion_policy(&self) -> crate::garage_cluster::common::DeletionPolicy {
        use crate::garage_cluster::common::DeletionPolicy;
        self.spec.deletion_policy.unwrap_or(
            if self
                .spec
                .remote_clusters
                .as_ref()
                .is_some_and(|r| !r.is_empty())
            {
                DeletionPolicy::Drain
            } else {
                DeletionPolicy::Destroy
            },
        )
    }
}
