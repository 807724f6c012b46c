//! The certificate Secret that every webhook replica shares, written with optimistic
//! concurrency so that replicas racing to create or renew it converge on one material.

use std::collections::BTreeMap;
use std::time::SystemTime;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::PostParams;

use crate::generate::KeyedCert;
use crate::inject::Injector;
use crate::renewal::{Material, Plan, adopt_installed, plan};
use crate::{Error, Lifetimes};

/// Secret key of the serving certificate.
pub const KEY_TLS_CRT: &str = "tls.crt";
/// Secret key of the serving private key.
pub const KEY_TLS_KEY: &str = "tls.key";
/// Secret key of the CA bundle the API server trusts (signing CA first).
pub const KEY_CA_BUNDLE: &str = "ca.crt";
/// Secret key of the signing CA's certificate.
pub const KEY_SIGNER_CRT: &str = "signer.crt";
/// Secret key of the signing CA's private key.
pub const KEY_SIGNER_KEY: &str = "signer.key";

/// How often a replica re-reads and retries when another replica wrote first.
const ATTEMPTS: u32 = 8;

fn text(secret: &Secret, key: &str) -> Option<String> {
    let bytes = secret.data.as_ref()?.get(key)?;
    String::from_utf8(bytes.0.clone()).ok()
}

/// The material stored in `secret`, or `None` when a key is missing or not UTF-8.
pub fn decode(secret: &Secret) -> Option<Material> {
    Some(Material {
        ca: KeyedCert {
            cert_pem: text(secret, KEY_SIGNER_CRT)?,
            key_pem: text(secret, KEY_SIGNER_KEY)?,
        },
        bundle: text(secret, KEY_CA_BUNDLE)?,
        serving: KeyedCert {
            cert_pem: text(secret, KEY_TLS_CRT)?,
            key_pem: text(secret, KEY_TLS_KEY)?,
        },
    })
}

/// `material` written into `base` (a Secret as read, keeping its metadata and resourceVersion,
/// or a new one).
pub fn encode(mut base: Secret, material: &Material) -> Secret {
    let entries = [
        (KEY_TLS_CRT, &material.serving.cert_pem),
        (KEY_TLS_KEY, &material.serving.key_pem),
        (KEY_CA_BUNDLE, &material.bundle),
        (KEY_SIGNER_CRT, &material.ca.cert_pem),
        (KEY_SIGNER_KEY, &material.ca.key_pem),
    ];
    let data = base.data.get_or_insert_with(BTreeMap::new);
    for (key, value) in entries {
        data.insert(key.to_owned(), ByteString(value.as_bytes().to_vec()));
    }
    // A Secret's type is immutable: one made beforehand (the chart renders it Opaque, so that
    // uninstalling removes it) keeps its type; only a Secret created here is typed as TLS.
    if base.type_.as_deref().is_none_or(str::is_empty) {
        base.type_ = Some("kubernetes.io/tls".to_owned());
    }
    base
}

/// The outcome of [`SecretStore::ensure`].
#[derive(Clone, Debug)]
pub struct Ensured {
    /// The material now in the Secret.
    pub material: Material,
    /// When it should be looked at again at the latest (a certificate becomes due).
    pub next_check: Option<SystemTime>,
    /// Why this replica wrote the Secret, if it did.
    pub wrote: Option<String>,
}

/// The certificate Secret of one install.
#[derive(Clone)]
pub struct SecretStore {
    api: Api<Secret>,
    namespace: String,
    name: String,
    labels: BTreeMap<String, String>,
}

impl SecretStore {
    /// The Secret `namespace/name`, labelled `labels` when this store creates it.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: &str,
        labels: BTreeMap<String, String>,
    ) -> Self {
        SecretStore {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            labels,
        }
    }

    fn describe(&self) -> String {
        format!("Secret {}/{}", self.namespace, self.name)
    }

    /// Reads the Secret and, when it is missing, unreadable or due, writes new material. A
    /// write that loses a race (AlreadyExists, Conflict) re-reads and plans again from what the
    /// winner wrote, so every replica ends up with the same material.
    ///
    /// Material with a new CA also trusts the CAs `installed` finds in the API server now
    /// ([`adopt_installed`]); when they cannot be read, nothing is written.
    pub async fn ensure(
        &self,
        names: &[String],
        lifetimes: &Lifetimes,
        now: impl Fn() -> SystemTime,
        installed: &Injector,
    ) -> Result<Ensured, Error> {
        for _ in 0..ATTEMPTS {
            let found = self
                .api
                .get_opt(&self.name)
                .await
                .map_err(|e| Error::kube(format!("reading {}", self.describe()), e))?;
            let stored = found.as_ref().and_then(decode);
            let at = now();
            match plan(stored.as_ref(), names, lifetimes, at)? {
                Plan::Keep {
                    material,
                    next_check,
                } => {
                    return Ok(Ensured {
                        material,
                        next_check: Some(next_check),
                        wrote: None,
                    });
                }
                Plan::Write {
                    mut material,
                    reason,
                } => {
                    let new_ca = stored
                        .as_ref()
                        .is_none_or(|s| s.ca.cert_pem != material.ca.cert_pem);
                    if new_ca {
                        let trusted = installed.installed().await?;
                        adopt_installed(&mut material, &trusted, lifetimes, at)?;
                    }
                    let result = match found {
                        Some(existing) => {
                            self.api
                                .replace(
                                    &self.name,
                                    &PostParams::default(),
                                    &encode(existing, &material),
                                )
                                .await
                        }
                        None => {
                            let fresh = Secret {
                                metadata: ObjectMeta {
                                    name: Some(self.name.clone()),
                                    namespace: Some(self.namespace.clone()),
                                    labels: Some(self.labels.clone()),
                                    ..ObjectMeta::default()
                                },
                                ..Secret::default()
                            };
                            self.api
                                .create(&PostParams::default(), &encode(fresh, &material))
                                .await
                        }
                    };
                    match result {
                        Ok(_) => {
                            return Ok(Ensured {
                                material,
                                next_check: None,
                                wrote: Some(reason),
                            });
                        }
                        Err(kube::Error::Api(status))
                            if status.is_conflict() || status.is_already_exists() =>
                        {
                            tracing::debug!(
                                secret = %self.describe(),
                                "another replica wrote the certificate Secret first; re-reading"
                            );
                        }
                        Err(e) => {
                            return Err(Error::kube(format!("writing {}", self.describe()), e));
                        }
                    }
                }
            }
        }
        Err(Error::Contended {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            attempts: ATTEMPTS,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn material_round_trips_through_a_secret() {
        let now = SystemTime::now();
        let lifetimes = Lifetimes {
            ca: Duration::from_secs(7200),
            serving: Duration::from_secs(3600),
            renew_at: (2, 3),
        };
        let Plan::Write { material, .. } = plan(None, &["a".into()], &lifetimes, now).unwrap()
        else {
            panic!("expected a write")
        };
        let secret = encode(Secret::default(), &material);
        assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
        assert_eq!(decode(&secret), Some(material.clone()));
        assert_eq!(decode(&Secret::default()), None);
        // A Secret rendered beforehand keeps its (immutable) type.
        let opaque = Secret {
            type_: Some("Opaque".into()),
            ..Secret::default()
        };
        let filled = encode(opaque, &material);
        assert_eq!(filled.type_.as_deref(), Some("Opaque"));
        assert_eq!(decode(&filled), Some(material));
    }
}
