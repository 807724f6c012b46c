//! SH-13 pod label ownership, SH-14 reserved layout tag prefixes and the
//! reserved pool pod annotations (GC-C21.17).

use std::collections::BTreeMap;

use shared_types::keys::annotation::{
    ANNOTATION_CONFIG_HASH, ANNOTATION_NODE_ID, ANNOTATION_NODE_LOCAL_POOL_ACTIVATION_LABEL,
    ANNOTATION_POD_SPEC_HASH,
};
use shared_types::keys::label::{LABEL_KUBERNETES_NODE, RESERVED_POD_LABELS};
use shared_types::keys::tag::RESERVED_TAG_PREFIXES;

use super::Problem;
use super::names::{is_label_value, is_qualified_name};

/// SH-13 (create): every key a qualified name, every value a label value,
/// no operator-managed key.
pub fn check_pod_labels(field: &str, labels: Option<&BTreeMap<String, String>>) -> Vec<Problem> {
    let mut out = Vec::new();
    for (k, v) in labels.into_iter().flatten() {
        if !is_qualified_name(k) {
            out.push(Problem::new(
                field,
                format!("invalid key {k:?}: use a qualified label name"),
            ));
        } else if !is_label_value(v) {
            out.push(Problem::new(
                field,
                format!("invalid value {v:?} for label {k:?}"),
            ));
        } else if RESERVED_POD_LABELS.contains(&k.as_str()) {
            out.push(Problem::new(
                field,
                format!("{k:?} is operator-managed and cannot be overridden; remove it"),
            ));
        }
    }
    out
}

/// SH-13 (update): a reserved or syntactically invalid label may only stay
/// exactly as it was; anything new must pass the strict rules. Returns the
/// problems and the warnings for tolerated legacy labels.
pub fn check_pod_labels_update(
    field: &str,
    old: Option<&BTreeMap<String, String>>,
    new: Option<&BTreeMap<String, String>>,
) -> (Vec<Problem>, Vec<String>) {
    let mut problems = Vec::new();
    let (mut legacy_reserved, mut legacy_invalid) = (Vec::new(), Vec::new());
    for (k, v) in new.into_iter().flatten() {
        let unchanged = old.and_then(|o| o.get(k)) == Some(v);
        // Ownership first: a reserved key with a bad value is still the
        // operator's label, and is reported as such.
        if RESERVED_POD_LABELS.contains(&k.as_str()) {
            if unchanged {
                legacy_reserved.push(k.clone());
            } else {
                problems.push(Problem::new(
                    field,
                    format!(
                        "operator-managed label {k:?} cannot be introduced or changed; remove it"
                    ),
                ));
            }
        } else if !is_qualified_name(k) || !is_label_value(v) {
            if unchanged {
                legacy_invalid.push(k.clone());
            } else {
                problems.push(Problem::new(
                    field,
                    format!(
                        "invalid label {k:?}={v:?} cannot be introduced or changed; use a valid label key and value"
                    ),
                ));
            }
        }
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
    (problems, warnings)
}

/// The pod labels rendered workloads carry: valid and not operator-managed.
/// After [`check_pod_labels_update`] found no problem, the rest are the
/// tolerated legacy labels, which are ignored.
pub fn renderable_pod_labels(labels: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    labels
        .iter()
        .filter(|(k, v)| {
            is_qualified_name(k) && is_label_value(v) && !RESERVED_POD_LABELS.contains(&k.as_str())
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// SH-14: no default node tag may use an operator-owned prefix.
pub fn check_node_tags(field: &str, tags: Option<&Vec<String>>) -> Vec<Problem> {
    let mut out = Vec::new();
    for (i, t) in tags.into_iter().flatten().enumerate() {
        if let Some(prefix) = RESERVED_TAG_PREFIXES.iter().find(|p| t.starts_with(*p)) {
            out.push(Problem::new(
                format!("{field}[{i}]"),
                format!(
                    "{t:?} uses operator-managed prefix {prefix:?}; configure ownership, tier, pool, and RPC address through their typed fields"
                ),
            ));
        }
    }
    out
}

/// Pod annotation keys the operator writes on pool pods.
pub const RESERVED_POOL_POD_ANNOTATIONS: &[&str] = &[
    ANNOTATION_CONFIG_HASH,
    ANNOTATION_NODE_ID,
    ANNOTATION_POD_SPEC_HASH,
    LABEL_KUBERNETES_NODE,
    ANNOTATION_NODE_LOCAL_POOL_ACTIVATION_LABEL,
];

/// GC-C21.17: pool pod annotation keys are qualified names and not
/// operator-managed.
pub fn check_pool_pod_annotations(
    field: &str,
    annotations: Option<&BTreeMap<String, String>>,
) -> Vec<Problem> {
    let mut out = Vec::new();
    for k in annotations.into_iter().flatten().map(|(k, _)| k) {
        if !is_qualified_name(k) {
            out.push(Problem::new(
                field,
                format!("invalid key {k:?}: use a qualified annotation name"),
            ));
        } else if RESERVED_POOL_POD_ANNOTATIONS.contains(&k.as_str()) {
            out.push(Problem::new(
                field,
                format!("{k:?} is operator-managed and cannot be overridden; remove it"),
            ));
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn reserved_and_invalid_labels_on_create() {
        let p = check_pod_labels(
            "f",
            Some(&map(&[("garage.rajsingh.info/storage-group", "x")])),
        );
        assert!(p[0].message.contains("operator-managed"));
        let p = check_pod_labels("f", Some(&map(&[("not a label", "x")])));
        assert!(p[0].message.contains("invalid key"));
        assert!(check_pod_labels("f", Some(&map(&[("team", "storage")]))).is_empty());
    }

    #[test]
    fn legacy_labels_survive_only_unchanged() {
        let old = map(&[("garage.rajsingh.info/tier", "x"), ("bad key", "v")]);
        let (p, w) = check_pod_labels_update("f", Some(&old), Some(&old));
        assert!(p.is_empty());
        assert_eq!(w.len(), 2);
        let changed = map(&[("garage.rajsingh.info/tier", "y")]);
        assert_eq!(
            check_pod_labels_update("f", Some(&old), Some(&changed))
                .0
                .len(),
            1
        );
        let bad_changed = map(&[("bad key", "w")]);
        assert_eq!(
            check_pod_labels_update("f", Some(&old), Some(&bad_changed))
                .0
                .len(),
            1
        );
        let (p, w) = check_pod_labels_update("f", Some(&old), Some(&map(&[("team", "a")])));
        assert!(p.is_empty() && w.is_empty());
    }

    #[test]
    fn reserved_tag_prefixes() {
        for t in [
            "cluster:other/ns",
            "cluster-uid:forged",
            "tier:gateway",
            "rpc-address:other.example:3901",
            "node-local-pool:other",
            "kubernetes-node:worker-9",
        ] {
            assert_eq!(
                check_node_tags("f", Some(&vec![t.to_string()])).len(),
                1,
                "{t}"
            );
        }
        assert!(check_node_tags("f", Some(&vec!["rack:a".into(), "media:nvme".into()])).is_empty());
    }
}
