//! Resource quantities as numbers, for comparing sizes written in
//! different units (`1Gi` against `1073741824`).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The size a storage quantity stands for, in bytes rounded up; `None` (less
/// than every size) when absent or unparsable.
pub(super) fn bytes(quantity: Option<&Quantity>) -> Option<u128> {
    parse_quantity(&quantity?.0)
}

/// Parses a Kubernetes resource quantity (`1Gi`, `500M`, `1.5Ti`, `1e9`,
/// `100m`) into whole units, rounding up.
fn parse_quantity(text: &str) -> Option<u128> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number = number.strip_prefix('+').unwrap_or(number);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let mantissa: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse().ok()?
    };
    let scale = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let (multiplier, divisor): (u128, u128) = match suffix {
        "" => (1, 1),
        "m" => (1, 1000),
        "k" => (1000, 1),
        "M" => (1000u128.pow(2), 1),
        "G" => (1000u128.pow(3), 1),
        "T" => (1000u128.pow(4), 1),
        "P" => (1000u128.pow(5), 1),
        "E" => (1000u128.pow(6), 1),
        "Ki" => (1 << 10, 1),
        "Mi" => (1 << 20, 1),
        "Gi" => (1 << 30, 1),
        "Ti" => (1 << 40, 1),
        "Pi" => (1 << 50, 1),
        "Ei" => (1 << 60, 1),
        exponent => {
            let exponent = exponent.strip_prefix(['e', 'E'])?;
            let exponent: i32 = exponent.parse().ok()?;
            let power = 10u128.checked_pow(exponent.unsigned_abs())?;
            if exponent >= 0 {
                (power, 1)
            } else {
                (1, power)
            }
        }
    };
    let numerator = mantissa.checked_mul(multiplier)?;
    let denominator = scale.checked_mul(divisor)?;
    Some(numerator.div_ceil(denominator))
}

#[cfg(test)]
mod tests {
    use super::parse_quantity;

    #[test]
    fn quantities_parse_to_units() {
        assert_eq!(parse_quantity("1Gi"), Some(1 << 30));
        assert_eq!(parse_quantity("1.5Gi"), Some(3 << 29));
        assert_eq!(parse_quantity("500M"), Some(500_000_000));
        assert_eq!(parse_quantity("2k"), Some(2000));
        assert_eq!(parse_quantity("1e3"), Some(1000));
        assert_eq!(parse_quantity("1500m"), Some(2));
        assert_eq!(parse_quantity("123"), Some(123));
        assert_eq!(parse_quantity(".5Ki"), Some(512));
    }

    #[test]
    fn nonsense_is_rejected() {
        assert_eq!(parse_quantity(""), None);
        assert_eq!(parse_quantity("Gi"), None);
        assert_eq!(parse_quantity("1Zi"), None);
        assert_eq!(parse_quantity("-1Gi"), None);
    }

    #[test]
    fn binary_and_decimal_units_compare() {
        assert!(parse_quantity("1Gi") > parse_quantity("1G"));
        assert!(parse_quantity("2Gi") > parse_quantity("1Gi"));
    }
}
