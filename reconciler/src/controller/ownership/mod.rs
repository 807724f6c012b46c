//! The ownership gate: where every controller meets the decision of which install manages a
//! GarageCluster ([`decide::ownership`]). The GarageCluster controller records this install's
//! claim; every controller stops, and warns once, where another install manages the cluster.

pub mod gate;
#[cfg(test)]
mod tests;

pub use gate::{Admission, Resolved, admit, resolve};
