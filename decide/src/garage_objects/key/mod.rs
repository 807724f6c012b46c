//! The GarageKey decisions: the plan of a pass ([`plan`]: the ordered Garage operations, the
//! write-ahead status records, the credentials Secret, the status and the outcome), the key
//! material a derived key gets ([`material`]) and which secret it derives from
//! ([`derivation`]), and the credentials Secret rendered from its template ([`secret`]). The reconciler's observe derives and reads what [`plan::Observed`]
//! holds, and its act runs the plan.

pub mod derivation;
pub mod material;
pub mod plan;
pub mod secret;
