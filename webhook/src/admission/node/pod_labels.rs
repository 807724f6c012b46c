//! Pod label ownership (SH-13) for GarageNode `spec.podLabels`: strict on
//! create, grandfathering unchanged legacy labels on update.
//!
//! Private stand-in for the shared helper in `admission/shared`.

use super::Finding;
use super::grammar::{is_label_value, is_qualified_name};
use shared_types::keys::label::RESERVED_POD_LABELS;
use std::collections::BTreeMap;

fn reserved(key: &str) -> bool {
    RESERVED_POD_LABELS.contains(&key)
}

fn valid(key: &str, value: &str) -> bool {
    is_qualified_name(key) && is_label_value(value)
}

/// SH-13 strict: every label valid and none reserved.
pub fn check_strict(field: &str, labels: &BTreeMap<String, String>) -> Option<Finding> {
    for (key, value) in labels {
        if !is_qualified_name(key) {
            return Some(Finding::new(
                field,
                format!("invalid key {key:?}: use a qualified label key"),
            ));
        }
        if !is_label_value(value) {
            return Some(Finding::new(
                field,
                format!(
                    "invalid value {value:?} for key {key:?}: use at most 63 alphanumerics, '-', '_' or '.'"
                ),
            ));
        }
        if reserved(key) {
            return Some(Finding::new(
                field,
                format!("{key:?} is operator-managed and cannot be overridden; remove it"),
            ));
        }
    }
    None
}

/// Outcome of the update check: labels the renderer keeps, and warnings.
pub struct Retained {
    /// Non-reserved, syntactically valid labels (what the validation copy keeps).
    pub kept: BTreeMap<String, String>,
    /// Warnings about unchanged legacy labels.
    pub warnings: Vec<String>,
}

/// SH-13 update: reserved or invalid labels may only stay unchanged; removal
/// is always allowed.
pub fn check_update(
    field: &str,
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> Result<Retained, Finding> {
    let mut legacy_reserved = Vec::new();
    let mut legacy_invalid = Vec::new();
    let mut kept = BTreeMap::new();
    for (key, value) in new {
        let unchanged = old.get(key) == Some(value);
        if reserved(key) {
            if !unchanged {
                return Err(Finding::new(
                    field,
                    format!(
                        "operator-managed label {key:?} cannot be introduced or changed; remove it"
                    ),
                ));
            }
            legacy_reserved.push(key.clone());
            continue;
        }
        if !valid(key, value) {
            if !unchanged {
                return Err(Finding::new(
                    field,
                    format!(
                        "invalid label {key:?}={value:?} cannot be introduced or changed; use a valid label key and value"
                    ),
                ));
            }
            legacy_invalid.push(key.clone());
            continue;
        }
        kept.insert(key.clone(), value.clone());
    }
    let mut warnings = Vec::new();
    if !legacy_reserved.is_empty() {
        warnings.push(format!(
            "{field} contains unchanged legacy operator-managed labels ({}); the values are ignored by rendered workloads and should be removed",
            legacy_reserved.join(", ")
        ));
    }
    if !legacy_invalid.is_empty() {
        warnings.push(format!(
            "{field} contains unchanged legacy invalid labels ({}); they are ignored by rendered workloads and should be removed",
            legacy_invalid.join(", ")
        ));
    }
    Ok(Retained { kept, warnings })
}
