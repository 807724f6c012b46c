//! Exact values of Kubernetes resource quantities (`700Gi`, `1.5T`, `500m`, `1e3`).
//!
//! The webhook compares capacities and sizes, and the node agent and the reconciler turn them
//! into byte counts. A float would make `1Gi` and `1073741824` differ by rounding noise and
//! would misjudge a grow by one byte, so a quantity is kept as an exact decimal fraction and
//! compared exactly. Whole and thousandth units round the magnitude up (away from zero), as
//! the API server's `Value()` and `MilliValue()` do: a claim for `1500m` bytes needs two.
//!
//! ```
//! use shared_types::quantity::QuantityValue;
//!
//! let gi: QuantityValue = "1Gi".parse()?;
//! assert_eq!(gi, "1073741824".parse()?);
//! assert!(gi > "1G".parse()?);
//! assert_eq!("1500m".parse::<QuantityValue>()?.value(), Some(2));
//! assert!("1Zi".parse::<QuantityValue>().is_err());
//! # Ok::<(), shared_types::quantity::QuantityError>(())
//! ```

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// Most decimal places a value may carry: `10^38` is the largest power of ten a `u128` holds,
/// and every comparison and rounding divides by it.
const MAX_SCALE: u32 = 38;

/// Largest `e`/`E` exponent, either sign. The API server caps quantities at 2^63-1 and rounds
/// them to 1n, so nothing beyond is meaningful, and the bound is what the admission rules have
/// always accepted.
const MAX_EXPONENT: u32 = 30;

/// The exact value of a resource quantity: `±magnitude / 10^scale`.
///
/// Equality and ordering are by value (`1Gi == 1073741824`, `-0 == 0`), never by spelling.
#[derive(Clone, Copy, Debug)]
pub struct QuantityValue {
    negative: bool,
    magnitude: u128,
    scale: u32,
}

/// A text that is not a resource quantity this module can represent exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuantityError {
    input: String,
    reason: String,
}

impl QuantityError {
    fn new(input: &str, reason: impl Into<String>) -> Self {
        QuantityError {
            input: input.to_string(),
            reason: reason.into(),
        }
    }

    /// The text that failed to parse, as given.
    pub fn input(&self) -> &str {
        &self.input
    }
}

impl fmt::Display for QuantityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid quantity {:?}: {}", self.input, self.reason)
    }
}

impl std::error::Error for QuantityError {}

/// `10^n`; callers pass at most [`MAX_SCALE`], which a `u128` holds.
fn pow10(n: u32) -> u128 {
    10u128.pow(n)
}

/// The power of two (binary suffixes) and of ten (decimal suffixes and exponents) a suffix
/// multiplies by.
fn suffix_factor(input: &str, suffix: &str) -> Result<(u32, i32), QuantityError> {
    let factor = match suffix {
        "" => (0, 0),
        "Ki" => (10, 0),
        "Mi" => (20, 0),
        "Gi" => (30, 0),
        "Ti" => (40, 0),
        "Pi" => (50, 0),
        "Ei" => (60, 0),
        "n" => (0, -9),
        "u" => (0, -6),
        "m" => (0, -3),
        "k" => (0, 3),
        "M" => (0, 6),
        "G" => (0, 9),
        "T" => (0, 12),
        "P" => (0, 15),
        "E" => (0, 18),
        other => {
            let exponent = other
                .strip_prefix(['e', 'E'])
                .ok_or_else(|| {
                    QuantityError::new(
                        input,
                        format!(
                            "unknown suffix {other:?}; use Ki…Ei, n, u, m, k, M…E or an exponent such as e3"
                        ),
                    )
                })?
                .parse::<i32>()
                .map_err(|_| {
                    QuantityError::new(input, format!("exponent {other:?} is not an integer"))
                })?;
            if exponent.unsigned_abs() > MAX_EXPONENT {
                return Err(QuantityError::new(
                    input,
                    format!("exponent {other:?} is outside ±{MAX_EXPONENT}"),
                ));
            }
            (0, exponent)
        }
    };
    Ok(factor)
}

impl QuantityValue {
    /// Parses `text` (surrounding white space ignored): an optional sign, a decimal number
    /// (`1`, `1.5`, `.5`, `5.`) and an optional binary suffix (`Ki`…`Ei`), decimal suffix
    /// (`n`, `u`, `m`, `k`, `M`…`E`) or exponent (`e3`, `E-2`).
    ///
    /// Fails, naming `text`, on anything else, on exponents beyond ±30 and on values that do
    /// not fit 128 bits with at most 38 decimal places.
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let trimmed = text.trim();
        let (negative, unsigned) = match trimmed.as_bytes().first() {
            None => return Err(QuantityError::new(text, "empty")),
            Some(b'-') => (true, &trimmed[1..]),
            Some(b'+') => (false, &trimmed[1..]),
            Some(_) => (false, trimmed),
        };
        let split = unsigned
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(unsigned.len());
        let (number, suffix) = unsigned.split_at(split);
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        if (int_part.is_empty() && frac_part.is_empty()) || frac_part.contains('.') {
            return Err(QuantityError::new(
                text,
                "expected a decimal number such as 1, 1.5 or .5 before the suffix",
            ));
        }
        let out_of_range = || QuantityError::new(text, "too large or too precise");
        let mantissa: u128 = [int_part, frac_part]
            .concat()
            .parse()
            .map_err(|_| out_of_range())?;
        let (binary, exponent) = suffix_factor(text, suffix)?;
        let magnitude = mantissa
            .checked_mul(1u128 << binary)
            .and_then(|m| m.checked_mul(pow10(exponent.max(0).unsigned_abs())))
            .ok_or_else(out_of_range)?;
        let scale = u32::try_from(frac_part.len())
            .ok()
            .and_then(|f| f.checked_add(exponent.min(0).unsigned_abs()))
            .filter(|s| *s <= MAX_SCALE)
            .ok_or_else(out_of_range)?;
        Ok(QuantityValue {
            negative,
            magnitude,
            scale,
        })
    }

    /// True when the value is above zero.
    pub fn is_positive(&self) -> bool {
        !self.negative && self.magnitude != 0
    }

    /// True when the value is below zero (`-0` is not).
    pub fn is_negative(&self) -> bool {
        self.negative && self.magnitude != 0
    }

    /// The value in whole units (bytes for sizes), magnitude rounded up like the API server's
    /// `Value()`; `None` when it does not fit an `i128`.
    pub fn value(&self) -> Option<i128> {
        self.scaled(0)
    }

    /// The value in thousandths, magnitude rounded up like the API server's `MilliValue()`;
    /// `None` when it does not fit an `i128`.
    pub fn milli_value(&self) -> Option<i128> {
        self.scaled(3)
    }

    /// The value in units of `10^-places`, magnitude rounded up.
    fn scaled(&self, places: u32) -> Option<i128> {
        let magnitude = if self.scale >= places {
            self.magnitude.div_ceil(pow10(self.scale - places))
        } else {
            self.magnitude.checked_mul(pow10(places - self.scale))?
        };
        let magnitude = i128::try_from(magnitude).ok()?;
        Some(if self.negative { -magnitude } else { magnitude })
    }

    fn signum(&self) -> i8 {
        match (self.magnitude, self.negative) {
            (0, _) => 0,
            (_, true) => -1,
            (_, false) => 1,
        }
    }

    /// Compares magnitudes exactly: the one with fewer decimal places is brought to the other's
    /// scale, and if that overflows it is the larger.
    fn cmp_magnitude(&self, other: &Self) -> Ordering {
        match self.scale.cmp(&other.scale) {
            Ordering::Equal => self.magnitude.cmp(&other.magnitude),
            Ordering::Less => self
                .magnitude
                .checked_mul(pow10(other.scale - self.scale))
                .map_or(Ordering::Greater, |m| m.cmp(&other.magnitude)),
            Ordering::Greater => other.cmp_magnitude(self).reverse(),
        }
    }
}

impl Ord for QuantityValue {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.signum(), other.signum()) {
            (a, b) if a != b => a.cmp(&b),
            (0, _) => Ordering::Equal,
            (1, _) => self.cmp_magnitude(other),
            _ => other.cmp_magnitude(self),
        }
    }
}

impl PartialOrd for QuantityValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for QuantityValue {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for QuantityValue {}

impl FromStr for QuantityValue {
    type Err = QuantityError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        QuantityValue::parse(text)
    }
}

impl TryFrom<&Quantity> for QuantityValue {
    type Error = QuantityError;

    fn try_from(quantity: &Quantity) -> Result<Self, Self::Error> {
        QuantityValue::parse(&quantity.0)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn q(text: &str) -> QuantityValue {
        text.parse().unwrap()
    }

    fn value(text: &str) -> Option<i128> {
        QuantityValue::parse(text).ok()?.value()
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
            assert_eq!(value(text), want, "{text}");
        }
    }

    #[test]
    fn quantities_parse_to_units_rounded_up() {
        assert_eq!(value("1Gi"), Some(1 << 30));
        assert_eq!(value("10Gi"), Some(10 << 30));
        assert_eq!(value("1.5Gi"), Some(3 << 29));
        assert_eq!(value("1.5Ki"), Some(1536));
        assert_eq!(value("500M"), Some(500_000_000));
        assert_eq!(value("2k"), Some(2000));
        assert_eq!(value("+2k"), Some(2000));
        assert_eq!(value("1e3"), Some(1000));
        assert_eq!(value("1500m"), Some(2));
        assert_eq!(value("0.1"), Some(1));
        assert_eq!(value("1.0000001Ki"), Some(1025));
        assert_eq!(value("123"), Some(123));
        assert_eq!(value("1024"), Some(1024));
        assert_eq!(value(".5Ki"), Some(512));
        assert_eq!(value(" 5. "), Some(5));
        assert_eq!(value("-1.5"), Some(-2));
    }

    #[test]
    fn milli_units_keep_sub_unit_values() {
        assert_eq!(q("500m").milli_value(), Some(500));
        assert_eq!(q("1n").milli_value(), Some(1));
        assert_eq!(q("-0.0005").milli_value(), Some(-1));
        assert_eq!(q("2").milli_value(), Some(2000));
    }

    #[test]
    fn nonsense_is_rejected_with_the_input_named() {
        for bad in [
            "", "Gi", "1Zi", "1GB", "1.2.3", "abc", "1e", "bogus", ".", "+-1", "1 Gi", "1e31",
        ] {
            let err = QuantityValue::parse(bad).expect_err(bad);
            assert_eq!(err.input(), bad);
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
        assert!(QuantityValue::parse(&"9".repeat(40)).is_err());
        assert!(QuantityValue::parse(&format!("0.{}1", "0".repeat(38))).is_err());
    }

    #[test]
    fn values_compare_exactly_across_units() {
        assert_eq!(q("1Gi"), q("1073741824"));
        assert_eq!(q("1.5k"), q("1500"));
        assert_eq!(q("1e3"), q("1k"));
        assert_eq!(q("-0"), q("0"));
        assert_eq!(q("1000m"), q("1"));
        assert_ne!(q("1Gi"), q("1G"));
        assert!(q("1Gi") > q("1G"));
        assert!(q("2Gi") > q("1Gi"));
        assert!(q("1.0000000001") > q("1"));
        assert!(q("-1Gi") < q("-1G"));
        assert!(q("-1") < q("0"));
        assert!(q("1e30") > q("0.00000000000000000000000000000000000001"));
    }

    #[test]
    fn signs_and_conversions() {
        assert!(q("1n").is_positive());
        assert!(!q("0").is_positive() && !q("-0").is_negative());
        assert!(q("-1Mi").is_negative());
        let k8s = Quantity("1Mi".into());
        assert_eq!(QuantityValue::try_from(&k8s), Ok(q("1048576")));
        assert_eq!(q("1e30").milli_value(), Some(10i128.pow(33)));
        assert_eq!(q("1024e30").milli_value(), Some(1024 * 10i128.pow(33)));
        assert_eq!(q("1000000e30").milli_value(), None);
    }
}
