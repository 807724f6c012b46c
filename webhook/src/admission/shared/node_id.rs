//! SH-21: Garage node IDs (the hex Ed25519 public key of a Garage process)
//! as they appear in specs, annotations and drain tokens.

/// A Garage node ID is exactly 64 hexadecimal characters.
pub fn is_node_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Canonical form of a node ID (or an annotation that should hold one):
/// trimmed and lower-cased, so that pins compare independently of how they
/// were typed.
pub fn canonical_id(s: &str) -> String {
    s.trim().to_ascii_lowercase()
}

/// True when `ids` is a canonical ID set, as drain tokens record them:
/// sorted, without duplicates, every entry a lower-case node ID. A token is
/// compared by its hash, so any other spelling of the same set is a forgery
/// or a bug.
pub fn is_canonical_id_set(ids: &[String]) -> bool {
    ids.windows(2).all(|w| w[0] < w[1])
        && ids
            .iter()
            .all(|i| is_node_id(i) && !i.bytes().any(|b| b.is_ascii_uppercase()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_their_canonical_form() {
        assert!(is_node_id(&"A".repeat(64)));
        assert!(!is_node_id(&"a".repeat(63)));
        assert_eq!(canonical_id("  ABC "), "abc");
    }

    #[test]
    fn canonical_sets_are_sorted_unique_and_lower_case() {
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        assert!(is_canonical_id_set(&[]));
        assert!(is_canonical_id_set(&[a.clone(), b.clone()]));
        assert!(!is_canonical_id_set(&[b.clone(), a.clone()]));
        assert!(!is_canonical_id_set(&[a.clone(), a.clone()]));
        assert!(!is_canonical_id_set(&["A".repeat(64)]));
        assert!(!is_canonical_id_set(&[format!(" {}", &a[1..])]));
    }
}
