//! Enumerations shared by several Garage resources: volume kinds and the lifecycle phases
//! reported in resource status.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Kind of Kubernetes volume that backs a Garage directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum VolumeType {
    /// A PersistentVolumeClaim, so contents survive pod restarts and rescheduling.
    PersistentVolumeClaim,
    /// A pod-local scratch volume whose contents are lost when the pod goes away.
    EmptyDir,
}

/// Coarse lifecycle state reported in the status of a GarageCluster or GarageNode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ClusterPhase {
    /// Accepted, but work has not started or is waiting on a prerequisite.
    Pending,
    /// Kubernetes and Garage resources are being set up for the first time.
    Creating,
    /// Processes are up, but the resource is not yet fully ready.
    Running,
    /// Fully reconciled and healthy.
    Ready,
    /// Serving, but with reduced health, such as unreachable nodes or partitions without
    /// full replication.
    Degraded,
    /// A change to the spec is being rolled out.
    Updating,
    /// Deletion is in progress and cleanup is running.
    Deleting,
    /// Reconciliation hit an error it cannot get past without intervention.
    Failed,
    /// The state could not be determined.
    Unknown,
}

/// Lifecycle state reported in the status of a GarageKey or GarageAdminToken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum KeyPhase {
    /// Accepted, but not yet processed or waiting on a prerequisite such as the cluster.
    Pending,
    /// The credential is being created.
    Creating,
    /// The credential exists and its Secret is up to date.
    Ready,
    /// Deletion is in progress.
    Deleting,
    /// The last attempt to reconcile the credential failed.
    Failed,
    /// The configured expiry time has passed; the credential is not rotated or deleted
    /// automatically.
    Expired,
    /// The state could not be determined.
    Unknown,
}
