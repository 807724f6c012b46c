//! Multi-step transactions, each a pure `step` from its phase and what was observed; the
//! controllers carry each step out.

pub mod drain;
pub mod rollout;
pub mod teardown;
