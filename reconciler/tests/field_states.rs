//! Every field of every served version of the six kinds, and every annotation constant, is in
//! exactly one state, recorded in `docs/compatibility/field-states.yaml`: acted on, refused,
//! a no-op (only where the Go operator also ignores it) or, for now, a gap. This test keeps the
//! file true to the CRDs, the annotation constants and the code:
//!
//! - every field path of `crds/` (see [`schema`] for how paths are cut) and every constant of
//!   `shared-types/src/keys/annotation.rs` has an entry, and every entry names something that
//!   exists;
//! - an **acted on** field is read in `reconciler/src` (and `decide/src` when it exists): the
//!   Rust name of every segment of its path (`spec.storage.replicas`: `storage` and `replicas`)
//!   appears as a field access or a struct pattern field, or inside the body of the
//!   shared-types function the entry names in `via`, which the reconciler calls. A status
//!   field is acted on when every segment after `status` is written (a struct literal field or
//!   an assignment). An acted-on annotation's constant is named in that code (or in its `via`
//!   function);
//! - a **refused** entry names a rule ID of `docs/admission-rules.md`, or `Unsupported` and its
//!   path is the start of a message the reconciler reports as `Unsupported`;
//! - a **gap** is not read by every name (else it is probably acted on; `read_elsewhere`
//!   records a confirmed exception);
//! - the **gaps** are printed with their count and must be the list in
//!   `docs/compatibility.md`.
//!
//! The code check is coarse: a name read anywhere counts, whatever struct it belongs to, so it
//! finds a field nothing reads, not a field that is read for the wrong purpose. Test code
//! (`#[cfg(test)]`, `tests.rs`, `*_tests.rs`, `fixtures.rs`, `test_support.rs`) does not count.
//!
//! `cargo test -p reconciler --test field_states -- --nocapture` prints the gap list.

// Test code: a panic is a failed check with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

// A test target's root resolves modules beside it; these live in `field_states/`.
#[path = "field_states/checks.rs"]
mod checks;
#[path = "field_states/entries.rs"]
mod entries;
#[path = "field_states/schema.rs"]
mod schema;
#[path = "field_states/serde_names.rs"]
mod serde_names;
#[path = "field_states/source.rs"]
mod source;

use std::path::PathBuf;

use entries::State;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fail_on(problems: Vec<String>, what: &str) {
    assert!(
        problems.is_empty(),
        "{} {what} (docs/compatibility/field-states.yaml):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn every_field_and_annotation_has_one_entry_and_every_entry_exists() {
    let world = checks::World::load();
    fail_on(world.coverage_problems(), "coverage problems");
}

#[test]
fn acted_on_entries_are_read_by_the_reconciler() {
    let world = checks::World::load();
    fail_on(world.acted_problems(), "entries marked acted on are not");
}

#[test]
fn refused_and_no_op_entries_give_their_rule_or_reason() {
    let world = checks::World::load();
    fail_on(
        world.refusal_problems(),
        "refused or no-op entries without a valid ground",
    );
}

#[test]
fn the_gaps_are_listed_and_match_the_compatibility_page() {
    let world = checks::World::load();
    let gaps = world.gap_lines();
    println!("{} gaps (admitted and ignored today):", gaps.len());
    for line in &gaps {
        println!("{line}");
    }
    for state in [State::Acted, State::Refused, State::NoOp, State::Gap] {
        let (paths, entries) = world.count(state);
        println!("{state:?}: {paths} schema paths and annotations, {entries} entries");
    }
    let page = std::fs::read_to_string(repo().join("docs/compatibility.md")).expect("page");
    let listed = checks::listed_gaps(&page);
    let missing: Vec<_> = gaps.iter().filter(|g| !listed.contains(g)).collect();
    let extra: Vec<_> = listed.iter().filter(|g| !gaps.contains(g)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "the gap list in docs/compatibility.md (between the field-states markers) differs from \
         docs/compatibility/field-states.yaml (`-- --nocapture` prints the whole list).\n\
         missing from the page:\n{}\nnot gaps in the file:\n{}",
        lines(&missing),
        lines(&extra)
    );
}

#[test]
fn no_gap_is_read_by_the_reconciler() {
    let world = checks::World::load();
    fail_on(
        world.read_gaps(),
        "gaps whose every name the reconciler reads: classify them acted on, or confirm by \
         reading the code and keep them",
    );
}

fn lines(items: &[&String]) -> String {
    items
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}
