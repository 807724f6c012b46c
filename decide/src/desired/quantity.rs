//! Kubernetes quantities as exact byte counts, for Garage capacities.

use shared_types::quantity::QuantityValue;

/// Bytes of a Kubernetes quantity (`10Gi`, `500M`, `1.5Ti`, `1e9`), rounded up to a whole
/// byte; `None` for anything that is not a non-negative quantity. Garage must get integral
/// byte counts: it would read a Kubernetes `m` (milli) suffix as mega.
pub fn to_bytes(q: &str) -> Option<u64> {
    let value = QuantityValue::parse(q).ok()?;
    if value.is_negative() {
        return None;
    }
    value.value().and_then(|bytes| u64::try_from(bytes).ok())
}

#[cfg(test)]
mod tests {
    use super::to_bytes;

    #[test]
    fn parses_binary_and_decimal_suffixes() {
        assert_eq!(to_bytes("10Gi"), Some(10 << 30));
        assert_eq!(to_bytes("1.5Ki"), Some(1536));
        assert_eq!(to_bytes("500M"), Some(500_000_000));
        assert_eq!(to_bytes("1e3"), Some(1000));
        assert_eq!(to_bytes("1024"), Some(1024));
        assert_eq!(to_bytes("+2k"), Some(2000));
    }

    #[test]
    fn rounds_fractions_up() {
        assert_eq!(to_bytes("1500m"), Some(2));
        assert_eq!(to_bytes("0.1"), Some(1));
        assert_eq!(to_bytes("1.0000001Ki"), Some(1025));
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "Gi", "-1Gi", "1GB", "1.2.3", "abc", "1e"] {
            assert_eq!(to_bytes(bad), None, "{bad:?}");
        }
    }
}
