//! Self-managed mode: keep the shared certificate Secret current, publish its CA bundle and
//! serve its keypair, renewing before expiry without restarting anything.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::Notify;

use crate::bundle::bundle_matches;
use crate::inject::Injector;
use crate::secret::SecretStore;
use crate::{CertResolver, Error, InjectionHealth, SelfManagedConfig, inspect};

/// Field manager of this crate's writes.
pub const FIELD_MANAGER: &str = "garage-webhook-certs";

/// After a failed step (API server unreachable, RBAC missing), wait this long before trying
/// again; the keypair already served stays served meanwhile.
const RETRY: Duration = Duration::from_secs(5);

/// Waking exactly at the renewal instant could read a certificate one tick before it is due.
const SLACK: Duration = Duration::from_secs(1);

/// The self-managed certificate loop of one replica.
pub struct SelfManaged {
    config: SelfManagedConfig,
    store: SecretStore,
    injector: Injector,
    resolver: Arc<CertResolver>,
    client: Client,
    served_cert: Option<String>,
    served_bundle: Option<String>,
    health: Arc<InjectionHealth>,
}

/// What decides whether a new serving keypair replaces the one served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Swap {
    /// Nothing is served yet.
    pub first: bool,
    /// This pass published the bundle to every webhook configuration and CRD.
    pub published: bool,
    /// The new certificate's CA was in the bundle trusted when the served keypair was
    /// installed (a leaf renewed under the same CA).
    pub signer_trusted: bool,
    /// The served certificate has expired, so keeping it helps no one.
    pub served_expired: bool,
}

/// Whether to serve the new keypair now. A certificate of a CA the API server may not trust
/// yet (its bundle could not be published) would fail every handshake, while the served one
/// still works: it is kept until the bundle is out, unless it has expired.
pub(crate) fn may_swap(swap: Swap) -> bool {
    swap.first || swap.published || swap.signer_trusted || swap.served_expired
}

impl SelfManaged {
    /// Checks `config` and prepares the loop; nothing is read or written yet.
    pub fn new(
        client: Client,
        config: SelfManagedConfig,
        resolver: Arc<CertResolver>,
    ) -> Result<Self, Error> {
        config.lifetimes.check()?;
        if config.secret_name.is_empty() || config.secret_namespace.is_empty() {
            return Err(Error::Config(
                "the certificate Secret needs a name and a namespace".to_owned(),
            ));
        }
        if config.service_name.is_empty() || config.service_namespace.is_empty() {
            return Err(Error::Config(
                "the webhook Service needs a name and a namespace".to_owned(),
            ));
        }
        let labels = BTreeMap::from([(
            config.install_label.key.clone(),
            config.install_label.value.clone(),
        )]);
        let store = SecretStore::new(
            client.clone(),
            &config.secret_namespace,
            &config.secret_name,
            labels,
        );
        let injector = Injector::new(client.clone(), config.install_label.clone(), FIELD_MANAGER);
        Ok(SelfManaged {
            config,
            store,
            injector,
            resolver,
            client,
            served_cert: None,
            served_bundle: None,
            health: Arc::new(InjectionHealth::new()),
        })
    }

    /// Where this loop records how injection goes (shared with metrics and readiness).
    pub fn injection_health(&self) -> Arc<InjectionHealth> {
        self.health.clone()
    }

    /// One pass: make sure the Secret holds valid material, publish its bundle, serve its
    /// keypair. Returns how long to wait before the next pass.
    pub async fn step(&mut self) -> Result<Duration, Error> {
        let names = self.config.subject_alt_names();
        let ensured = self
            .store
            .ensure(
                &names,
                &self.config.lifetimes,
                SystemTime::now,
                &self.injector,
            )
            .await?;
        if let Some(reason) = &ensured.wrote {
            tracing::info!(
                secret = %format!("{}/{}", self.config.secret_namespace, self.config.secret_name),
                %reason,
                "certificate Secret written"
            );
        }
        let material = &ensured.material;
        let inject = self.injector.reconcile(&material.bundle).await;
        self.health.record(&inject);

        if self.served_cert.as_deref() != Some(material.serving.cert_pem.as_str()) {
            let now = SystemTime::now();
            let swap = Swap {
                first: !self.resolver.is_ready(),
                published: inject.is_ok(),
                signer_trusted: self
                    .served_bundle
                    .as_deref()
                    .is_some_and(|bundle| trusts(bundle, &material.ca.cert_pem)),
                served_expired: self.served_cert.as_deref().is_some_and(|cert| {
                    inspect::validity(cert, "served certificate").is_ok_and(|v| v.not_after <= now)
                }),
            };
            if may_swap(swap) {
                self.install(material, swap).await?;
            } else {
                tracing::warn!(
                    "keeping the served certificate: the new one's CA is not published yet"
                );
            }
        }
        inject?;

        let mut wait = self.config.check_interval;
        if let Some(at) = ensured.next_check {
            let until = at
                .duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO)
                + SLACK;
            wait = wait.min(until);
        } else {
            // We just wrote: look again soon, in case another replica's write raced ours.
            wait = wait.min(SLACK);
        }
        Ok(wait)
    }

    /// Serves `material`'s keypair, after giving a changed bundle time to reach the API server.
    async fn install(
        &mut self,
        material: &crate::renewal::Material,
        swap: Swap,
    ) -> Result<(), Error> {
        let bundle_changed = self
            .served_bundle
            .as_ref()
            .is_some_and(|b| !bundle_matches(Some(b.as_bytes()), material.bundle.as_bytes()));
        if bundle_changed && !swap.first {
            // The new keypair may be trusted only through the new bundle; give the API server's
            // informers a moment to see it before new handshakes depend on it.
            tokio::time::sleep(self.config.bundle_propagation).await;
        }
        let generation = self
            .resolver
            .install(&material.serving.cert_pem, &material.serving.key_pem)?;
        let not_after = inspect::validity(&material.serving.cert_pem, "serving certificate")
            .ok()
            .map(|v| humantime_like(v.not_after));
        tracing::info!(generation, not_after = ?not_after, "serving certificate installed");
        self.served_cert = Some(material.serving.cert_pem.clone());
        self.served_bundle = Some(material.bundle.clone());
        Ok(())
    }

    /// Runs forever: a pass at start, then whenever a certificate becomes due, a watched
    /// webhook configuration or CRD changes, or `check_interval` passes.
    pub async fn run(mut self) {
        let wake = Arc::new(Notify::new());
        // Aborted when this loop is dropped (the server stopping aborts its task).
        let _watchers = AbortOnDrop(spawn_watchers(&self.client, &self.injector, wake.clone()));
        loop {
            let wait = match self.step().await {
                Ok(wait) => wait,
                Err(e) => {
                    tracing::warn!(error = %e, "certificate pass failed; retrying");
                    RETRY
                }
            };
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = wake.notified() => {}
            }
        }
    }
}

/// Whether `bundle` (PEM) holds the first certificate of `ca` (PEM).
fn trusts(bundle: &str, ca: &str) -> bool {
    let ca = inspect::certificates_der(ca.as_bytes(), "CA certificate").unwrap_or_default();
    inspect::certificates_der(bundle.as_bytes(), "CA bundle")
        .is_ok_and(|certs| ca.first().is_some_and(|ca| certs.contains(ca)))
}

/// RFC 3339-ish UTC text of `at`, for logs.
fn humantime_like(at: SystemTime) -> String {
    time::OffsetDateTime::from(at).to_string()
}

/// Wakes the loop whenever one of this install's webhook configurations or CRDs changes, so a
/// caBundle someone overwrote is put back within moments rather than at the next periodic pass.
fn spawn_watchers(
    client: &Client,
    injector: &Injector,
    wake: Arc<Notify>,
) -> tokio::task::JoinHandle<()> {
    let config = watcher::Config::default().labels(&injector.label().selector());
    let validating: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let mutating: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let streams = vec![
        watcher(validating, config.clone())
            .default_backoff()
            .map(|e| e.map(|_| ()))
            .boxed(),
        watcher(mutating, config.clone())
            .default_backoff()
            .map(|e| e.map(|_| ()))
            .boxed(),
        watcher(crds, config)
            .default_backoff()
            .map(|e| e.map(|_| ()))
            .boxed(),
    ];
    tokio::spawn(async move {
        let mut events = futures::stream::select_all(streams);
        while let Some(event) = events.next().await {
            match event {
                Ok(()) => wake.notify_one(),
                Err(e) => {
                    tracing::debug!(error = %e, "watch of webhook configurations interrupted")
                }
            }
        }
    })
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::generate::test_ca;

    #[test]
    fn a_certificate_of_an_unpublished_ca_waits_while_the_served_one_works() {
        let nothing = Swap {
            first: false,
            published: false,
            signer_trusted: false,
            served_expired: false,
        };
        assert!(!may_swap(nothing), "a new CA that could not be published");
        for swap in [
            Swap {
                first: true,
                ..nothing
            },
            Swap {
                published: true,
                ..nothing
            },
            Swap {
                signer_trusted: true,
                ..nothing
            },
            Swap {
                served_expired: true,
                ..nothing
            },
        ] {
            assert!(may_swap(swap), "{swap:?}");
        }
    }

    #[test]
    fn trust_is_read_from_the_bundle() {
        let now = SystemTime::now();
        let a = test_ca(now, Duration::from_secs(600));
        let b = test_ca(now, Duration::from_secs(600));
        assert!(trusts(&format!("{b}{a}"), &a));
        assert!(!trusts(&b, &a));
        assert!(!trusts("junk", &a));
    }
}
