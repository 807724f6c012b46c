//! garage-reconciler: the controllers that run Garage on Kubernetes, and the Garage Admin API
//! client they drive it through. Each pass observes (reads the API server and Garage), decides
//! (the `decide` crate, which has no I/O) and acts (writes).
//!
//! - [`controller`]: the kube-runtime controllers: observe and act, around the decisions of
//!   [`decide`].
//! - [`leader`]: leader election on a Lease; the controllers run only while it is held.
//! - [`rbac`]: the Kubernetes API access the reconciler needs, row by row; the chart grants
//!   exactly that.
//! - [`garage`]: the typed Admin API v2 client (the `garage-admin` crate).

pub mod controller;
pub mod leader;
pub mod rbac;

pub use garage_admin as garage;

// The builders, the layout planner, the transactions and the object names moved to the
// `decide` crate, which holds every decision without I/O. They are re-exported under their
// old paths because the reconciler's observe and act code, and the fuzz targets, name them
// that way.
pub use decide::{desired, layout, machine, names};
