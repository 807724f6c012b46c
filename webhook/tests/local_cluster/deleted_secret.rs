//! The certificate Secret deleted while the webhook serves under load: the webhook makes a new
//! CA, and the bundle it publishes keeps the old CA (read back from the installed caBundles),
//! whose certificate it still serves until it swaps, next to the new one. No admission request
//! fails on the way.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use certs::bundle::encode_certificate;
use certs::inspect::{certificates_der, signed_by};
use certs::secret::{KEY_CA_BUNDLE, KEY_SIGNER_CRT};
use k8s_openapi::api::core::v1::Secret;
use kube::api::DeleteParams;
use kube::{Api, Client};
use webhook::server::Running;

use super::{cluster, create, first_ca_bundle};

const NAMESPACE: &str = "garage-operator";
const SECRET: &str = "garage-webhook-cert";

fn key(secret: &Secret, key: &str) -> String {
    let data = secret.data.as_ref().and_then(|d| d.get(key)).unwrap();
    String::from_utf8(data.0.clone()).unwrap()
}

fn first(pem: &str) -> Vec<u8> {
    certificates_der(pem.as_bytes(), "pem").unwrap().remove(0)
}

async fn installed(client: &Client) -> Vec<Vec<u8>> {
    certificates_der(&first_ca_bundle(client).await, "caBundle").unwrap()
}

/// Admission requests sent continuously by a few tasks, aborted when dropped (also when an
/// assertion fails meanwhile).
struct Load {
    stop: Arc<AtomicBool>,
    sent: Arc<AtomicUsize>,
    failed: Arc<AtomicUsize>,
    first_failure: Arc<std::sync::Mutex<Option<String>>>,
    workers: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(client: &Client, workers: usize) -> Load {
        let mut load = Load {
            stop: Arc::default(),
            sent: Arc::default(),
            failed: Arc::default(),
            first_failure: Arc::default(),
            workers: Vec::new(),
        };
        for worker in 0..workers {
            let client = client.clone();
            let (stop, sent, failed, first_failure) = (
                load.stop.clone(),
                load.sent.clone(),
                load.failed.clone(),
                load.first_failure.clone(),
            );
            load.workers.push(tokio::spawn(async move {
                while !stop.load(Ordering::Acquire) {
                    let n = sent.fetch_add(1, Ordering::AcqRel);
                    let name = format!("after-delete-{worker}-{n}");
                    if let Err(e) = create(&client, &cluster(&name), true).await {
                        failed.fetch_add(1, Ordering::AcqRel);
                        first_failure
                            .lock()
                            .unwrap()
                            .get_or_insert(format!("request {n}: {e}"));
                    }
                }
            }));
        }
        load
    }

    /// Stops the load: (requests sent, failed, the first failure).
    async fn finish(mut self) -> (usize, usize, Option<String>) {
        self.stop.store(true, Ordering::Release);
        for worker in self.workers.drain(..) {
            worker.await.unwrap();
        }
        let first = self.first_failure.lock().unwrap().clone();
        (
            self.sent.load(Ordering::Acquire),
            self.failed.load(Ordering::Acquire),
            first,
        )
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for worker in &self.workers {
            worker.abort();
        }
    }
}

pub(super) async fn deleted_secret_keeps_every_ca_in_use(client: &Client, server: &Running) {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NAMESPACE);
    let old_ca = first(&key(&secrets.get(SECRET).await.unwrap(), KEY_SIGNER_CRT));
    assert!(installed(client).await.contains(&old_ca));

    let load = Load::start(client, 8);

    secrets
        .delete(SECRET, &DeleteParams::default())
        .await
        .unwrap();
    let deleted = Instant::now();
    // The recreated Secret: a new CA, with the old one still in its bundle.
    let (new_ca, bundle) = loop {
        assert!(
            deleted.elapsed() < Duration::from_secs(60),
            "the Secret was not recreated"
        );
        if let Some(secret) = secrets.get_opt(SECRET).await.unwrap() {
            let ca = first(&key(&secret, KEY_SIGNER_CRT));
            if ca != old_ca {
                break (ca, key(&secret, KEY_CA_BUNDLE));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let recreated = deleted.elapsed();
    let bundle = certificates_der(bundle.as_bytes(), "bundle").unwrap();
    assert_eq!(bundle[0], new_ca, "the signing CA is not first");
    assert!(
        bundle.contains(&old_ca),
        "the recreated bundle dropped the CA still in use"
    );
    // The published caBundle holds both while the webhook swaps to the new CA's certificate.
    let swapped = loop {
        let published = installed(client).await;
        let served = server.resolver().current_leaf().unwrap();
        let new_served =
            signed_by(&encode_certificate(&served), &encode_certificate(&new_ca)).unwrap();
        if new_served {
            assert!(published.contains(&new_ca));
            break deleted.elapsed();
        }
        assert!(
            published.contains(&old_ca),
            "the published bundle dropped the CA of the served certificate"
        );
        assert!(
            deleted.elapsed() < Duration::from_secs(60),
            "never swapped to the new CA"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Keep the load on a little past the swap.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (total, failed, first_failure) = load.finish().await;
    println!(
        "Secret deleted: recreated with both CAs after {recreated:?}, new CA served after \
         {swapped:?}, {total} admission requests, {failed} failed"
    );
    assert_eq!(
        failed, 0,
        "{failed} of {total} failed, first: {first_failure:?}"
    );
}
