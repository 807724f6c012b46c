//! Node-local pools (`spec.storage.nodeLocalPools`): one Garage identity per selected
//! Kubernetes Node on HostPath disks, run by one DaemonSet per pool.
//!
//! This version proves the control-plane capability pools rest on ([`probe`]); the pools
//! themselves are still reported `Unsupported` by the cluster controller.

pub mod membership;
pub mod probe;
