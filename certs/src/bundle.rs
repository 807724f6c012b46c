//! The CA bundle: which CAs the API server trusts for this install, and whether an installed
//! caBundle already says the same.

use std::time::SystemTime;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::inspect;

/// Whether `current` (a caBundle as found on a webhook configuration or CRD, PEM bytes) trusts
/// exactly the certificates of `wanted` (PEM). Order, whitespace and non-certificate blocks do
/// not matter; anything that does not parse does not match, so it gets rewritten.
pub fn bundle_matches(current: Option<&[u8]>, wanted: &[u8]) -> bool {
    let Ok(mut wanted) = inspect::certificates_der(wanted, "wanted CA bundle") else {
        return false;
    };
    let Some(current) = current else {
        return wanted.is_empty();
    };
    let Ok(mut current) = inspect::certificates_der(current, "installed caBundle") else {
        return false;
    };
    wanted.sort();
    wanted.dedup();
    current.sort();
    current.dedup();
    current == wanted
}

/// PEM encoding of one DER certificate.
pub fn encode_certificate(der: &[u8]) -> String {
    let body = STANDARD.encode(der);
    let mut out = String::with_capacity(body.len() + 64);
    out.push_str("-----BEGIN CERTIFICATE-----\n");
    for chunk in body.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

/// `first` followed by every certificate of `previous` that is still valid at `now` and is not
/// `first` itself. A rotated-out CA stays trusted until it expires, so serving certificates it
/// signed keep working while replicas move to the new one.
pub fn rotate_bundle(first: &str, previous: &str, now: SystemTime) -> String {
    let first_der =
        inspect::certificates_der(first.as_bytes(), "CA certificate").unwrap_or_default();
    let mut out = String::from(first);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let Ok(previous) = inspect::certificates_der(previous.as_bytes(), "CA bundle") else {
        return out;
    };
    for der in previous {
        if first_der.contains(&der) {
            continue;
        }
        let pem = encode_certificate(&der);
        let alive = inspect::validity(&pem, "CA bundle entry").is_ok_and(|v| v.not_after > now);
        if alive {
            out.push_str(&pem);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::generate::new_authority;

    #[test]
    fn order_and_whitespace_do_not_matter() {
        let now = SystemTime::now();
        let a = new_authority(now, Duration::from_secs(3600))
            .unwrap()
            .cert_pem;
        let b = new_authority(now, Duration::from_secs(3600))
            .unwrap()
            .cert_pem;
        let ab = format!("{a}{b}");
        let ba = format!("{b}\n\n{a}");
        assert!(bundle_matches(Some(ba.as_bytes()), ab.as_bytes()));
        assert!(!bundle_matches(Some(a.as_bytes()), ab.as_bytes()));
        assert!(!bundle_matches(None, a.as_bytes()));
        assert!(!bundle_matches(Some(b"garbage"), a.as_bytes()));
        assert!(!bundle_matches(Some(b""), a.as_bytes()));
    }

    #[test]
    fn reencoding_round_trips() {
        let now = SystemTime::now();
        let a = new_authority(now, Duration::from_secs(3600))
            .unwrap()
            .cert_pem;
        let der = inspect::certificates_der(a.as_bytes(), "a").unwrap();
        assert!(bundle_matches(
            Some(encode_certificate(&der[0]).as_bytes()),
            a.as_bytes()
        ));
    }

    #[test]
    fn rotation_keeps_the_live_previous_ca_and_drops_expired_ones() {
        let now = SystemTime::now();
        let old = new_authority(now, Duration::from_secs(3600))
            .unwrap()
            .cert_pem;
        let new = new_authority(now, Duration::from_secs(7200))
            .unwrap()
            .cert_pem;
        let bundle = rotate_bundle(&new, &old, now);
        assert!(bundle_matches(
            Some(bundle.as_bytes()),
            format!("{old}{new}").as_bytes()
        ));
        assert!(bundle.starts_with(&new));
        let later = now + Duration::from_secs(4000);
        let bundle = rotate_bundle(&new, &bundle, later);
        assert!(bundle_matches(Some(bundle.as_bytes()), new.as_bytes()));
    }
}
