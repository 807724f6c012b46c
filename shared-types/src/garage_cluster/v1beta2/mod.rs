//! GarageCluster v1beta2, the storage version: storage and gateway tiers,
//! node-local pools, federation and the layout-management status.

mod federation;
mod gateway;
mod lenient;
mod spec;
mod status;
mod storage;

pub use federation::*;
pub use gateway::*;
pub use spec::*;
pub use status::*;
pub use storage::*;
