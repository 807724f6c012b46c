//! Label selectors evaluated the way the API server evaluates them, for the places that match
//! objects already in hand (Nodes of a pool, namespaces of a grant).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Kubernetes semantics: every `matchLabels` pair and every expression must hold; an empty
/// selector matches every set of labels. A selector the API machinery would refuse to convert
/// (an unknown operator, `In`/`NotIn` without values, `Exists`/`DoesNotExist` with values)
/// matches nothing.
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let convertible = selector.match_expressions.iter().flatten().all(|e| {
        let has_values = e.values.as_ref().is_some_and(|v| !v.is_empty());
        match e.operator.as_str() {
            "In" | "NotIn" => has_values,
            "Exists" | "DoesNotExist" => !has_values,
            _ => false,
        }
    });
    if !convertible {
        return false;
    }
    let labels_ok = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions_ok = selector.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let have = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => have.is_some_and(|h| values.contains(h)),
            "NotIn" => have.is_none_or(|h| !values.contains(h)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            _ => false,
        }
    });
    labels_ok && expressions_ok
}

/// True when the selector has neither labels nor expressions.
pub fn is_empty(selector: &LabelSelector) -> bool {
    selector
        .match_labels
        .as_ref()
        .is_none_or(BTreeMap::is_empty)
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(v: serde_json::Value) -> LabelSelector {
        serde_json::from_value(v).unwrap_or_default()
    }

    #[test]
    fn empty_matches_everything_and_unconvertible_matches_nothing() {
        let labels = BTreeMap::from([("team".to_owned(), "a".to_owned())]);
        assert!(matches(&selector(serde_json::json!({})), &labels));
        assert!(matches(
            &selector(
                serde_json::json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["a"]}]})
            ),
            &labels
        ));
        for bad in [
            serde_json::json!({"matchExpressions": [{"key": "x", "operator": "NotIn"}]}),
            serde_json::json!({"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["a"]}]}),
            serde_json::json!({"matchExpressions": [{"key": "team", "operator": "Near"}]}),
        ] {
            assert!(!matches(&selector(bad.clone()), &labels), "{bad}");
        }
    }
}
