//! Node-local pools (`spec.storage.nodeLocalPools`): one Garage identity per selected
//! Kubernetes Node on HostPath disks, run by one DaemonSet per pool. Every decision about them
//! is here; the reconciler's `controller::pools` carries them out.
//!
//! - [`plan`]: the pools' plan for one pass: activation labels, DaemonSets, gated pods to
//!   start, members to create or retire, the identities to record, `NodeLocalPoolsReady`.
//! - [`blockers`]: what keeps the pools from being ready, and the condition it gives.
//! - [`pins`]: the identity a new member must prove (cold recovery).
//! - [`membership`]: which Nodes belong to which pool, and when a pool pod may start.
//! - [`capability`]: whether the control plane keeps and honours scheduling gates.
//!
//! The pool DaemonSet, its config revision and its members' GarageNodes are rendered in
//! [`crate::desired::pool`], beside every other object the reconciler owns, so that one
//! module holds the rendering rules (labels, owner references, hashes) they all share.

pub mod blockers;
pub mod capability;
pub mod membership;
pub mod pins;
pub mod plan;
