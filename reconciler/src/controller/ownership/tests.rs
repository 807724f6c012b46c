//! The ownership gate against a fake API server that records every request: what one install
//! writes where another manages the cluster (nothing), and that every controller passes the
//! gate.

mod gate;
mod gated_controllers;
