//! garage-reconciler: the controllers that run Garage on Kubernetes, and the Garage Admin API
//! client they drive it through.
//!
//! - [`desired`]: pure builders from a GarageCluster to the objects the reconciler owns.
//! - [`layout`]: the pure layout planner ([`layout::plan_layout`]).
//! - [`controller`]: the kube-runtime controllers: observe, decide (pure), act.
//! - [`machine`]: multi-step transactions as pure steps (teardown).
//! - [`leader`]: leader election on a Lease; the controllers run only while it is held.
//! - [`rbac`]: the Kubernetes API access the reconciler needs, row by row; the chart grants
//!   exactly that.
//! - [`garage`]: the typed Admin API v2 client (the `garage-admin` crate).

pub mod controller;
pub mod desired;
pub mod layout;
pub mod leader;
pub mod machine;
pub mod names;
pub mod rbac;

pub use garage_admin as garage;
