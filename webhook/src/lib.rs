//! The webhook appliance of garage-operator: pure rules that the HTTPS adapter serves.
//!
//! Today it holds [`convert`], the GarageCluster v1beta1 <-> v1beta2 conversion. Admission and
//! defaulting rules, the HTTPS server and the CLI join it later; each stays a pure function of its
//! input so that it is tested without an API server.

pub mod admission;
pub mod convert;
