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
use crate::{CertResolver, Error, SelfManagedConfig};

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
        })
    }

    /// One pass: make sure the Secret holds valid material, publish its bundle, serve its
    /// keypair. Returns how long to wait before the next pass.
    pub async fn step(&mut self) -> Result<Duration, Error> {
        let names = self.config.subject_alt_names();
        let ensured = self
            .store
            .ensure(&names, &self.config.lifetimes, SystemTime::now)
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

        if self.served_cert.as_deref() != Some(material.serving.cert_pem.as_str()) {
            let bundle_changed = self
                .served_bundle
                .as_ref()
                .is_some_and(|b| !bundle_matches(Some(b.as_bytes()), material.bundle.as_bytes()));
            if bundle_changed && self.resolver.is_ready() {
                // The new keypair is trusted only through the new bundle; give the API server's
                // informers a moment to see it before new handshakes depend on it.
                tokio::time::sleep(self.config.bundle_propagation).await;
            }
            let generation = self
                .resolver
                .install(&material.serving.cert_pem, &material.serving.key_pem)?;
            let not_after =
                crate::inspect::validity(&material.serving.cert_pem, "serving certificate")
                    .ok()
                    .map(|v| humantime_like(v.not_after));
            tracing::info!(generation, not_after = ?not_after, "serving certificate installed");
            self.served_cert = Some(material.serving.cert_pem.clone());
            self.served_bundle = Some(material.bundle.clone());
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
