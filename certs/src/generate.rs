//! Making a CA and serving certificates with rcgen (ECDSA P-256, signed with ring).

use std::net::IpAddr;
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType,
};
use time::OffsetDateTime;

use crate::Error;

/// Common name of every CA this crate makes; a reader of the Secret sees what made it.
pub const CA_COMMON_NAME: &str = "garage-webhook-ca";
/// Organisation in every subject this crate makes.
pub const ORGANIZATION: &str = "garage-operator";

/// Certificates start a little in the past so that an API server whose clock runs behind ours
/// does not see a certificate that is not valid yet. This is the most any certificate is
/// backdated: a certificate was made no later than `not_before + BACKDATE`.
pub const BACKDATE: Duration = Duration::from_secs(5 * 60);

/// A PEM certificate with its PEM (PKCS#8) private key.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyedCert {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PEM. Never logged; [`std::fmt::Debug`] leaves it out.
    pub key_pem: String,
}

impl std::fmt::Debug for KeyedCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyedCert")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"<redacted>")
            .finish()
    }
}

fn validity(params: &mut CertificateParams, now: SystemTime, lifetime: Duration) {
    // A short-lived certificate (tests force seconds) gets a proportionally short backdate, or
    // the backdate alone would put it past its renewal point at birth.
    let backdate = BACKDATE.min(lifetime / 10);
    let start = now.checked_sub(backdate).unwrap_or(now);
    params.not_before = OffsetDateTime::from(start);
    params.not_after = OffsetDateTime::from(now + lifetime);
}

/// A new self-signed CA valid for `lifetime` from `now`.
pub fn new_authority(now: SystemTime, lifetime: Duration) -> Result<KeyedCert, Error> {
    let key =
        KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(|e| Error::generate("CA key", e))?;
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, CA_COMMON_NAME);
    name.push(DnType::OrganizationName, ORGANIZATION);
    params.distinguished_name = name;
    // Path length 0: this CA signs serving certificates only, never another CA.
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut params, now, lifetime);
    let cert = params
        .self_signed(&key)
        .map_err(|e| Error::generate("CA certificate", e))?;
    Ok(KeyedCert {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// A serving certificate for `names` (DNS names, or IP addresses where they parse as one),
/// signed by `authority`, valid for `lifetime` from `now` but never past the CA.
pub fn issue_serving(
    authority: &KeyedCert,
    names: &[String],
    now: SystemTime,
    lifetime: Duration,
) -> Result<KeyedCert, Error> {
    let Some(first) = names.first() else {
        return Err(Error::Config(
            "a serving certificate needs at least one name".to_owned(),
        ));
    };
    let ca_key = KeyPair::from_pem(&authority.key_pem).map_err(|e| Error::generate("CA key", e))?;
    let issuer = Issuer::from_ca_cert_pem(&authority.cert_pem, ca_key)
        .map_err(|e| Error::generate("CA issuer", e))?;
    let ca_not_after = crate::inspect::validity(&authority.cert_pem, "CA certificate")?.not_after;

    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)
        .map_err(|e| Error::generate("serving key", e))?;
    let mut params = CertificateParams::default();
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, first.as_str());
    name.push(DnType::OrganizationName, ORGANIZATION);
    params.distinguished_name = name;
    params.subject_alt_names = names
        .iter()
        .map(|n| match n.parse::<IpAddr>() {
            Ok(ip) => Ok(SanType::IpAddress(ip)),
            Err(_) => n
                .clone()
                .try_into()
                .map(SanType::DnsName)
                .map_err(|e| Error::generate("serving certificate name", e)),
        })
        .collect::<Result<_, _>>()?;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    validity(&mut params, now, lifetime);
    // A leaf outliving its CA would be served but not trusted; cap it so renewal triggers first.
    let ca_end = OffsetDateTime::from(ca_not_after);
    if params.not_after > ca_end {
        params.not_after = ca_end;
    }
    let cert = params
        .signed_by(&key, &issuer)
        .map_err(|e| Error::generate("serving certificate", e))?;
    Ok(KeyedCert {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// The PEM certificate of a new CA valid for `lifetime` from `now` (tests).
#[cfg(test)]
pub(crate) fn test_ca(now: SystemTime, lifetime: Duration) -> String {
    new_authority(now, lifetime).unwrap().cert_pem
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inspect;

    fn names() -> Vec<String> {
        vec![
            "garage-webhook".into(),
            "garage-webhook.ops.svc".into(),
            "127.0.0.1".into(),
        ]
    }

    #[test]
    fn a_serving_certificate_is_signed_by_its_ca_and_names_every_san() {
        let now = SystemTime::now();
        let ca = new_authority(now, Duration::from_secs(3600 * 24 * 365)).unwrap();
        let leaf = issue_serving(&ca, &names(), now, Duration::from_secs(3600)).unwrap();
        assert!(inspect::signed_by(&leaf.cert_pem, &ca.cert_pem).unwrap());
        let other = new_authority(now, Duration::from_secs(3600)).unwrap();
        assert!(!inspect::signed_by(&leaf.cert_pem, &other.cert_pem).unwrap());
        let mut sans = inspect::subject_alt_names(&leaf.cert_pem).unwrap();
        sans.sort();
        let mut want = names();
        want.sort();
        assert_eq!(sans, want);
        let v = inspect::validity(&leaf.cert_pem, "leaf").unwrap();
        let life = v.not_after.duration_since(v.not_before).unwrap();
        assert_eq!(life, Duration::from_secs(3600) + BACKDATE);
        assert!(!format!("{leaf:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn a_leaf_never_outlives_its_ca() {
        let now = SystemTime::now();
        let ca = new_authority(now, Duration::from_secs(600)).unwrap();
        let leaf = issue_serving(&ca, &names(), now, Duration::from_secs(3600)).unwrap();
        let ca_v = inspect::validity(&ca.cert_pem, "ca").unwrap();
        let leaf_v = inspect::validity(&leaf.cert_pem, "leaf").unwrap();
        assert!(leaf_v.not_after <= ca_v.not_after);
    }

    #[test]
    fn no_names_is_refused() {
        let now = SystemTime::now();
        let ca = new_authority(now, Duration::from_secs(600)).unwrap();
        assert!(issue_serving(&ca, &[], now, Duration::from_secs(60)).is_err());
    }
}
