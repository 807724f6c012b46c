//! Leader election on a coordination.k8s.io Lease. Two active reconcilers could stage and
//! apply layouts concurrently, so only the holder of the Lease runs controllers, and a
//! holder that cannot renew in time stops.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, Client};

/// Which Lease to hold and how.
#[derive(Debug, Clone)]
pub struct LeaseConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Lease name.
    pub name: String,
    /// This process (pod name).
    pub identity: String,
    /// How long a holder is trusted without renewing.
    pub duration: Duration,
    /// How often the holder renews.
    pub renew_every: Duration,
}

/// Outcome of one acquisition or renewal attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// This process holds the Lease until at least now + duration.
    Held,
    /// Someone else holds a live Lease.
    Taken,
}

/// One try to acquire or renew. Optimistic concurrency (resourceVersion) makes two
/// contenders never both succeed.
pub async fn try_acquire(client: &Client, cfg: &LeaseConfig) -> Result<Attempt, kube::Error> {
    let api: Api<Lease> = Api::namespaced(client.clone(), &cfg.namespace);
    let now = Timestamp::now();
    let secs = i32::try_from(cfg.duration.as_secs()).unwrap_or(i32::MAX);
    match api.get_opt(&cfg.name).await? {
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(cfg.name.clone()),
                    namespace: Some(cfg.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(cfg.identity.clone()),
                    lease_duration_seconds: Some(secs),
                    acquire_time: Some(MicroTime(now)),
                    renew_time: Some(MicroTime(now)),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(Attempt::Held),
                Err(kube::Error::Api(e)) if e.is_already_exists() => Ok(Attempt::Taken),
                Err(e) => Err(e),
            }
        }
        Some(mut lease) => {
            let spec = lease.spec.clone().unwrap_or_default();
            let ours = spec.holder_identity.as_deref() == Some(cfg.identity.as_str());
            let expired = spec.renew_time.as_ref().is_none_or(|t| {
                let trusted = SignedDuration::from_secs(i64::from(
                    spec.lease_duration_seconds.unwrap_or(secs),
                ));
                t.0.checked_add(trusted).is_ok_and(|until| until < now)
            });
            if !ours && !expired {
                return Ok(Attempt::Taken);
            }
            let mut next = spec.clone();
            if !ours {
                next.holder_identity = Some(cfg.identity.clone());
                next.acquire_time = Some(MicroTime(now));
                next.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            }
            next.renew_time = Some(MicroTime(now));
            next.lease_duration_seconds = Some(secs);
            lease.spec = Some(next);
            match api.replace(&cfg.name, &PostParams::default(), &lease).await {
                Ok(_) => Ok(Attempt::Held),
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(Attempt::Taken),
                Err(e) => Err(e),
            }
        }
    }
}

/// Waits until this process holds the Lease.
pub async fn acquire(client: &Client, cfg: &LeaseConfig) {
    loop {
        match try_acquire(client, cfg).await {
            Ok(Attempt::Held) => return,
            Ok(Attempt::Taken) => {}
            Err(e) => tracing::warn!(error = %e, "lease acquisition failed"),
        }
        tokio::time::sleep(cfg.renew_every).await;
    }
}

/// Renews the Lease until a renewal cannot be made within the lease duration; returns then,
/// and the caller must stop acting as leader.
pub async fn hold(client: &Client, cfg: &LeaseConfig) {
    let mut last = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(cfg.renew_every).await;
        match try_acquire(client, cfg).await {
            Ok(Attempt::Held) => last = tokio::time::Instant::now(),
            Ok(Attempt::Taken) => {
                tracing::error!("lease taken by another process");
                return;
            }
            Err(e) => tracing::warn!(error = %e, "lease renewal failed"),
        }
        // Stop well before another process may consider the lease expired.
        if last.elapsed() + cfg.renew_every >= cfg.duration {
            tracing::error!("lease not renewed in time");
            return;
        }
    }
}

/// Gives the Lease up after the controllers stopped, so that a successor (the next pod of a
/// rolling update) takes over at once instead of after the lease duration. Only a Lease this
/// process still holds is touched, and a conflicting write means someone else already has it.
pub async fn release(client: &Client, cfg: &LeaseConfig) -> Result<(), kube::Error> {
    let api: Api<Lease> = Api::namespaced(client.clone(), &cfg.namespace);
    let Some(mut lease) = api.get_opt(&cfg.name).await? else {
        return Ok(());
    };
    let Some(spec) = lease.spec.as_mut() else {
        return Ok(());
    };
    if spec.holder_identity.as_deref() != Some(cfg.identity.as_str()) {
        return Ok(());
    }
    spec.holder_identity = None;
    spec.acquire_time = None;
    spec.renew_time = None;
    match api.replace(&cfg.name, &PostParams::default(), &lease).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}
