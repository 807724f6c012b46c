//! GarageCluster conversion between v1beta1 (served, deprecated) and v1beta2 (the hub and storage
//! version), as the API server asks for it through a ConversionReview (`CONV-*`).
//!
//! Everything here is a pure function: [`to_v1beta2`] and [`to_v1beta1`] convert typed objects,
//! [`convert_review`] answers a whole ConversionReview, and [`annotations`] holds the reserved
//! transport annotations and the 256 KiB budget that admission also checks. Deliberate
//! differences from the Go operator are listed under "Conversion" in docs/compatibility.md.

pub mod annotations;
mod decode;
mod error;
mod from_hub;
mod pod;
mod review;
mod status;
mod to_hub;

pub use decode::{decode_v1beta1, decode_v1beta2, repair_leaked_replicas};
pub use error::ConvertError;
pub use from_hub::to_v1beta1;
pub use review::{GROUP, KIND, V1ALPHA1, V1BETA1, V1BETA2, convert_object, convert_review};
pub use to_hub::to_v1beta2;
