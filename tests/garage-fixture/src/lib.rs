//! A test fixture that runs 1 to 5 real `garage` processes on distinct 127.0.0.x addresses.
//!
//! Each node has its own directory under a temporary root, its own address (so the RPC, S3,
//! web and Admin ports are the same on every node), the cluster's shared `rpc_secret` and
//! `admin_token`. Nodes can be killed with SIGKILL and restarted on the same data; every
//! process is killed when the cluster is dropped.
//!
//! The fixture bootstraps through a minimal HTTP client of its own (see [`http`]); the Admin
//! API client under test is never part of the scaffolding.
//!
//! ```no_run
//! # fn main() -> Result<(), garage_fixture::FixtureError> {
//! let mut cluster = garage_fixture::GarageCluster::start(garage_fixture::ClusterOptions::new(3))?;
//! cluster.connect_all()?;
//! println!("{}", cluster.admin_endpoint(0));
//! # Ok(()) }
//! ```

mod addr;
pub mod binary;
mod cluster;
pub mod config;
mod error;
pub mod http;
pub mod metadata;
mod process;
pub mod s3;

pub use binary::{PINNED_GARAGE_VERSION, admin_api_schema, garage_binary};
pub use cluster::{ClusterOptions, GarageCluster, MAX_NODES};
pub use error::FixtureError;
/// Signals for [`GarageCluster::signal`].
pub use nix::sys::signal::Signal;
