//! cert-manager mode: serve the keypair cert-manager keeps in a mounted Secret, reloading it
//! when the files change. The caBundle is cert-manager's cainjector's job.

use std::path::PathBuf;
use std::sync::Arc;

use crate::{CertResolver, Error, MountedConfig};

/// What one look at the files found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Poll {
    /// A new keypair was installed.
    Installed,
    /// The files hold the keypair already served.
    Unchanged,
    /// A file is missing (cert-manager has not issued yet): keep waiting, stay NotReady if
    /// nothing was served yet.
    Missing(PathBuf),
}

/// Watches a mounted keypair.
pub struct Mounted {
    config: MountedConfig,
    resolver: Arc<CertResolver>,
    served: Option<(String, String)>,
}

impl Mounted {
    /// Watches `config.dir`, installing into `resolver`.
    pub fn new(config: MountedConfig, resolver: Arc<CertResolver>) -> Self {
        Mounted {
            config,
            resolver,
            served: None,
        }
    }

    async fn read(&self, name: &str) -> Result<Option<String>, Error> {
        let path = self.config.dir.join(name);
        match tokio::fs::read_to_string(&path).await {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(Error::Read { path, source }),
        }
    }

    /// Reads both files and installs them when their content changed. A pair that does not
    /// load (for example a certificate already replaced while the key is still the old one,
    /// read between the kubelet's two writes) is refused and the previous keypair stays.
    pub async fn poll(&mut self) -> Result<Poll, Error> {
        let Some(cert) = self.read(&self.config.cert_file).await? else {
            return Ok(Poll::Missing(self.config.dir.join(&self.config.cert_file)));
        };
        let Some(key) = self.read(&self.config.key_file).await? else {
            return Ok(Poll::Missing(self.config.dir.join(&self.config.key_file)));
        };
        if self
            .served
            .as_ref()
            .is_some_and(|(c, k)| *c == cert && *k == key)
        {
            return Ok(Poll::Unchanged);
        }
        self.resolver.install(&cert, &key)?;
        self.served = Some((cert, key));
        Ok(Poll::Installed)
    }

    /// Polls forever at `poll_interval`.
    pub async fn run(mut self) {
        let mut reported_missing = false;
        loop {
            match self.poll().await {
                Ok(Poll::Installed) => {
                    reported_missing = false;
                    tracing::info!(
                        generation = self.resolver.generation(),
                        "mounted serving certificate installed"
                    );
                }
                Ok(Poll::Unchanged) => {}
                Ok(Poll::Missing(path)) => {
                    if !reported_missing {
                        tracing::warn!(path = %path.display(), "waiting for the mounted keypair");
                        reported_missing = true;
                    }
                }
                Err(e) => tracing::warn!(error = %e, "mounted keypair not loaded; retrying"),
            }
            tokio::time::sleep(self.config.poll_interval).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::generate::{issue_serving, new_authority};

    #[tokio::test]
    async fn missing_then_present_then_changed() {
        let dir = tempfile::tempdir().unwrap();
        let resolver = Arc::new(CertResolver::new());
        let mut mounted = Mounted::new(MountedConfig::new(dir.path()), resolver.clone());
        assert!(matches!(mounted.poll().await.unwrap(), Poll::Missing(_)));
        assert!(!resolver.is_ready());

        let now = SystemTime::now();
        let ca = new_authority(now, Duration::from_secs(3600)).unwrap();
        let a = issue_serving(&ca, &["a".into()], now, Duration::from_secs(600)).unwrap();
        std::fs::write(dir.path().join("tls.crt"), &a.cert_pem).unwrap();
        assert!(matches!(mounted.poll().await.unwrap(), Poll::Missing(_)));
        std::fs::write(dir.path().join("tls.key"), &a.key_pem).unwrap();
        assert_eq!(mounted.poll().await.unwrap(), Poll::Installed);
        assert!(resolver.is_ready());
        assert_eq!(mounted.poll().await.unwrap(), Poll::Unchanged);

        let b = issue_serving(&ca, &["b".into()], now, Duration::from_secs(600)).unwrap();
        std::fs::write(dir.path().join("tls.crt"), &b.cert_pem).unwrap();
        assert!(mounted.poll().await.is_err(), "a torn pair is refused");
        assert_eq!(resolver.generation(), 1);
        std::fs::write(dir.path().join("tls.key"), &b.key_pem).unwrap();
        assert_eq!(mounted.poll().await.unwrap(), Poll::Installed);
        assert_eq!(resolver.generation(), 2);
    }
}
