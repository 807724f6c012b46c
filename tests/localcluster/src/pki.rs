//! The cluster's certificates: one CA for serving and client certificates, a
//! front-proxy CA for the aggregation layer, and the service-account signing
//! key. Everything is ECDSA P-256 made with rcgen and written as PEM files.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};

use crate::Error;

/// The first address of the service CIDR: the `kubernetes` Service's
/// ClusterIP, which in-cluster clients dial and the serving certificate names.
pub const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);

/// A certificate and its key, as PEM, with the files they were written to.
#[derive(Clone, Debug)]
pub struct Pair {
    /// Certificate PEM.
    pub cert_pem: String,
    /// Private key PEM (PKCS#8).
    pub key_pem: String,
    /// File holding the certificate.
    pub cert_file: PathBuf,
    /// File holding the key.
    pub key_file: PathBuf,
}

/// All PKI material of one local cluster.
#[derive(Clone, Debug)]
pub struct Pki {
    /// The cluster CA (serving and client certificates).
    pub ca: Pair,
    /// The API server's serving certificate.
    pub apiserver: Pair,
    /// `system:masters` client certificate used by tests and kubectl.
    pub admin: Pair,
    /// kube-controller-manager's client certificate.
    pub controller_manager: Pair,
    /// kube-scheduler's client certificate.
    pub scheduler: Pair,
    /// Front-proxy CA, trusted for request-header authentication.
    pub front_proxy_ca: Pair,
    /// The API server's client certificate towards aggregated servers.
    pub front_proxy_client: Pair,
    /// Service-account token signing key (private key file) and its public
    /// key (`cert_file`/`cert_pem` hold the public key).
    pub service_account: Pair,
}

impl Pki {
    /// Creates every certificate under `dir`.
    pub fn create(dir: &Path) -> Result<Self, Error> {
        std::fs::create_dir_all(dir)?;
        let ca = ca("localcluster-ca")?;
        let front_proxy = ca_issuer("localcluster-front-proxy-ca")?;
        let mut server_names = vec![
            "localhost".to_owned(),
            "kubernetes".to_owned(),
            "kubernetes.default".to_owned(),
            "kubernetes.default.svc".to_owned(),
            "kubernetes.default.svc.cluster.local".to_owned(),
        ];
        server_names.sort();
        let apiserver = leaf(
            &ca,
            "kube-apiserver",
            None,
            server_names,
            vec![
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                IpAddr::V4(KUBERNETES_SERVICE_IP),
            ],
            ExtendedKeyUsagePurpose::ServerAuth,
        )?;
        let client = |cn: &str, org: Option<&str>| {
            leaf(
                &ca,
                cn,
                org,
                vec![],
                vec![],
                ExtendedKeyUsagePurpose::ClientAuth,
            )
        };
        let admin = client("localcluster-admin", Some("system:masters"))?;
        let controller_manager = client("system:kube-controller-manager", None)?;
        let scheduler = client("system:kube-scheduler", None)?;
        let front_proxy_client = leaf(
            &front_proxy,
            "front-proxy-client",
            None,
            vec![],
            vec![],
            ExtendedKeyUsagePurpose::ClientAuth,
        )?;
        let sa_key = KeyPair::generate()?;
        let write = |name: &str, (cert_pem, key_pem): (String, String)| -> Result<Pair, Error> {
            let cert_file = dir.join(format!("{name}.crt"));
            let key_file = dir.join(format!("{name}.key"));
            std::fs::write(&cert_file, &cert_pem)?;
            write_private(&key_file, &key_pem)?;
            Ok(Pair {
                cert_pem,
                key_pem,
                cert_file,
                key_file,
            })
        };
        Ok(Pki {
            ca: write("ca", (ca.pem(), ca.key().serialize_pem()))?,
            apiserver: write("apiserver", apiserver)?,
            admin: write("admin", admin)?,
            controller_manager: write("controller-manager", controller_manager)?,
            scheduler: write("scheduler", scheduler)?,
            front_proxy_ca: write(
                "front-proxy-ca",
                (front_proxy.pem(), front_proxy.key().serialize_pem()),
            )?,
            front_proxy_client: write("front-proxy-client", front_proxy_client)?,
            service_account: write(
                "service-account",
                (sa_key.public_key_pem(), sa_key.serialize_pem()),
            )?,
        })
    }
}

fn ca(name: &str) -> Result<CertifiedIssuer<'static, KeyPair>, Error> {
    ca_issuer(name)
}

fn ca_issuer(name: &str) -> Result<CertifiedIssuer<'static, KeyPair>, Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(CertifiedIssuer::self_signed(params, KeyPair::generate()?)?)
}

fn leaf(
    issuer: &CertifiedIssuer<'static, KeyPair>,
    common_name: &str,
    organization: Option<&str>,
    dns_names: Vec<String>,
    ips: Vec<IpAddr>,
    usage: ExtendedKeyUsagePurpose,
) -> Result<(String, String), Error> {
    let mut params = CertificateParams::new(dns_names)?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    if let Some(org) = organization {
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
    }
    params
        .subject_alt_names
        .extend(ips.into_iter().map(SanType::IpAddress));
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![usage];
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Writes a private key readable by its owner only.
pub(crate) fn write_private(path: &Path, contents: &str) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, contents)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}
