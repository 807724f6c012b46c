//! What a generated Secret may carry (GK-IK, GK-ST, AT-C5): data keys valid for a Secret or
//! ConfigMap (`IsConfigMapKey`), and labels and annotations the API server accepts on it.

use std::collections::BTreeMap;

use super::Problem;
use super::names::{is_dns1123_subdomain, is_label_value, is_qualified_name};

/// A Secret data key: 1 to 253 letters, digits, `-`, `_` or `.`, neither `.` nor `..`, not
/// starting with `..`.
pub fn is_data_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 253
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && key != "."
        && !key.starts_with("..")
}

/// The problem with `key` as the Secret data key set at `field`, if any.
pub fn check_data_key(field: &str, key: &str) -> Option<Problem> {
    (!is_data_key(key)).then(|| {
        Problem::new(
            field,
            format!(
                "{key:?} is not a valid Secret data key: use 1 to 253 letters, digits, '-', '_' or '.', not '.' or '..' and not starting with '..'"
            ),
        )
    })
}

/// The metadata a template at `field` (e.g. `spec.secretTemplate`) gives a generated Secret:
/// its `name`, when set, a DNS-1123 subdomain; its labels and annotations as
/// [`check_secret_metadata`].
pub fn check_secret_template(
    field: &str,
    name: Option<&str>,
    labels: Option<&BTreeMap<String, String>>,
    annotations: Option<&BTreeMap<String, String>>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    if let Some(name) = name.filter(|n| !n.is_empty() && !is_dns1123_subdomain(n)) {
        out.push(Problem::new(
            format!("{field}.name"),
            format!("secretTemplate.name {name:?} is invalid: use a lower-case DNS subdomain name for the generated Secret"),
        ));
    }
    out.extend(check_secret_metadata(field, labels, annotations));
    out
}

/// Labels and annotations of a generated Secret, under `field` (e.g. `spec.secretTemplate`):
/// label keys and annotation keys must be qualified names, label values valid label values.
pub fn check_secret_metadata(
    field: &str,
    labels: Option<&BTreeMap<String, String>>,
    annotations: Option<&BTreeMap<String, String>>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    for (key, value) in labels.into_iter().flatten() {
        if !is_qualified_name(key) {
            out.push(Problem::new(
                format!("{field}.labels"),
                format!(
                    "label key {key:?} is invalid: use a qualified name such as example.com/team"
                ),
            ));
        } else if !is_label_value(value) {
            out.push(Problem::new(
                format!("{field}.labels"),
                format!("value {value:?} of label {key:?} is invalid: use at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit"),
            ));
        }
    }
    for key in annotations.into_iter().flatten().map(|(k, _)| k) {
        if !is_qualified_name(key) {
            out.push(Problem::new(
                format!("{field}.annotations"),
                format!("annotation key {key:?} is invalid: use a qualified name such as example.com/note"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_keys_follow_is_config_map_key() {
        for ok in [
            "access-key-id",
            "AWS_ACCESS_KEY_ID",
            ".dotfile",
            "a.b",
            &"k".repeat(253),
        ] {
            assert!(is_data_key(ok), "{ok}");
        }
        for bad in ["", ".", "..", "..x", "bad key", "a/b", &"k".repeat(254)] {
            assert!(!is_data_key(bad), "{bad}");
        }
    }

    #[test]
    fn secret_metadata_keys_and_values() {
        let labels = BTreeMap::from([
            ("app".to_owned(), "ok".to_owned()),
            ("bad key".to_owned(), "v".to_owned()),
            ("team".to_owned(), "not valid!".to_owned()),
        ]);
        let annotations = BTreeMap::from([("no spaces allowed".to_owned(), String::new())]);
        let problems =
            check_secret_metadata("spec.secretTemplate", Some(&labels), Some(&annotations));
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].message.contains("\"bad key\""));
        assert!(problems[1].message.contains("\"not valid!\""));
        assert_eq!(problems[2].field, "spec.secretTemplate.annotations");
    }
}
