//! Node-local pools (`spec.storage.nodeLocalPools`), the I/O: the scheduling-gate capability
//! probe ([`probe`]) and carrying out the pools' plan ([`act`]). Every decision about the
//! pools is in [`decide::pools`].

pub mod act;
pub mod probe;
