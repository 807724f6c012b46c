//! The classification file, `docs/compatibility/field-states.yaml`, and how its entries
//! cover the schema's paths.

use std::collections::BTreeMap;

use serde::Deserialize;

/// What the operator does with a field or annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Reconciler code reads it (status: writes it).
    Acted,
    /// Admission denies it (`rule` names the rule ID), or the reconciler reports it
    /// `Unsupported` (`rule: Unsupported`).
    Refused,
    /// Accepted and ignored, as the Go operator ignores it.
    NoOp,
    /// Accepted and ignored today although the Go operator acts on it.
    Gap,
}

/// One entry: a field path (or a container, covering every path under it), or an annotation
/// constant.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Its state.
    pub state: State,
    /// What acts on it, which rule refuses it, why it is a no-op, or what is missing.
    pub why: String,
    /// For `refused`: an admission rule ID, or `Unsupported`.
    #[serde(default)]
    pub rule: Option<String>,
    /// For `acted`: a function of shared-types that the reconciler calls and that reads the
    /// field for it (`effective_deletion_policy`).
    #[serde(default)]
    pub via: Option<String>,
    /// For a `gap` whose names the code does use, for something else: where, so that the
    /// coarse check can tell a confirmed gap from an entry that should say `acted`.
    #[serde(default)]
    pub read_elsewhere: Option<String>,
}

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Classification {
    /// Entries per `Kind/version`, keyed by field path.
    pub fields: BTreeMap<String, BTreeMap<String, Entry>>,
    /// Entries keyed by the annotation constant's name.
    pub annotations: BTreeMap<String, Entry>,
}

/// Reads and parses the file; a key written twice in one section is an error (the YAML
/// parser would keep one of them silently, and "exactly one state" would not hold).
pub fn load(path: &std::path::Path) -> Classification {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let twice = duplicate_keys(&text);
    assert!(
        twice.is_empty(),
        "{}: keys given more than once:\n{}",
        path.display(),
        twice.join("\n")
    );
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Keys that occur twice under the same parent, as `parent > key`, found by indentation.
fn duplicate_keys(text: &str) -> Vec<String> {
    let mut parents: Vec<(usize, String)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut twice = Vec::new();
    for line in text.lines() {
        let body = line.trim_start();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let Some((key, _)) = body.split_once(':') else {
            continue;
        };
        let indent = line.len() - body.len();
        parents.retain(|(i, _)| *i < indent);
        let parent = parents.last().map_or("", |(_, k)| k.as_str()).to_owned();
        if !seen.insert((parent.clone(), key.to_owned())) {
            twice.push(format!("{parent} > {key}"));
        }
        parents.push((indent, key.to_owned()));
    }
    twice
}

/// True when entry `key` covers `path`: the same path, or a container above it.
pub fn covers(key: &str, path: &str) -> bool {
    path == key
        || path
            .strip_prefix(key)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with("[]"))
}

/// The entry that classifies `path`: the most specific one that covers it.
pub fn entry_for<'a>(
    entries: &'a BTreeMap<String, Entry>,
    path: &str,
) -> Option<(&'a String, &'a Entry)> {
    entries
        .iter()
        .filter(|(key, _)| covers(key, path))
        .max_by_key(|(key, _)| key.len())
}

/// The JSON property names along `path`, without `[]`.
pub fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('.').map(|s| s.trim_end_matches("[]"))
}
