//! The Secret in which the reconciler keeps an immutable snapshot of imported key material.
//! Its name is derived from the GarageKey's; the webhook refuses a generated credentials Secret
//! of the same name (GK-M), and the reconciler writes the snapshot under it.

use crate::drain::sha256_hex;

const MAX_NAME: usize = 63;

fn is_dns1123_label(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !s.is_empty()
        && s.len() <= MAX_NAME
        && s.chars().all(|c| alnum(c) || c == '-')
        && s.starts_with(alnum)
        && s.ends_with(alnum)
}

/// The snapshot Secret's name for the GarageKey `key_name`: `<key_name>-import-snapshot` when
/// that is a DNS-1123 label, otherwise a label made of its first characters (lower-cased, `.`
/// as `-`, at most 46) and the first 16 hex digits of the SHA-256 of the full identity.
pub fn import_snapshot_secret_name(key_name: &str) -> String {
    let identity = format!("{key_name}-import-snapshot");
    if is_dns1123_label(&identity) {
        return identity;
    }
    let digest = sha256_hex(identity.as_bytes());
    let suffix = format!("-{}", &digest[..16]);
    let lowered = identity.to_lowercase().replace('.', "-");
    let mut prefix = lowered.trim_matches('-');
    let room = MAX_NAME - suffix.len();
    if prefix.len() > room {
        let mut cut = room;
        while !prefix.is_char_boundary(cut) {
            cut -= 1;
        }
        prefix = prefix[..cut].trim_end_matches('-');
    }
    let prefix = if prefix.is_empty() { "garage" } else { prefix };
    format!("{prefix}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_name_keeps_its_readable_identity() {
        assert_eq!(
            import_snapshot_secret_name("app-key"),
            "app-key-import-snapshot"
        );
    }

    #[test]
    fn a_long_or_dotted_name_gets_a_bounded_hashed_label() {
        let long = "k".repeat(60);
        let name = import_snapshot_secret_name(&long);
        assert_eq!(name.len(), 63);
        assert!(name.starts_with(&"k".repeat(46)));
        let digest = sha256_hex(format!("{long}-import-snapshot").as_bytes());
        assert!(name.ends_with(&format!("-{}", &digest[..16])));
        assert!(is_dns1123_label(&name));

        let dotted = import_snapshot_secret_name("team.app");
        assert!(dotted.starts_with("team-app-import-snapshot-"), "{dotted}");
        assert!(is_dns1123_label(&dotted));
    }

    #[test]
    fn a_cut_never_ends_in_a_hyphen_or_splits_a_character() {
        let name = import_snapshot_secret_name(&format!("{}-{}", "a".repeat(45), "b".repeat(20)));
        assert!(is_dns1123_label(&name), "{name}");
        // Not a name the API server accepts, but the derivation must not panic on it.
        let odd = import_snapshot_secret_name(&"é".repeat(40));
        assert!(odd.len() <= 63, "{odd}");
    }
}
