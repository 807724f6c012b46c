//! The decisions of the controllers of objects that live inside a Garage cluster: GarageKey
//! ([`key`]), GarageBucket ([`bucket`]) and GarageAdminToken ([`admin_token`]), each a pure
//! plan from what its pass observed. Keys and buckets declare grants on each other, so their
//! plans compute permissions from the same view ([`access`], over a [`Snapshot`]).
//!
//! - [`outcome`]: how a pass ends; [`pass`]: the shape of a plan.
//! - [`reach`]: which GarageCluster a reference leads to.
//! - Here: the [`Snapshot`] a pass decides grants from, the `Ready` condition every status
//!   carries ([`ReadyStatus`], [`with_ready`]), Garage's times ([`timestamp`]), the merge
//!   patch a status is written with ([`merge_patch`]) and when a converged object is looked
//!   at again ([`drift_check`], [`WAITING`]).

pub mod access;
pub mod admin_token;
pub mod bucket;
#[cfg(any(test, feature = "test-support"))]
pub mod fixtures;
pub mod key;
pub mod outcome;
pub mod pass;
pub mod reach;

use std::sync::Arc;
use std::time::Duration;

use garage_api_types::BucketListItem;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde::Serialize;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_key::GarageKey;

/// Requeue while a prerequisite (the cluster, a referenced object) is missing.
pub const WAITING: Duration = Duration::from_secs(10);

/// What one pass decides permissions from: every key and bucket in scope (the reconciled one
/// as it should be seen, with the ID it now has), Garage's buckets and the grants.
pub struct Snapshot {
    /// Every key.
    pub keys: Vec<Arc<GarageKey>>,
    /// Every bucket.
    pub buckets: Vec<Arc<GarageBucket>>,
    /// The buckets Garage has.
    pub garage_buckets: Vec<BucketListItem>,
    /// The grants.
    pub grants: access::Grants,
    /// The namespace of the GarageCluster the pass reached.
    pub cluster_namespace: String,
    /// Its name.
    pub cluster_name: String,
}

impl Snapshot {
    /// The view of the cluster the pass reached.
    pub fn view(&self) -> access::Cluster<'_> {
        access::Cluster {
            namespace: &self.cluster_namespace,
            name: &self.cluster_name,
            keys: &self.keys,
            buckets: &self.buckets,
            garage_buckets: &self.garage_buckets,
            grants: &self.grants,
        }
    }
}

/// When a converged key or bucket is looked at again: the drift resync, stretched by up to a
/// tenth according to its UID, so that objects created together do not all ask Garage in the
/// same second ever after.
pub fn drift_check(base: Duration, uid: Option<&str>) -> Duration {
    let spread = uid
        .unwrap_or_default()
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
        % 1000;
    base + base / 10 * spread / 1000
}

/// A status that reports readiness: a `Ready` condition among its conditions, and the
/// generation it was decided from.
pub trait ReadyStatus: Clone + Default + Serialize + PartialEq {
    /// Its conditions.
    fn conditions_mut(&mut self) -> &mut Option<Vec<Condition>>;
    /// The generation it was decided from.
    fn observed_generation_mut(&mut self) -> &mut Option<i64>;
}

macro_rules! ready_status {
    ($($status:ty),*) => {$(
        impl ReadyStatus for $status {
            fn conditions_mut(&mut self) -> &mut Option<Vec<Condition>> {
                &mut self.conditions
            }
            fn observed_generation_mut(&mut self) -> &mut Option<i64> {
                &mut self.observed_generation
            }
        }
    )*};
}

ready_status!(
    shared_types::garage_key::GarageKeyStatus,
    shared_types::garage_bucket::GarageBucketStatus,
    shared_types::garage_admin_token::GarageAdminTokenStatus
);

/// `current` with its `Ready` condition set (and nothing else of ours changed).
pub fn with_ready(
    current: Option<&[Condition]>,
    ready: bool,
    reason: &'static str,
    message: String,
    generation: Option<i64>,
) -> Vec<Condition> {
    use shared_types::conditions::common::CONDITION_READY;
    crate::conditions::merge(
        current,
        &[crate::conditions::Desired {
            type_: CONDITION_READY,
            status: ready,
            reason,
            message,
        }],
        &[CONDITION_READY],
        generation,
    )
}

/// Parses an RFC 3339 time as Garage writes it, cut to whole seconds: the API server keeps
/// status times to the second, and a finer one would never compare equal to what it stored,
/// so the status would be written again at every pass.
pub fn timestamp(s: &str) -> Option<k8s_openapi::jiff::Timestamp> {
    let t: k8s_openapi::jiff::Timestamp = s.parse().ok()?;
    k8s_openapi::jiff::Timestamp::from_second(t.as_second()).ok()
}

/// The JSON merge patch (RFC 7386) that turns `before` into `after`: a field `after` no longer
/// has is sent as `null`, so that clearing an optional status field really clears it.
pub fn merge_patch(before: &serde_json::Value, after: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            let mut out = serde_json::Map::new();
            for (k, v) in a {
                match b.get(k) {
                    Some(old) if old == v => {}
                    Some(old) => {
                        out.insert(k.clone(), merge_patch(old, v));
                    }
                    None => {
                        out.insert(k.clone(), v.clone());
                    }
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.insert(k.clone(), Value::Null);
            }
            Value::Object(out)
        }
        _ => after.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::merge_patch;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn drift_checks_are_spread_over_a_tenth_of_the_interval() {
        let base = Duration::from_secs(300);
        let spread: std::collections::BTreeSet<Duration> = (0..100)
            .map(|i| super::drift_check(base, Some(&format!("0e4f6a2c-{i:04}"))))
            .collect();
        assert!(spread.iter().all(|d| *d >= base && *d < base + base / 10));
        assert!(spread.len() > 50, "{} distinct delays of 100", spread.len());
        assert_eq!(
            super::drift_check(base, Some("u")),
            super::drift_check(base, Some("u"))
        );
    }

    #[test]
    fn garage_times_are_kept_to_the_second_as_the_api_server_stores_them() {
        let t = super::timestamp("2026-12-02T07:54:47.123456789Z").unwrap();
        assert_eq!(t.to_string(), "2026-12-02T07:54:47Z");
    }

    #[test]
    fn a_merge_patch_clears_what_is_gone_and_sends_only_what_changed() {
        let before = json!({"a": 1, "gone": "x", "nested": {"keep": 1, "drop": 2}, "list": [1, 2]});
        let after = json!({"a": 1, "nested": {"keep": 1, "new": 3}, "list": [2], "added": true});
        assert_eq!(
            merge_patch(&before, &after),
            json!({"gone": null, "nested": {"drop": null, "new": 3}, "list": [2], "added": true})
        );
        assert_eq!(merge_patch(&serde_json::Value::Null, &after), after);
    }
}
