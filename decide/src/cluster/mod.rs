//! The GarageCluster decision and its parts: from what one pass observed ([`observed`]) to
//! the objects to ensure, the Auto members to create, the peers to reconnect, the one layout
//! change of the pass, the drain and rollout steps, the status and conditions
//! ([`decision::decide`]). The reconciler's GarageCluster controller observes, calls
//! [`decision::decide`] and acts.

pub mod capacity;
pub mod cycle;
pub mod decision;
pub mod edge;
pub mod expansion;
pub mod factor;
mod garage_facts;
pub mod gateways;
pub mod go_token;
pub mod handle;
pub mod health;
pub mod layout_status;
pub mod legacy;
pub mod legacy_env;
pub mod member_status;
pub mod members;
pub mod observed;
pub mod operations;
mod pool_members;
mod readiness;
pub mod recovery;
pub mod removal;
mod rendered;
mod reported;
pub mod rollout;
mod rollout_pass;
mod stale_configs;
pub mod status;
pub mod storage_stats;
pub mod tombstones;
mod volume_attributes;
pub mod workers;

#[cfg(test)]
mod tests;
