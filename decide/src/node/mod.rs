//! The GarageNode decision and its parts: from what one pass observed ([`observed`]) to the
//! workload to ensure (StatefulSet and RPC Service), the identity to record, the claims to
//! reserve, grow or give a class, the finalizer and, for a deleting node, whether its workload
//! may stop ([`decision::decide`]). The reconciler's GarageNode controller observes, calls
//! [`decision::decide`] and acts.

pub mod claims;
pub mod decision;
pub mod expansion;
mod finalize;
pub mod observed;
pub mod volumes;

#[cfg(test)]
mod tests;
