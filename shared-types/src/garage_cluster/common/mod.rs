//! GarageCluster types identical in v1beta1 and v1beta2: the Garage daemon
//! settings, API endpoints, volumes and most of the status.

mod apis;
mod discovery;
mod enums;
mod federation;
mod network;
mod settings;
mod status;
mod volumes;

pub use apis::*;
pub use discovery::*;
pub use enums::*;
pub use federation::*;
pub use network::*;
pub use settings::*;
pub use status::*;
pub use volumes::*;
