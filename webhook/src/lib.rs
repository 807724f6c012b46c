//! The webhook appliance of garage-operator.
//!
//! - [`admission`]: validation and defaulting rules, pure functions of (operation, old, new,
//!   context);
//! - [`convert`]: GarageCluster v1beta1 <-> v1beta2 conversion, also pure;
//! - [`server`]: the HTTPS adapter (TLS from the `certs` crate, AdmissionReview and
//!   ConversionReview decoding, a live context reader that fails closed, metrics);
//! - [`cli`]: `garage-webhook review` and `convert`, the same rules offline for users' CI.

pub mod admission;
pub mod cli;
pub mod convert;
pub mod server;
