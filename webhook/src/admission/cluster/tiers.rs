//! Tier predicates of a v1beta2 GarageCluster:
//! which tiers exist, which policies are in effect and which groups the
//! operator manages. Every rule reads shapes through these so the
//! definitions live once.

use shared_types::garage_cluster::common::LayoutPolicy;
use shared_types::garage_cluster::v1beta2::{GarageClusterSpec, NodeLocalPoolSpec, StorageSpec};

/// CRD default of `spec.storage.replicas`: the API server writes it before
/// admission, so an absent value only occurs for objects that were never
/// defaulted; they mean "create the default group".
pub const DEFAULT_STORAGE_REPLICAS: i32 = 3;
/// CRD default of `spec.gateway.replicas`.
pub const DEFAULT_GATEWAY_REPLICAS: i32 = 2;
/// Most replicas of an operator-managed group (GC-C15).
pub const MAX_REPLICAS: i32 = 50;

/// Read-only view of a v1beta2 spec with the predicates the rules share.
#[derive(Clone, Copy, Debug)]
pub struct Shape<'a> {
    /// The spec under view.
    pub spec: &'a GarageClusterSpec,
}

impl<'a> Shape<'a> {
    /// Views `spec`.
    pub fn of(spec: &'a GarageClusterSpec) -> Self {
        Shape { spec }
    }

    /// `spec.storage`.
    pub fn storage(&self) -> Option<&'a StorageSpec> {
        self.spec.storage.as_ref()
    }

    /// Whether a gateway tier is declared.
    pub fn has_gateway(&self) -> bool {
        self.spec.gateway.is_some()
    }

    /// connectTo only: a handle onto a Garage cluster run elsewhere.
    pub fn is_handle(&self) -> bool {
        self.spec.connect_to.is_some() && self.spec.storage.is_none() && self.spec.gateway.is_none()
    }

    /// gateway + connectTo without storage.
    pub fn is_edge_gateway(&self) -> bool {
        self.spec.gateway.is_some() && self.spec.connect_to.is_some() && self.spec.storage.is_none()
    }

    /// `spec.layoutPolicy` (Auto when unset).
    pub fn cluster_policy(&self) -> LayoutPolicy {
        self.spec.layout_policy.unwrap_or(LayoutPolicy::Auto)
    }

    /// `spec.storage.layoutPolicy`, else `spec.layoutPolicy`, else Auto.
    pub fn storage_policy(&self) -> LayoutPolicy {
        self.storage()
            .and_then(|s| s.layout_policy)
            .unwrap_or_else(|| self.cluster_policy())
    }

    /// `spec.storage.replicas` (0 without storage).
    pub fn storage_replicas(&self) -> i32 {
        self.storage()
            .map_or(0, |s| s.replicas.unwrap_or(DEFAULT_STORAGE_REPLICAS))
    }

    /// `spec.gateway.replicas` (0 without gateway).
    pub fn gateway_replicas(&self) -> i32 {
        self.spec
            .gateway
            .as_ref()
            .map_or(0, |g| g.replicas.unwrap_or(DEFAULT_GATEWAY_REPLICAS))
    }

    /// Storage with replicas under an Auto storage policy: the operator runs
    /// the default StatefulSet/PVC group.
    pub fn managed_default_pool(&self) -> bool {
        self.storage().is_some()
            && self.storage_replicas() > 0
            && self.storage_policy() != LayoutPolicy::Manual
    }

    /// Gateway with replicas under an Auto cluster policy.
    pub fn managed_gateway(&self) -> bool {
        self.has_gateway()
            && self.gateway_replicas() > 0
            && self.cluster_policy() != LayoutPolicy::Manual
    }

    /// The declared node-local pools.
    pub fn pools(&self) -> &'a [NodeLocalPoolSpec] {
        self.storage()
            .and_then(|s| s.node_local_pools.as_deref())
            .unwrap_or_default()
    }

    /// Whether at least one pool is declared.
    pub fn has_pools(&self) -> bool {
        !self.pools().is_empty()
    }

    /// Storage replicas plus gateway replicas.
    pub fn total_replicas(&self) -> i32 {
        self.storage_replicas() + self.gateway_replicas()
    }

    /// Whether `spec.remoteClusters` is non-empty.
    pub fn federated(&self) -> bool {
        self.spec
            .remote_clusters
            .as_ref()
            .is_some_and(|r| !r.is_empty())
    }
}
