//! What the fuzz targets of the reconciler and the Admin API client share: JSON documents in the shape of Garage's answers
//! ([`json`]), objects read from the fuzz input the way the API server would hand them over
//! ([`input`]), the observed world of a GarageCluster built from fuzz bytes ([`world`]), and
//! the facts about a world the invariants are stated in ([`facts`]).

pub mod facts;
pub mod input;
pub mod json;
pub mod world;
