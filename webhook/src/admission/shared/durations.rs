//! Garage configuration values: SH-5 RPC durations, SH-6 metadata snapshot
//! interval, SH-7 compression level, SH-8 positive quantities.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::Problem;
use super::quantity::milli_value;
pub use shared_types::duration::go_duration_nanos;

/// The problem with a duration `value` that parsed to `parsed`, if it is
/// not at least `min`; `minimum` and `grammar` complete the messages.
fn at_least(
    field: &str,
    value: &str,
    parsed: Option<f64>,
    min: f64,
    minimum: &str,
    grammar: &str,
) -> Option<Problem> {
    match parsed {
        Some(v) if v >= min => None,
        Some(_) => Some(Problem::new(
            field,
            format!("{value:?} must be at least {minimum}"),
        )),
        None => Some(Problem::new(field, format!("{value:?} {grammar}"))),
    }
}

/// SH-5: an RPC timeout must be a duration of at least 1ms.
pub fn check_rpc_duration(field: &str, value: &str) -> Option<Problem> {
    at_least(
        field,
        value,
        go_duration_nanos(value),
        1e6,
        "1ms",
        "is not a duration such as '500ms' or '30s'",
    )
}

/// Parses Garage's systemd-style duration ("10m", "1h 30m", "0.5h") into
/// seconds.
pub fn garage_duration_secs(s: &str) -> Option<f64> {
    let mut rest = s.trim_start();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..n];
        if number.is_empty()
            || number.starts_with('.')
            || number.ends_with('.')
            || number.matches('.').count() > 1
        {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        rest = rest[n..].trim_start();
        let u = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ns" => 1e-9,
            "us" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            "w" => 7.0 * 86400.0,
            "M" => 30.44 * 86400.0,
            "y" => 365.25 * 86400.0,
            _ => return None,
        };
        total += value * unit;
        rest = rest[u..].trim_start();
    }
    Some(total)
}

/// SH-6: the metadata snapshot interval, if set, is a Garage duration of at
/// least 10 minutes. An empty value means unset.
pub fn check_snapshot_interval(field: &str, value: &str) -> Option<Problem> {
    if value.is_empty() {
        return None;
    }
    at_least(
        field,
        value,
        garage_duration_secs(value),
        600.0,
        "600 seconds (10m)",
        "must be a Garage duration such as '10m', '1h', or '1h 30m'",
    )
}

/// SH-6 as GarageNode's GN-C21 has always applied it: that field has no
/// "unset" spelling, so an empty value, or one that starts with a blank, is
/// not a duration either.
pub fn check_snapshot_interval_strict(field: &str, value: &str) -> Option<Problem> {
    let parsed = if value.starts_with(char::is_whitespace) {
        None
    } else {
        garage_duration_secs(value)
    };
    at_least(
        field,
        value,
        parsed,
        600.0,
        "600 seconds (10m)",
        "must be a Garage duration such as '10m', '1h', or '1h 30m'",
    )
}

/// SH-7: `none` or an integer in [-99, 22].
pub fn check_compression_level(field: &str, value: &str) -> Option<Problem> {
    if value == "none" {
        return None;
    }
    match value.parse::<i64>() {
        Ok(v) if (-99..=22).contains(&v) => None,
        _ => Some(Problem::new(
            field,
            format!("{value:?} must be 'none' or an integer between -99 and 22"),
        )),
    }
}

/// SH-8: a set quantity must be greater than zero.
pub fn check_positive(field: &str, q: Option<&Quantity>) -> Option<Problem> {
    let q = q?;
    match milli_value(q) {
        Some(v) if v > 0 => None,
        _ => Some(Problem::new(
            field,
            format!("{field} must be greater than zero (got {:?})", q.0),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn sh5_rpc_durations() {
        assert!(check_rpc_duration("f", "1ms").is_none());
        assert!(check_rpc_duration("f", "999999ns").is_some());
        assert!(check_rpc_duration("f", "1m30s").is_none());
        assert!(check_rpc_duration("f", "soon").is_some());
    }

    #[test]
    fn sh6_snapshot_intervals() {
        for ok in ["600s", "10m", "1h 30m", "0.5h", "6h"] {
            assert!(check_snapshot_interval("f", ok).is_none(), "{ok}");
        }
        for bad in ["599s", "9m 59s", "5m", "invalid"] {
            assert!(check_snapshot_interval("f", bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn sh6_strict_refuses_empty_and_leading_blanks() {
        assert!(check_snapshot_interval("f", "").is_none());
        assert!(check_snapshot_interval("f", " 10m").is_none());
        assert!(check_snapshot_interval_strict("f", "10m").is_none());
        assert!(check_snapshot_interval_strict("f", "1h 30m ").is_none());
        for bad in ["", " 10m", "5m", "10"] {
            assert!(
                check_snapshot_interval_strict("f", bad).is_some(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn garage_durations_follow_the_systemd_grammar() {
        assert_eq!(garage_duration_secs("10m"), Some(600.0));
        assert_eq!(garage_duration_secs("1h 30m"), Some(5400.0));
        assert_eq!(garage_duration_secs("0.5h"), Some(1800.0));
        assert_eq!(garage_duration_secs("599s"), Some(599.0));
        assert_eq!(garage_duration_secs("5ms"), Some(0.005));
        assert_eq!(garage_duration_secs("invalid"), None);
        assert_eq!(garage_duration_secs(""), None);
        assert_eq!(garage_duration_secs("10"), None);
    }

    #[test]
    fn sh7_sh8_levels_and_quantities() {
        assert!(check_compression_level("f", "none").is_none());
        assert!(check_compression_level("f", "0").is_none());
        for bad in ["-100", "23", "bogus"] {
            assert!(check_compression_level("f", bad).is_some(), "{bad}");
        }
        assert!(check_positive("f", Some(&Quantity("1Mi".into()))).is_none());
        assert!(check_positive("f", Some(&Quantity("-1Mi".into()))).is_some());
        assert!(check_positive("f", None).is_none());
    }
}
