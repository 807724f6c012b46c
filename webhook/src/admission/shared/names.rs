//! Kubernetes name grammars (DNS-1123/1035 labels and subdomains, qualified
//! label keys, label values) used by the naming rules (GC-C3, GC-C21, SH-9,
//! SH-13).

fn is_alnum_lower(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// A DNS-1123 label: 1..=63 lower-case alphanumerics or '-', starting and
/// ending with an alphanumeric.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars().all(|c| is_alnum_lower(c) || c == '-')
        && s.starts_with(is_alnum_lower)
        && s.ends_with(is_alnum_lower)
}

/// A DNS-1123 subdomain: at most 253 characters of dot-separated DNS-1123
/// labels.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}

/// A DNS-1035 label: a DNS-1123 label that starts with a letter.
pub fn is_dns1035_label(s: &str) -> bool {
    is_dns1123_label(s) && s.starts_with(|c: char| c.is_ascii_lowercase())
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

/// A qualified name (label or annotation key): `[prefix/]name` where the
/// prefix is a DNS-1123 subdomain and the name at most 63 characters of
/// alphanumerics, '-', '_' or '.', beginning and ending alphanumeric.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => is_dns1123_subdomain(prefix) && is_name_part(name),
        None => is_name_part(s),
    }
}

/// A label value: empty, or a name part of at most 63 characters.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_name_part(s)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn grammars_accept_and_reject_the_usual_suspects() {
        assert!(is_dns1123_label("local-700"));
        assert!(!is_dns1123_label("Local"));
        assert!(!is_dns1123_label("-a"));
        assert!(!is_dns1123_label(&"a".repeat(64)));
        assert!(is_dns1035_label("garage"));
        assert!(!is_dns1035_label("7garage"));
        assert!(is_dns1123_subdomain("a.b-c"));
        assert!(!is_dns1123_subdomain("Bad_Cluster"));
        assert!(is_qualified_name("storage.garage.example/pool"));
        assert!(!is_qualified_name("not a valid key!"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(is_label_value(""));
        assert!(!is_label_value(&"x".repeat(64)));
    }

    #[test]
    fn names_the_garage_node_rules_check() {
        assert!(is_dns1123_label("garage"));
        assert!(!is_dns1123_label("Bad_Namespace"));
        assert!(is_dns1123_subdomain("a.b-c"));
        assert!(!is_dns1123_subdomain("Bad_Cluster"));
        assert!(is_qualified_name("topology.kubernetes.io/zone"));
        assert!(!is_qualified_name("bad key"));
    }
}
