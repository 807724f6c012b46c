//! What the certificate machinery is told: which mode, which names, which lifetimes.

use std::path::PathBuf;
use std::time::Duration;

use crate::Error;

/// The label key that marks the objects of one install (the Helm release label). The webhook
/// configurations and the GarageCluster CRD of an install carry it with the release name as
/// value; only objects carrying the configured key and value get their caBundle written, so two
/// installs in one cluster never overwrite each other's bundles.
pub const DEFAULT_INSTALL_LABEL_KEY: &str = shared_types::keys::label::LABEL_APP_INSTANCE;

/// A label `key=value` that selects this install's webhook configurations and CRDs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstallLabel {
    /// Label key, for example `app.kubernetes.io/instance`.
    pub key: String,
    /// Label value, for example the Helm release name.
    pub value: String,
}

impl InstallLabel {
    /// Parses `key=value`; a bare `value` takes [`DEFAULT_INSTALL_LABEL_KEY`].
    pub fn parse(text: &str) -> Result<Self, Error> {
        let (key, value) = match text.split_once('=') {
            Some((key, value)) => (key.trim(), value.trim()),
            None => (DEFAULT_INSTALL_LABEL_KEY, text.trim()),
        };
        if key.is_empty() || value.is_empty() {
            return Err(Error::Config(format!(
                "install label {text:?} must be key=value with both parts non-empty"
            )));
        }
        Ok(InstallLabel {
            key: key.to_owned(),
            value: value.to_owned(),
        })
    }

    /// The label selector `key=value` for list calls.
    pub fn selector(&self) -> String {
        format!("{}={}", self.key, self.value)
    }
}

/// How long certificates live and when they are replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lifetimes {
    /// Validity of the self-managed CA.
    pub ca: Duration,
    /// Validity of a serving certificate.
    pub serving: Duration,
    /// Fraction of a certificate's validity after which it is replaced, as (numerator,
    /// denominator). Two thirds leaves a third of the lifetime to recover from an outage of the
    /// webhook or the API server before the certificate expires.
    pub renew_at: (u32, u32),
}

impl Default for Lifetimes {
    fn default() -> Self {
        Lifetimes {
            ca: Duration::from_secs(10 * 365 * 24 * 3600),
            serving: Duration::from_secs(90 * 24 * 3600),
            renew_at: (2, 3),
        }
    }
}

impl Lifetimes {
    /// Refuses lifetimes that would make the renewal loop spin or never renew.
    pub fn check(&self) -> Result<(), Error> {
        let (num, den) = self.renew_at;
        if den == 0 || num == 0 || num >= den {
            return Err(Error::Config(format!(
                "renewal fraction {num}/{den} must be strictly between 0 and 1"
            )));
        }
        if self.serving < Duration::from_secs(10) {
            return Err(Error::Config(format!(
                "serving certificate lifetime {:?} is shorter than 10 s",
                self.serving
            )));
        }
        if self.ca < self.serving {
            return Err(Error::Config(format!(
                "CA lifetime {:?} is shorter than the serving lifetime {:?}",
                self.ca, self.serving
            )));
        }
        Ok(())
    }
}

/// Self-managed mode: a CA and serving certificate kept in a Secret shared by every replica.
#[derive(Clone, Debug)]
pub struct SelfManagedConfig {
    /// Namespace of the certificate Secret (normally the webhook's own namespace).
    pub secret_namespace: String,
    /// Name of the certificate Secret.
    pub secret_name: String,
    /// Name of the webhook Service; the serving certificate names `<svc>`, `<svc>.<ns>`,
    /// `<svc>.<ns>.svc` and `<svc>.<ns>.svc.cluster.local`.
    pub service_name: String,
    /// Namespace of the webhook Service.
    pub service_namespace: String,
    /// Further subject alternative names: DNS names, or IP addresses when they parse as one.
    pub extra_sans: Vec<String>,
    /// Certificate lifetimes.
    pub lifetimes: Lifetimes,
    /// Selects the webhook configurations and CRDs whose caBundle this install owns.
    pub install_label: InstallLabel,
    /// How often the Secret and the caBundles are checked even when nothing was observed to
    /// change (a watch may miss an edit while it reconnects).
    pub check_interval: Duration,
    /// How long to wait after publishing a changed caBundle before serving a certificate that
    /// only the new bundle trusts, so that the API server's informers see the bundle first.
    pub bundle_propagation: Duration,
}

impl SelfManagedConfig {
    /// Every subject alternative name the serving certificate carries.
    pub fn subject_alt_names(&self) -> Vec<String> {
        let svc = &self.service_name;
        let ns = &self.service_namespace;
        let mut names = vec![
            svc.clone(),
            format!("{svc}.{ns}"),
            format!("{svc}.{ns}.svc"),
            format!("{svc}.{ns}.svc.cluster.local"),
        ];
        for extra in &self.extra_sans {
            if !names.contains(extra) {
                names.push(extra.clone());
            }
        }
        names
    }
}

/// cert-manager mode: a keypair mounted from a Secret that cert-manager keeps current; the
/// caBundle is cert-manager's cainjector's job.
#[derive(Clone, Debug)]
pub struct MountedConfig {
    /// Directory holding the keypair.
    pub dir: PathBuf,
    /// Certificate file name inside `dir` (PEM chain, leaf first).
    pub cert_file: String,
    /// Private key file name inside `dir` (PEM).
    pub key_file: String,
    /// How often the files are checked for a new keypair.
    pub poll_interval: Duration,
}

impl MountedConfig {
    /// `dir` with the usual `tls.crt`/`tls.key` names, checked every 10 s.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        MountedConfig {
            dir: dir.into(),
            cert_file: "tls.crt".to_owned(),
            key_file: "tls.key".to_owned(),
            poll_interval: Duration::from_secs(10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_value_takes_the_release_label_key() {
        let label = InstallLabel::parse("garage").unwrap();
        assert_eq!(label.selector(), "app.kubernetes.io/instance=garage");
        let label = InstallLabel::parse("example.com/owner=a").unwrap();
        assert_eq!(label.key, "example.com/owner");
        assert!(InstallLabel::parse("k=").is_err());
        assert!(InstallLabel::parse("").is_err());
    }

    #[test]
    fn default_lifetimes_are_ten_years_ninety_days_two_thirds() {
        let l = Lifetimes::default();
        assert_eq!(l.ca.as_secs(), 315_360_000);
        assert_eq!(l.serving.as_secs(), 7_776_000);
        assert_eq!(l.renew_at, (2, 3));
        assert!(l.check().is_ok());
        assert!(
            Lifetimes {
                renew_at: (3, 3),
                ..l
            }
            .check()
            .is_err()
        );
    }
}
