//! garage-operator's decisions, with no I/O: every function here is a function of what a
//! controller observed, so each is table-tested without an API server or a Garage process.
//! The `reconciler` crate reads the API server and Garage (observe), calls these (decide) and
//! writes what they return (act). This crate's dependencies hold no Kubernetes client, async
//! runtime or HTTP stack, which `xtask/tests/pure_crates.rs` checks.
//!
//! - [`desired`]: builders from a GarageCluster to the objects the reconciler owns.
//! - [`layout`]: the layout planner ([`layout::plan_layout`]).
//! - [`machine`]: multi-step transactions as steps (drain, storage rollout, teardown).
//! - [`cluster`], [`node`]: the GarageCluster and GarageNode decisions, and what they are
//!   decided from ([`cluster::observed`], [`node::observed`]).
//! - [`pools`]: every decision about node-local pools.
//! - [`garage_objects`]: the plans of the GarageKey, GarageBucket and GarageAdminToken
//!   controllers, and the key-to-bucket grants they compute from ([`garage_objects::access`]).
//! - [`ownership`]: which install manages a GarageCluster.
//! - [`patch_holds`]: whether a live object already holds what a patch would write (drift).
//! - [`suspension`]: whether the user paused a cluster or a node, and what it says.
//! - [`zone`]: a member's layout zone, from `spec.zone` or its Kubernetes Node's label.
//! - [`config`], [`conditions`], [`note`], [`finalizers`], [`pods`], [`names`]: the timing,
//!   conditions, Events, finalizer lists, pod facts and object names the decisions share.

pub mod cluster;
pub mod conditions;
pub mod config;
pub mod desired;
pub mod finalizers;
pub mod garage_objects;
pub mod layout;
pub mod machine;
pub mod names;
pub mod node;
pub mod note;
pub mod ownership;
pub mod patch_holds;
pub mod pods;
pub mod pools;
pub mod suspension;
pub mod zone;

#[cfg(any(test, feature = "test-support"))]
pub mod fixtures;

pub use config::Config;
