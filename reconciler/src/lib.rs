//! garage-reconciler: the controllers that run Garage on Kubernetes, and the Garage Admin API
//! client they drive it through.

pub mod garage;
