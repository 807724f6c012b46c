//! Types that several kinds share: references to clusters and Secrets,
//! logging and maintenance settings, public endpoints and shared enums.

mod enums;
mod network;
mod spec;

pub use enums::*;
pub use network::*;
pub use spec::*;
