//! Reading facts back out of PEM certificates: validity, names, issuer.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::pem::Pem;

use crate::Error;

/// When a certificate starts and stops being valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Validity {
    /// Start of validity.
    pub not_before: SystemTime,
    /// End of validity.
    pub not_after: SystemTime,
}

fn to_system_time(seconds: i64) -> SystemTime {
    if seconds >= 0 {
        UNIX_EPOCH + Duration::from_secs(seconds.unsigned_abs())
    } else {
        UNIX_EPOCH
            .checked_sub(Duration::from_secs(seconds.unsigned_abs()))
            .unwrap_or(UNIX_EPOCH)
    }
}

/// Every PEM block of type CERTIFICATE in `pem`, as DER, in order. Other blocks are skipped.
pub fn certificates_der(pem: &[u8], what: &'static str) -> Result<Vec<Vec<u8>>, Error> {
    let mut out = Vec::new();
    for block in Pem::iter_from_buffer(pem) {
        let block = block.map_err(|e| Error::parse(what, e))?;
        if block.label == "CERTIFICATE" {
            out.push(block.contents);
        }
    }
    Ok(out)
}

fn with_first<T>(
    pem: &str,
    what: &'static str,
    f: impl FnOnce(&X509Certificate<'_>) -> Result<T, Error>,
) -> Result<T, Error> {
    let ders = certificates_der(pem.as_bytes(), what)?;
    let Some(der) = ders.first() else {
        return Err(Error::parse(what, "no CERTIFICATE block"));
    };
    let (_, cert) = x509_parser::parse_x509_certificate(der).map_err(|e| Error::parse(what, e))?;
    f(&cert)
}

fn validity_of(cert: &X509Certificate<'_>) -> Validity {
    Validity {
        not_before: to_system_time(cert.validity().not_before.timestamp()),
        not_after: to_system_time(cert.validity().not_after.timestamp()),
    }
}

/// Validity of the first certificate in `pem`.
pub fn validity(pem: &str, what: &'static str) -> Result<Validity, Error> {
    with_first(pem, what, |cert| Ok(validity_of(cert)))
}

/// Validity of one DER certificate.
pub fn validity_der(der: &[u8], what: &'static str) -> Result<Validity, Error> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).map_err(|e| Error::parse(what, e))?;
    Ok(validity_of(&cert))
}

/// DNS names and IP addresses of the first certificate in `pem`, as text.
pub fn subject_alt_names(pem: &str) -> Result<Vec<String>, Error> {
    with_first(pem, "serving certificate", |cert| {
        let Some(ext) = cert
            .subject_alternative_name()
            .map_err(|e| Error::parse("serving certificate", e))?
        else {
            return Ok(Vec::new());
        };
        let mut names = Vec::new();
        for name in &ext.value.general_names {
            match name {
                GeneralName::DNSName(dns) => names.push((*dns).to_owned()),
                GeneralName::IPAddress(bytes) => {
                    let ip = match bytes.len() {
                        4 => <[u8; 4]>::try_from(*bytes).ok().map(std::net::IpAddr::from),
                        16 => <[u8; 16]>::try_from(*bytes)
                            .ok()
                            .map(std::net::IpAddr::from),
                        _ => None,
                    };
                    if let Some(ip) = ip {
                        names.push(ip.to_string());
                    }
                }
                _ => {}
            }
        }
        Ok(names)
    })
}

/// Whether the first certificate of `leaf_pem` carries a valid signature of the first
/// certificate of `ca_pem`.
pub fn signed_by(leaf_pem: &str, ca_pem: &str) -> Result<bool, Error> {
    with_first(ca_pem, "CA certificate", |ca| {
        with_first(leaf_pem, "serving certificate", |leaf| {
            Ok(leaf.issuer() == ca.subject()
                && leaf.verify_signature(Some(ca.public_key())).is_ok())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(validity("not pem", "x").is_err());
        assert!(subject_alt_names("").is_err());
        let bogus = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert!(validity(bogus, "x").is_err());
        assert_eq!(certificates_der(b"", "x").unwrap().len(), 0);
    }
}
