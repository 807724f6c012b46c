//! Enumeration of the ways Garage nodes can be exposed to peers in other Kubernetes clusters.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Mechanism used to make Garage RPC endpoints reachable from outside the Kubernetes
/// cluster. Only `LoadBalancer` and `NodePort` are accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum PublicEndpointType {
    /// Expose RPC through Services of type LoadBalancer.
    LoadBalancer,
    /// Expose RPC on ports of the Kubernetes nodes, one port per Garage pod.
    NodePort,
    /// Explicitly mapped external addresses. Listed for compatibility; rejected.
    ExternalIP,
    /// Pod addresses published through a headless Service. Listed for compatibility; rejected.
    Headless,
}
