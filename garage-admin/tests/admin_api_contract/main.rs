//! Contract tests of the Admin API client against real `garage` processes (the pinned 2.5.0
//! binary, started by `garage-fixture`). A missing binary fails the tests: run
//! `cargo xtask tools`.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod blocks;
mod buckets_keys;
mod common;
mod failures;
mod layout;
