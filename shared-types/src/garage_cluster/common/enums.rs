//! Policy enumerations shared by the GarageCluster API versions: how the layout is managed
//! and what happens to Garage state when a cluster is deleted.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the operator does with this cluster's Garage layout when the GarageCluster is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum DeletionPolicy {
    /// Tear down the whole object store together with the resource. Claims are cleaned up
    /// according to the PVC retention policy; HostPath data is never removed.
    Destroy,
    /// Retire this site from a federated layout that survives it: deletion waits until its
    /// roles have moved elsewhere and the layout history has settled.
    Drain,
}

/// Who decides the Garage node set and layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum LayoutPolicy {
    /// The operator generates GarageNodes and manages their layout roles itself.
    Auto,
    /// The user creates the GarageNode resources; the operator does not generate them. Once
    /// chosen, switching back to Auto is not allowed.
    Manual,
}
