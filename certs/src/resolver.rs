//! The serving keypair as rustls sees it: a resolver whose certificate is swapped atomically, so
//! a rotation changes what new handshakes get without touching open connections.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arc_swap::ArcSwapOption;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

use crate::Error;
use crate::inspect::Validity;

/// The one crypto provider of this workspace's TLS servers.
pub fn provider() -> CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// Installs ring as the process-wide rustls provider. Call once at process start: with more
/// than one provider compiled in, rustls would otherwise find no default. Installing twice is
/// harmless (the second call is ignored).
pub fn install_default_provider() {
    // Err means a provider is already installed, which is the state we want.
    let _ = provider().install_default();
}

/// Parses a PEM chain (leaf first) and PEM key into a keypair rustls serves, refusing a key
/// that does not belong to the leaf.
pub fn certified_key(cert_pem: &str, key_pem: &str) -> Result<CertifiedKey, Error> {
    let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::parse("serving certificate", e))?;
    if chain.is_empty() {
        return Err(Error::parse("serving certificate", "no CERTIFICATE block"));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
        .map_err(|e| Error::parse("serving key", e))?;
    Ok(CertifiedKey::from_der(chain, key, &provider())?)
}

/// Serves whatever keypair was installed last. Until the first one is installed, handshakes
/// fail and [`CertResolver::is_ready`] is false.
#[derive(Debug, Default)]
pub struct CertResolver {
    current: ArcSwapOption<CertifiedKey>,
    generation: AtomicU64,
}

impl CertResolver {
    /// A resolver with no keypair yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the served keypair. Handshakes already under way keep the keypair they
    /// resolved; every later one gets this. Returns how many keypairs were installed so far.
    pub fn install(&self, cert_pem: &str, key_pem: &str) -> Result<u64, Error> {
        let key = certified_key(cert_pem, key_pem)?;
        self.current.store(Some(Arc::new(key)));
        Ok(self.generation.fetch_add(1, Ordering::AcqRel) + 1)
    }

    /// True once a keypair is installed.
    pub fn is_ready(&self) -> bool {
        self.current.load().is_some()
    }

    /// How many keypairs were installed so far.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The leaf certificate served now (DER), if any.
    pub fn current_leaf(&self) -> Option<CertificateDer<'static>> {
        self.current
            .load()
            .as_ref()
            .and_then(|k| k.cert.first().cloned())
    }

    /// When the leaf served now starts and stops being valid, if one is served.
    pub fn current_validity(&self) -> Option<Validity> {
        let leaf = self.current_leaf()?;
        crate::inspect::validity_der(&leaf, "served certificate").ok()
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.load_full()
    }
}

/// A TLS 1.2/1.3 server configuration (ring) that serves `resolver`'s keypair over HTTP/1.1.
///
/// HTTP/2 is not offered: the API server speaks HTTP/1.1 to webhooks well, and leaving h2 out
/// sidesteps the HTTP/2 rapid-reset and stream-flood classes of attack (the Go operator
/// disables it for the same reason).
pub fn server_config(resolver: Arc<CertResolver>) -> Result<Arc<rustls::ServerConfig>, Error> {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(provider()))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::generate::{issue_serving, new_authority};

    #[test]
    fn install_swaps_and_counts() {
        let now = SystemTime::now();
        let ca = new_authority(now, Duration::from_secs(3600)).unwrap();
        let a = issue_serving(&ca, &["a".into()], now, Duration::from_secs(600)).unwrap();
        let b = issue_serving(&ca, &["b".into()], now, Duration::from_secs(600)).unwrap();
        let resolver = CertResolver::new();
        assert!(!resolver.is_ready());
        assert_eq!(resolver.current_validity(), None);
        assert_eq!(resolver.install(&a.cert_pem, &a.key_pem).unwrap(), 1);
        let first = resolver.current_leaf().unwrap();
        assert_eq!(
            resolver.current_validity(),
            Some(crate::inspect::validity(&a.cert_pem, "a").unwrap())
        );
        assert_eq!(resolver.install(&b.cert_pem, &b.key_pem).unwrap(), 2);
        assert_ne!(resolver.current_leaf().unwrap(), first);
        assert!(resolver.install(&a.cert_pem, &b.key_pem).is_err());
        assert!(resolver.install("", "").is_err());
        assert_eq!(resolver.generation(), 2);
        assert!(server_config(Arc::new(resolver)).is_ok());
    }
}
