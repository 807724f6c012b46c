//! Resource quantities in the capacity and size rules (SH-8, GC-C21, GC-S5,
//! GN-U13). Their values come from [`shared_types::quantity`], the one
//! parser the operator has; what lives here is the rules' own reading of
//! them: the milli-unit sums of the pool rules, "unchanged" with a textual
//! fallback, and byte formatting for messages.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use shared_types::quantity::QuantityValue;

/// The exact value of `q`, or `None` when it is not a quantity.
pub fn parse(q: &Quantity) -> Option<QuantityValue> {
    QuantityValue::try_from(q).ok()
}

/// The value of `q` in milli-units (magnitude rounded up), or `None` when
/// it is not a quantity.
pub fn milli_value(q: &Quantity) -> Option<i128> {
    parse(q)?.milli_value()
}

/// True when both quantities are absent, or both parse to the same value;
/// text that does not parse is compared as written, so an unparsable value
/// still counts as unchanged when it is left alone.
pub fn quantity_eq(a: Option<&Quantity>, b: Option<&Quantity>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => match (parse(a), parse(b)) {
            (Some(x), Some(y)) => x == y,
            _ => a.0 == b.0,
        },
        _ => false,
    }
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
    fn milli_units_keep_sub_unit_values() {
        assert_eq!(milli_value(&q("500m")), Some(500));
        assert_eq!(format_bytes((700 * 1000) << 30), "700Gi");
    }

    #[test]
    fn quantities_compare_by_value() {
        assert!(quantity_eq(Some(&q("1Gi")), Some(&q("1073741824"))));
        assert!(quantity_eq(Some(&q("1.5k")), Some(&q("1500"))));
        assert!(!quantity_eq(Some(&q("1Gi")), Some(&q("1G"))));
        assert!(!quantity_eq(Some(&q("1Gi")), None));
        assert!(quantity_eq(Some(&q("bogus")), Some(&q("bogus"))));
    }
}
