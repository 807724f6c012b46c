//! GarageKey v1beta1: a Garage S3 access key and its permissions.

mod import_snapshot;
mod legacy;
mod spec;
mod status;

pub use import_snapshot::import_snapshot_secret_name;
pub use spec::*;
pub use status::*;
