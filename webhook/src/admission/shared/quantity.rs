//! Exact reading of Kubernetes resource quantities (`700Gi`, `1.5T`, `500m`)
//! for the capacity and size rules (SH-8, GC-C21, GC-S5).
//!
//! Values are kept in milli-units as `i128` so that sums and comparisons are
//! exact; a fractional byte rounds up, as the API server's canonical form does.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The value of `q` in milli-units, or `None` when it is not a quantity.
pub fn milli_value(q: &Quantity) -> Option<i128> {
    parse_milli(q.0.trim())
}

/// The value of `q` in whole units (bytes for sizes), rounded up.
pub fn value(q: &Quantity) -> Option<i128> {
    milli_value(q).map(|m| {
        if m >= 0 {
            (m + 999) / 1000
        } else {
            -((-m) / 1000)
        }
    })
}

fn parse_milli(text: &str) -> Option<i128> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let split = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(split);
    if number.is_empty() || number == "." {
        return None;
    }
    let (int_part, frac_part) = match number.split_once('.') {
        Some((i, f)) => (i, f),
        None => (number, ""),
    };
    if frac_part.contains('.') {
        return None;
    }
    let digits = format!("{int_part}{frac_part}");
    let mantissa: i128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    // value = mantissa / 10^frac * num / den, returned ×1000.
    let (num, den): (i128, i128) = match suffix {
        "" => (1, 1),
        "Ki" => (1 << 10, 1),
        "Mi" => (1 << 20, 1),
        "Gi" => (1 << 30, 1),
        "Ti" => (1 << 40, 1),
        "Pi" => (1 << 50, 1),
        "Ei" => (1 << 60, 1),
        "n" => (1, 1_000_000_000),
        "u" => (1, 1_000_000),
        "m" => (1, 1000),
        "k" => (1000, 1),
        "M" => (1_000_000, 1),
        "G" => (1_000_000_000, 1),
        "T" => (1_000_000_000_000, 1),
        "P" => (1_000_000_000_000_000, 1),
        "E" => (1_000_000_000_000_000_000, 1),
        s if s.starts_with(['e', 'E']) => {
            let exp: i32 = s[1..].parse().ok()?;
            if !(-30..=30).contains(&exp) {
                return None;
            }
            if exp >= 0 {
                (10i128.checked_pow(exp.unsigned_abs())?, 1)
            } else {
                (1, 10i128.checked_pow(exp.unsigned_abs())?)
            }
        }
        _ => return None,
    };
    let frac_den = 10i128.checked_pow(u32::try_from(frac_part.len()).ok()?)?;
    let top = mantissa.checked_mul(num)?.checked_mul(1000)?;
    let bottom = frac_den.checked_mul(den)?;
    let milli = (top + bottom - 1) / bottom;
    Some(if negative { -milli } else { milli })
}

/// Formats a milli-unit value in the largest binary unit that divides it,
/// for messages ("700Gi").
pub fn format_bytes(milli: i128) -> String {
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let mut v = milli / 1000;
    for unit in ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"] {
        if v % 1024 != 0 || v == 0 || unit == "Ei" {
            return format!("{v}{unit}");
        }
        v /= 1024;
    }
    format!("{v}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity(s.to_string())
    }

    #[test]
    fn binary_decimal_and_fractional_quantities_are_exact() {
        let cases = [
            ("1Ki", Some(1024)),
            ("700Gi", Some(700 << 30)),
            ("1k", Some(1000)),
            ("0.5Gi", Some(1 << 29)),
            ("1.5", Some(2)),
            ("1e3", Some(1000)),
            ("0", Some(0)),
            ("-1Mi", Some(-(1 << 20))),
            ("bogus", None),
            ("1Xi", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(value(&q(text)), want, "{text}");
        }
    }

    #[test]
    fn milli_units_keep_sub_unit_values() {
        assert_eq!(milli_value(&q("500m")), Some(500));
        assert_eq!(format_bytes((700 * 1000) << 30), "700Gi");
    }
}
