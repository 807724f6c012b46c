//! Kubernetes and Garage value grammars the GarageNode rules need: names,
//! label keys and values, label selectors, quantities and Garage durations.
//!
//! These are private stand-ins for the shared helper validators (SH-6, SH-9,
//! SH-21, selector conversion) so the GarageNode rules do not depend on code
//! that is still being written in `admission/shared`; they should be folded
//! into it once it lands.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// DNS-1123 label: 1..=63 lower-case alphanumerics or `-`, alphanumeric at
/// both ends.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars().all(|c| is_lower_alnum(c) || c == '-')
        && s.starts_with(is_lower_alnum)
        && s.ends_with(is_lower_alnum)
}

/// DNS-1123 subdomain: at most 253 characters of dot-separated labels.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

fn is_name_part(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_alphanumeric();
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| alnum(c) || c == '-' || c == '_' || c == '.')
        && s.starts_with(alnum)
        && s.ends_with(alnum)
}

/// Qualified name (label key): `[prefix/]name` with a DNS-1123 subdomain
/// prefix.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_name_part(name),
        None => is_name_part(s),
    }
}

/// Label value: empty, or a name part of at most 63 characters.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_name_part(s)
}

/// Why a label selector cannot be turned into a PersistentVolume selector,
/// mirroring `metav1.LabelSelectorAsSelector`; `None` when it can.
pub fn selector_error(selector: &LabelSelector) -> Option<String> {
    for (key, value) in selector.match_labels.iter().flatten() {
        if !is_qualified_name(key) {
            return Some(format!("matchLabels key {key:?} is not a valid label key"));
        }
        if !is_label_value(value) {
            return Some(format!(
                "matchLabels value {value:?} is not a valid label value"
            ));
        }
    }
    for expr in selector.match_expressions.iter().flatten() {
        if !is_qualified_name(&expr.key) {
            return Some(format!(
                "matchExpressions key {:?} is not a valid label key",
                expr.key
            ));
        }
        let values = expr.values.as_deref().unwrap_or_default();
        match expr.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => {
                return Some(format!(
                    "operator {} on key {:?} needs at least one value",
                    expr.operator, expr.key
                ));
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                return Some(format!(
                    "operator {} on key {:?} must not have values",
                    expr.operator, expr.key
                ));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => {
                return Some(format!(
                    "operator {other:?} on key {:?} is not In, NotIn, Exists or DoesNotExist",
                    expr.key
                ));
            }
        }
        if let Some(bad) = values.iter().find(|v| !is_label_value(v)) {
            return Some(format!(
                "matchExpressions value {bad:?} is not a valid label value"
            ));
        }
    }
    None
}

/// SH-21: a Garage node ID is exactly 64 hexadecimal characters.
pub fn is_node_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Canonical form of a node ID (or an annotation that should hold one):
/// trimmed and lower-cased, so that pins compare independently of how they
/// were typed.
pub fn canonical_id(s: &str) -> String {
    s.trim().to_ascii_lowercase()
}

/// A quantity in nano-units, so that `1Gi` and `1073741824` compare equal as
/// the API server's semantic equality would. `None` when it does not parse.
pub fn quantity_nanos(q: &Quantity) -> Option<i128> {
    let s = q.0.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let (negative, number) = match number.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, number.strip_prefix('+').unwrap_or(number)),
    };
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    if !int_part.bytes().all(|b| b.is_ascii_digit())
        || !frac_part.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    // Nine fractional digits are the finest resolution (nano) Kubernetes keeps.
    let mut frac = frac_part.chars().take(9).collect::<String>();
    while frac.len() < 9 {
        frac.push('0');
    }
    let int_value: i128 = if int_part.is_empty() {
        0
    } else {
        int_part.parse().ok()?
    };
    let base = int_value.checked_mul(1_000_000_000)? + frac.parse::<i128>().ok()?;
    let scaled = scale(base, suffix)?;
    Some(if negative { -scaled } else { scaled })
}

fn scale(base: i128, suffix: &str) -> Option<i128> {
    let binary = |exp: u32| base.checked_mul(1i128 << (10 * exp));
    let decimal = |exp: i32| -> Option<i128> {
        if exp >= 0 {
            base.checked_mul(10i128.checked_pow(exp.unsigned_abs())?)
        } else {
            Some(base / 10i128.checked_pow(exp.unsigned_abs())?)
        }
    };
    match suffix {
        "" => Some(base),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        other => {
            let exp = other.strip_prefix(['e', 'E'])?;
            decimal(exp.parse().ok()?)
        }
    }
}

/// True when both quantities are absent, or both parse to the same value
/// (or are textually equal when one does not parse).
pub fn quantity_eq(a: Option<&Quantity>, b: Option<&Quantity>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => match (quantity_nanos(a), quantity_nanos(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a.0 == b.0,
        },
        _ => false,
    }
}

/// SH-6: seconds in a Garage (systemd-style) duration such as `1h 30m`;
/// `None` when the text does not follow the grammar.
pub fn garage_duration_seconds(s: &str) -> Option<f64> {
    // Longest units first so that `ms` is not read as `m` followed by `s`.
    const UNITS: &[(&str, f64)] = &[
        ("ns", 1e-9),
        ("us", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
        ("d", 86_400.0),
        ("w", 604_800.0),
        ("M", 30.44 * 86_400.0),
        ("y", 365.25 * 86_400.0),
    ];
    let mut rest = s;
    let mut total = 0.0;
    let mut terms = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let mut end = digits;
        if rest[end..].starts_with('.') {
            let frac = rest[end + 1..]
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len() - end - 1);
            if frac == 0 {
                return None;
            }
            end += 1 + frac;
        }
        let value: f64 = rest[..end].parse().ok()?;
        rest = rest[end..].trim_start();
        let (unit, factor) = UNITS.iter().find(|(u, _)| rest.starts_with(u))?;
        rest = rest[unit.len()..].trim_start();
        total += value * factor;
        terms += 1;
    }
    (terms > 0).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity(s.to_string())
    }

    #[test]
    fn quantities_compare_by_value() {
        assert!(quantity_eq(Some(&q("1Gi")), Some(&q("1073741824"))));
        assert!(quantity_eq(Some(&q("1.5k")), Some(&q("1500"))));
        assert!(!quantity_eq(Some(&q("1Gi")), Some(&q("1G"))));
        assert!(!quantity_eq(Some(&q("1Gi")), None));
        assert!(quantity_nanos(&q("2Gi")) > quantity_nanos(&q("1Gi")));
        assert_eq!(quantity_nanos(&q("1e3")), quantity_nanos(&q("1k")));
        assert_eq!(quantity_nanos(&q("bogus")), None);
    }

    #[test]
    fn garage_durations_follow_the_systemd_grammar() {
        assert_eq!(garage_duration_seconds("10m"), Some(600.0));
        assert_eq!(garage_duration_seconds("1h 30m"), Some(5400.0));
        assert_eq!(garage_duration_seconds("0.5h"), Some(1800.0));
        assert_eq!(garage_duration_seconds("599s"), Some(599.0));
        assert_eq!(garage_duration_seconds("5ms"), Some(0.005));
        assert_eq!(garage_duration_seconds("invalid"), None);
        assert_eq!(garage_duration_seconds(""), None);
        assert_eq!(garage_duration_seconds("10"), None);
    }

    #[test]
    fn selectors_are_checked_like_label_selector_as_selector() {
        let ok: LabelSelector =
            serde_json::from_value(serde_json::json!({"matchLabels": {"disk": "ssd"}})).unwrap();
        assert_eq!(selector_error(&ok), None);
        let bad_key: LabelSelector =
            serde_json::from_value(serde_json::json!({"matchLabels": {"bad key": "x"}})).unwrap();
        assert!(selector_error(&bad_key).is_some());
        let bad_op: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchExpressions": [{"key": "disk", "operator": "Near", "values": ["a"]}]
        }))
        .unwrap();
        assert!(selector_error(&bad_op).is_some());
        let in_without_values: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchExpressions": [{"key": "disk", "operator": "In"}]
        }))
        .unwrap();
        assert!(selector_error(&in_without_values).is_some());
    }

    #[test]
    fn names_and_ids() {
        assert!(is_dns1123_label("garage"));
        assert!(!is_dns1123_label("Bad_Namespace"));
        assert!(is_dns1123_subdomain("a.b-c"));
        assert!(!is_dns1123_subdomain("Bad_Cluster"));
        assert!(is_qualified_name("topology.kubernetes.io/zone"));
        assert!(!is_qualified_name("bad key"));
        assert!(is_node_id(&"A".repeat(64)));
        assert!(!is_node_id(&"a".repeat(63)));
        assert_eq!(canonical_id("  ABC "), "abc");
    }
}
