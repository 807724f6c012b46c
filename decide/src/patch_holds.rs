//! Does a live object already hold what the operator's patch would write? The writer asks this
//! before every patch of an owned object, so a label, an annotation or a field changed or
//! removed by hand is put back on the next pass, and a converged object costs no write. Pure.
//!
//! The comparison reads the patch body, not the whole rendered object: immutable parts (a
//! StatefulSet's claim templates and selector) are never in the patch, so a difference there
//! could never be repaired and must not ask for a write every pass.
//!
//! What the API server adds or rewrites must not read as drift, or a converged object would be
//! patched on every pass:
//! - a field the patch leaves out or sets to `null` is not compared: server defaults fill it
//!   (a Service's `clusterIP`, a container's `terminationMessagePath`);
//! - an object in the patch needs its keys in the live object, not the reverse;
//! - a zero value in the patch (`false`, `0`, `""`, `[]`, `{}`) holds when the live object
//!   lacks the field: built-in kinds are stored as protobuf, which drops empty values;
//! - two strings that read as the same Kubernetes quantity hold (`0.5` and `500m`, `1024Mi`
//!   and `1Gi`): the API server writes quantities in canonical form.

use serde_json::Value;

/// The first place where `live` does not hold `patch`, as a JSON path (`spec.ports[0].name`),
/// or `None` when it holds all of it. The path names the field, never its value: a value can
/// be a credential.
pub fn first_difference(patch: &Value, live: &Value) -> Option<String> {
    difference(patch, Some(live), String::new())
}

fn difference(want: &Value, have: Option<&Value>, path: String) -> Option<String> {
    let have = have.filter(|h| !h.is_null());
    match (want, have) {
        (Value::Null, _) => None,
        (want, None) if is_zero(want) => None,
        (_, None) => Some(path),
        (Value::Object(want), Some(Value::Object(have))) => want
            .iter()
            .find_map(|(key, value)| difference(value, have.get(key), join(&path, key))),
        (Value::Array(want), Some(Value::Array(have))) => {
            if want.len() != have.len() {
                return Some(path);
            }
            want.iter()
                .zip(have)
                .enumerate()
                .find_map(|(i, (w, h))| difference(w, Some(h), format!("{path}[{i}]")))
        }
        (Value::String(want), Some(Value::String(have))) => {
            (want != have && !same_quantity(want, have)).then_some(path)
        }
        (Value::Number(want), Some(Value::Number(have))) => {
            (want.as_f64() != have.as_f64()).then_some(path)
        }
        (want, Some(have)) => (want != have).then_some(path),
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.values().all(is_zero),
    }
}

/// True when both strings parse as Kubernetes quantities of the same amount.
fn same_quantity(a: &str, b: &str) -> bool {
    match (quantity(a), quantity(b)) {
        (Some(x), Some(y)) => (x - y).abs() <= f64::EPSILON * x.abs().max(y.abs()).max(1.0),
        _ => false,
    }
}

/// A quantity's amount: a decimal number with an optional binary (`Ki` .. `Ei`), decimal
/// (`n`, `u`, `m`, `k`, `M` .. `E`) or exponent (`e3`, `E-2`) suffix.
fn quantity(text: &str) -> Option<f64> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    if number.is_empty() || number == "+" || number == "-" {
        return None;
    }
    let number: f64 = number.parse().ok()?;
    let scale = match suffix {
        "" => 1.0,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        exponent => {
            let digits = exponent.strip_prefix(['e', 'E'])?;
            10f64.powi(digits.parse().ok()?)
        }
    };
    Some(number * scale)
}

#[cfg(test)]
mod tests;
