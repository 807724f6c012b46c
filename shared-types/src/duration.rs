//! Go `time.Duration` strings, as the API's duration fields carry them ("500ms", "1m30s").

use std::time::Duration;

/// Parses a Go `time.Duration` string ("1ms", "1m30s", "-1.5h") into
/// nanoseconds (as f64: only the ≥ 1 ms bound is checked).
pub fn go_duration_nanos(s: &str) -> Option<f64> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0.0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if n == 0 {
            return None;
        }
        let value: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        total += value * unit;
        rest = &rest[u..];
    }
    Some(if neg { -total } else { total })
}

/// A non-negative Go duration string as a [`Duration`]; `None` when it does not parse or is
/// negative.
pub fn go_duration(s: &str) -> Option<Duration> {
    let nanos = go_duration_nanos(s)?;
    (nanos >= 0.0 && nanos.is_finite()).then(|| Duration::from_nanos(nanos as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(go_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(go_duration("0"), Some(Duration::ZERO));
        assert_eq!(go_duration("-1s"), None);
        assert_eq!(go_duration("5 s"), None);
        assert_eq!(go_duration(""), None);
    }
}
