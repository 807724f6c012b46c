//! Reads and writes of the Lease object. Every call is bounded by an instant on the monotonic
//! clock, and every write is conditional on the resourceVersion it read, so two contenders
//! never both win the same record.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use tokio::time::Instant;

use super::LeaseConfig;
use super::timing::Record;

/// Why a read or write did not happen as asked.
#[derive(Debug, thiserror::Error)]
pub(super) enum Failure {
    /// The bound passed before the answer came. A write may still have been applied.
    #[error("no answer in time")]
    Timeout,
    /// Someone else wrote the Lease since it was read (or created it first).
    #[error("the Lease changed since it was read")]
    Conflict,
    /// The API server refused or could not be reached.
    #[error(transparent)]
    Api(kube::Error),
}

/// What a renewal found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Renewal {
    /// The Lease names this process and was written again.
    Renewed,
    /// The Lease names someone else, nobody, or no longer exists.
    NotOurs(Option<String>),
}

/// The comparable parts of a Lease.
pub(super) fn record_of(lease: &Lease) -> Record {
    let spec = lease.spec.as_ref();
    Record {
        resource_version: lease.metadata.resource_version.clone(),
        holder: spec.and_then(|s| s.holder_identity.clone()),
        renew_stamp: spec.and_then(|s| s.renew_time.as_ref()).map(|t| t.0),
        lease_duration: spec
            .and_then(|s| s.lease_duration_seconds)
            .and_then(|s| u64::try_from(s).ok())
            .map(Duration::from_secs),
    }
}

async fn bounded<T>(
    until: Instant,
    call: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, Failure> {
    match tokio::time::timeout_at(until, call).await {
        Err(_) => Err(Failure::Timeout),
        Ok(Ok(v)) => Ok(v),
        Ok(Err(kube::Error::Api(e))) if e.code == 409 => Err(Failure::Conflict),
        Ok(Err(e)) => Err(Failure::Api(e)),
    }
}

/// The Lease, or `None` when it does not exist.
pub(super) async fn read(
    api: &Api<Lease>,
    cfg: &LeaseConfig,
    until: Instant,
) -> Result<Option<Lease>, Failure> {
    bounded(until, api.get_opt(&cfg.name)).await
}

/// Creates the Lease naming this process. Another contender's create wins as a conflict.
pub(super) async fn create(
    api: &Api<Lease>,
    cfg: &LeaseConfig,
    until: Instant,
) -> Result<(), Failure> {
    let now = MicroTime(Timestamp::now());
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(cfg.name.clone()),
            namespace: Some(cfg.namespace.clone()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(cfg.identity.clone()),
            lease_duration_seconds: Some(cfg.timing.lease_duration_seconds()),
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    bounded(until, api.create(&PostParams::default(), &lease))
        .await
        .map(drop)
}

/// Makes `lease` (as read) name this process, conditional on its resourceVersion.
pub(super) async fn claim(
    api: &Api<Lease>,
    cfg: &LeaseConfig,
    mut lease: Lease,
    until: Instant,
) -> Result<(), Failure> {
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    let now = MicroTime(Timestamp::now());
    let transitions = spec.lease_transitions.unwrap_or(0);
    // The chart renders the Lease empty; taking an empty Lease is no transition.
    let had_holder = spec
        .holder_identity
        .as_deref()
        .is_some_and(|h| !h.is_empty());
    spec.holder_identity = Some(cfg.identity.clone());
    spec.acquire_time = Some(now.clone());
    spec.renew_time = Some(now);
    spec.lease_duration_seconds = Some(cfg.timing.lease_duration_seconds());
    spec.lease_transitions = Some(transitions.saturating_add(i32::from(had_holder)));
    bounded(
        until,
        api.replace(&cfg.name, &PostParams::default(), &lease),
    )
    .await
    .map(drop)
}

/// Reads the Lease and, when it still names this process, writes a new renew stamp.
pub(super) async fn renew(
    api: &Api<Lease>,
    cfg: &LeaseConfig,
    until: Instant,
) -> Result<Renewal, Failure> {
    let Some(mut lease) = read(api, cfg, until).await? else {
        return Ok(Renewal::NotOurs(None));
    };
    let Some(spec) = lease.spec.as_mut() else {
        return Ok(Renewal::NotOurs(None));
    };
    if spec.holder_identity.as_deref() != Some(cfg.identity.as_str()) {
        return Ok(Renewal::NotOurs(spec.holder_identity.clone()));
    }
    spec.renew_time = Some(MicroTime(Timestamp::now()));
    spec.lease_duration_seconds = Some(cfg.timing.lease_duration_seconds());
    bounded(
        until,
        api.replace(&cfg.name, &PostParams::default(), &lease),
    )
    .await?;
    Ok(Renewal::Renewed)
}

/// Clears the holder of a Lease that still names this process, so that a contender takes
/// over at once instead of after the lease duration. Only called once the work has stopped.
pub(super) async fn release(
    api: &Api<Lease>,
    cfg: &LeaseConfig,
    until: Instant,
) -> Result<(), Failure> {
    let Some(mut lease) = read(api, cfg, until).await? else {
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
    match bounded(
        until,
        api.replace(&cfg.name, &PostParams::default(), &lease),
    )
    .await
    {
        // Someone else wrote it since: it is no longer ours to clear.
        Err(Failure::Conflict) => Ok(()),
        other => other.map(drop),
    }
}
