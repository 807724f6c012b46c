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

/// Most certificates a bundle carries besides the signing CA. Retired CAs leave the bundle on
/// their own (see [`trusted_bundle`]); the cap only bounds what a tampered caBundle could add.
pub const MAX_OTHERS: usize = 8;

/// `signing` (PEM) followed by the certificates of `others` (DER) the API server must still
/// trust: each one that is not `signing`, is valid at `now` and, when `keep_until` is given,
/// only while `now` is before it. Duplicates are dropped; at most [`MAX_OTHERS`] are kept, the
/// first ones in `others` first.
///
/// A serving certificate never outlives the CA that signed it, so a CA past its end signs
/// nothing in use; `keep_until` is the instant after which no certificate any of `others`
/// signed can still be valid (see [`crate::renewal::retirement_end`]).
pub fn trusted_bundle(
    signing: &str,
    others: &[Vec<u8>],
    keep_until: Option<SystemTime>,
    now: SystemTime,
) -> String {
    let signing_der =
        inspect::certificates_der(signing.as_bytes(), "CA certificate").unwrap_or_default();
    let mut out = String::from(signing);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    for der in kept_others(&signing_der, others, keep_until, now) {
        out.push_str(&encode_certificate(der));
    }
    out
}

/// When [`trusted_bundle`] of the same arguments next drops a certificate (the earliest end
/// among those it keeps, or `keep_until`), or `None` when it keeps none besides `signing`.
pub fn next_retirement(
    signing: &str,
    others: &[Vec<u8>],
    keep_until: Option<SystemTime>,
    now: SystemTime,
) -> Option<SystemTime> {
    let signing_der =
        inspect::certificates_der(signing.as_bytes(), "CA certificate").unwrap_or_default();
    kept_others(&signing_der, others, keep_until, now)
        .into_iter()
        .filter_map(|der| inspect::validity_der(der, "CA bundle entry").ok())
        .map(|v| keep_until.map_or(v.not_after, |until| v.not_after.min(until)))
        .min()
}

fn kept_others<'a>(
    signing: &[Vec<u8>],
    others: &'a [Vec<u8>],
    keep_until: Option<SystemTime>,
    now: SystemTime,
) -> Vec<&'a [u8]> {
    let mut kept: Vec<&[u8]> = Vec::new();
    if keep_until.is_some_and(|until| now >= until) {
        return kept;
    }
    for der in others {
        if kept.len() == MAX_OTHERS {
            break;
        }
        if signing.contains(der) || kept.contains(&der.as_slice()) {
            continue;
        }
        let alive = inspect::validity_der(der, "CA bundle entry").is_ok_and(|v| v.not_after > now);
        if alive {
            kept.push(der);
        }
    }
    kept
}

/// `first` followed by every certificate of `previous` that is still valid at `now` and is not
/// `first` itself: [`trusted_bundle`] with no end besides each certificate's own.
pub fn rotate_bundle(first: &str, previous: &str, now: SystemTime) -> String {
    let previous = inspect::certificates_der(previous.as_bytes(), "CA bundle").unwrap_or_default();
    trusted_bundle(first, &previous, None, now)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::generate::{new_authority, test_ca};

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

    fn der(pem: &str) -> Vec<u8> {
        inspect::certificates_der(pem.as_bytes(), "pem")
            .unwrap()
            .remove(0)
    }

    #[test]
    fn others_stay_until_the_retirement_end_or_their_own_end() {
        let now = SystemTime::now();
        let signing = test_ca(now, Duration::from_secs(7200));
        let long = test_ca(now, Duration::from_secs(7200));
        let short = test_ca(now, Duration::from_secs(600));
        let others = vec![der(&long), der(&short), der(&long), der(&signing)];
        let until = now + Duration::from_secs(1800);

        let bundle = trusted_bundle(&signing, &others, Some(until), now);
        assert!(bundle.starts_with(&signing));
        let all = format!("{signing}{long}{short}");
        assert!(bundle_matches(Some(bundle.as_bytes()), all.as_bytes()));
        assert_eq!(
            inspect::certificates_der(bundle.as_bytes(), "b")
                .unwrap()
                .len(),
            3
        );
        // The short one ends first, at its own not_after.
        let first_drop = next_retirement(&signing, &others, Some(until), now).unwrap();
        assert_eq!(
            first_drop,
            inspect::validity(&short, "short").unwrap().not_after
        );

        let later = now + Duration::from_secs(900);
        let bundle = trusted_bundle(&signing, &others, Some(until), later);
        let kept = format!("{signing}{long}");
        assert!(bundle_matches(Some(bundle.as_bytes()), kept.as_bytes()));
        assert_eq!(
            next_retirement(&signing, &others, Some(until), later),
            Some(until)
        );

        let after = until + Duration::from_secs(1);
        let bundle = trusted_bundle(&signing, &others, Some(until), after);
        assert!(bundle_matches(Some(bundle.as_bytes()), signing.as_bytes()));
        assert_eq!(next_retirement(&signing, &others, Some(until), after), None);
    }

    #[test]
    fn a_bundle_keeps_at_most_max_others() {
        let now = SystemTime::now();
        let signing = test_ca(now, Duration::from_secs(3600));
        let others: Vec<Vec<u8>> = (0..MAX_OTHERS + 3)
            .map(|_| der(&test_ca(now, Duration::from_secs(3600))))
            .collect();
        let bundle = trusted_bundle(&signing, &others, None, now);
        let certs = inspect::certificates_der(bundle.as_bytes(), "b").unwrap();
        assert_eq!(certs.len(), MAX_OTHERS + 1);
        assert_eq!(certs[1], others[0], "the first others are kept first");
    }
}
