//! Label selectors: emptiness, convertibility (what `metav1.LabelSelectorAsSelector`
//! accepts) and matching against a Node's labels, for pool selectors
//! (GC-C21) and PersistentVolume selectors (SH-25).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::names::{is_label_value, is_qualified_name};

/// True when the selector has neither matchLabels nor matchExpressions
/// (it would select everything).
pub fn is_empty(selector: Option<&LabelSelector>) -> bool {
    selector.is_none_or(|s| {
        s.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
            && s.match_expressions.as_ref().is_none_or(Vec::is_empty)
    })
}

/// Why `selector` cannot be converted into a label selector, if it cannot.
pub fn conversion_error(selector: &LabelSelector) -> Option<String> {
    for (k, v) in selector.match_labels.iter().flatten() {
        if !is_qualified_name(k) {
            return Some(format!("matchLabels key {k:?} is not a valid label key"));
        }
        if !is_label_value(v) {
            return Some(format!(
                "matchLabels value {v:?} for {k:?} is not a valid label value"
            ));
        }
    }
    for (i, e) in selector.match_expressions.iter().flatten().enumerate() {
        if !is_qualified_name(&e.key) {
            return Some(format!(
                "matchExpressions[{i}].key {:?} is not a valid label key",
                e.key
            ));
        }
        let values = e.values.as_deref().unwrap_or_default();
        match e.operator.as_str() {
            "In" | "NotIn" => {
                if values.is_empty() {
                    return Some(format!(
                        "matchExpressions[{i}] operator {} needs at least one value",
                        e.operator
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    return Some(format!(
                        "matchExpressions[{i}] operator {} takes no values",
                        e.operator
                    ));
                }
            }
            other => {
                return Some(format!(
                    "matchExpressions[{i}].operator {other:?} is not one of In, NotIn, Exists, DoesNotExist"
                ));
            }
        }
        if let Some(bad) = values.iter().find(|v| !is_label_value(v)) {
            return Some(format!(
                "matchExpressions[{i}] value {bad:?} is not a valid label value"
            ));
        }
    }
    None
}

/// Every key the selector mentions (matchLabels and matchExpressions).
pub fn keys(selector: &LabelSelector) -> impl Iterator<Item = &str> {
    selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, _)| k.as_str())
        .chain(
            selector
                .match_expressions
                .iter()
                .flatten()
                .map(|e| e.key.as_str()),
        )
}

/// Whether `labels` satisfy `selector`. An empty selector matches nothing
/// here: pools require a non-empty selector, and counting "everything" for
/// an invalid one would only add noise to the limit rules.
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    if is_empty(Some(selector)) || conversion_error(selector).is_some() {
        return false;
    }
    shared_types::selector::matches(selector, labels)
}

/// The selector as the query string of a LIST's `labelSelector`, which the
/// API server evaluates exactly as [`matches`] does; `None` when [`matches`]
/// accepts no labels at all (empty or unconvertible), so nothing needs reading.
/// Keys and values of a convertible selector hold no character the query
/// syntax reserves.
pub fn query(selector: &LabelSelector) -> Option<String> {
    if is_empty(Some(selector)) || conversion_error(selector).is_some() {
        return None;
    }
    let labels = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"));
    let expressions = selector.match_expressions.iter().flatten().map(|e| {
        let values = e.values.as_deref().unwrap_or_default().join(",");
        match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            _ => format!("!{}", e.key),
        }
    });
    Some(labels.chain(expressions).collect::<Vec<_>>().join(","))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sel(v: serde_json::Value) -> LabelSelector {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn emptiness_conversion_and_matching() {
        assert!(is_empty(None));
        assert!(is_empty(Some(&sel(json!({"matchLabels": {}})))));
        let s = sel(json!({"matchLabels": {"pool": "a"},
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["x", "y"]}]}));
        assert!(!is_empty(Some(&s)));
        let labels: BTreeMap<String, String> =
            [("pool".into(), "a".into()), ("zone".into(), "y".into())].into();
        assert!(matches(&s, &labels));
        let other: BTreeMap<String, String> = [("pool".into(), "a".into())].into();
        assert!(!matches(&s, &other));
        let bad = sel(json!({"matchExpressions": [{"key": "k", "operator": "Near"}]}));
        assert!(conversion_error(&bad).is_some());
        let bad_in = sel(json!({"matchExpressions": [{"key": "k", "operator": "In"}]}));
        assert!(conversion_error(&bad_in).is_some());
    }

    #[test]
    fn queries_spell_every_operator() {
        let s = sel(json!({
            "matchLabels": {"pool": "a"},
            "matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["x", "y"]},
                {"key": "tier", "operator": "NotIn", "values": ["edge"]},
                {"key": "example.com/disk", "operator": "Exists"},
                {"key": "cordoned", "operator": "DoesNotExist"}
            ]
        }));
        assert_eq!(
            query(&s).as_deref(),
            Some("pool=a,zone in (x,y),tier notin (edge),example.com/disk,!cordoned")
        );
        assert_eq!(query(&sel(json!({"matchLabels": {}}))), None);
        let unconvertible = sel(json!({"matchExpressions": [{"key": "k", "operator": "In"}]}));
        assert_eq!(query(&unconvertible), None);
    }

    #[test]
    fn selectors_are_checked_like_label_selector_as_selector() {
        let ok = sel(json!({"matchLabels": {"disk": "ssd"}}));
        assert_eq!(conversion_error(&ok), None);
        let bad_key = sel(json!({"matchLabels": {"bad key": "x"}}));
        assert!(conversion_error(&bad_key).is_some());
        let bad_op = sel(json!({
            "matchExpressions": [{"key": "disk", "operator": "Near", "values": ["a"]}]
        }));
        assert!(conversion_error(&bad_op).is_some());
        let in_without_values = sel(json!({
            "matchExpressions": [{"key": "disk", "operator": "In"}]
        }));
        assert!(conversion_error(&in_without_values).is_some());
    }
}
