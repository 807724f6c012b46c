//! What each storage pod's replacement shows in the API, stamped as the bench polls the pods:
//! the old pod terminating or gone, the replacement (same name, another UID) created, the
//! replacement Ready. Both sides poll every 100 ms, so a stamp is late by at most that.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use anyhow::{Result, bail};
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt as _;

use super::cluster::pod_ready;

/// One pod's replacement, as times from the start of the side's clock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Replacement {
    /// The old pod was terminating or gone.
    pub deleted: Option<Duration>,
    /// A pod of the same name with another UID existed.
    pub created: Option<Duration>,
    /// That pod was Ready.
    pub ready: Option<Duration>,
}

/// The replacements of every storage pod of one cluster.
#[derive(Debug, Clone)]
pub(crate) struct Tracker {
    /// UID of each pod before the change, by pod name.
    old: BTreeMap<String, String>,
    /// Each pod's replacement, by pod name.
    pub at: BTreeMap<String, Replacement>,
}

impl Tracker {
    /// Starts from the pods before the change; every one must be Ready.
    pub(crate) fn new(pods: &[Pod]) -> Result<Self> {
        if let Some(p) = pods.iter().find(|p| !pod_ready(p)) {
            bail!("pod {} was not Ready before the change", p.name_any());
        }
        let old: BTreeMap<String, String> = pods
            .iter()
            .map(|p| (p.name_any(), p.metadata.uid.clone().unwrap_or_default()))
            .collect();
        let at = old
            .keys()
            .map(|n| (n.clone(), Replacement::default()))
            .collect();
        Ok(Self { old, at })
    }

    /// Stamps what `pods` show for the first time at `elapsed`.
    pub(crate) fn observe(&mut self, elapsed: Duration, pods: &[Pod]) {
        for (name, slot) in &mut self.at {
            let old_uid = self.old.get(name).map(String::as_str);
            let now = pods.iter().find(|p| &p.name_any() == name);
            let replaced = now.filter(|p| p.metadata.uid.as_deref() != old_uid);
            let old_going =
                now.is_none_or(|p| p.metadata.deletion_timestamp.is_some() || replaced.is_some());
            let stamp = |slot: &mut Option<Duration>, seen: bool| {
                if seen && slot.is_none() {
                    *slot = Some(elapsed);
                }
            };
            stamp(&mut slot.deleted, old_going);
            stamp(&mut slot.created, replaced.is_some());
            stamp(&mut slot.ready, replaced.is_some_and(pod_ready));
        }
    }

    /// Every pod was replaced and its replacement seen Ready.
    pub(crate) fn all_ready(&self) -> bool {
        self.at.values().all(|r| r.ready.is_some())
    }

    /// The pods in the order they were deleted (never deleted ones last, by name).
    pub(crate) fn in_order(&self) -> Vec<(&str, Replacement)> {
        let mut rows: Vec<(&str, Replacement)> =
            self.at.iter().map(|(n, r)| (n.as_str(), *r)).collect();
        rows.sort_by_key(|(n, r)| (r.deleted.is_none(), r.deleted, *n));
        rows
    }
}

/// Seconds from `since` to each pod's `creationTimestamp` and to the last transition of its
/// Ready condition, as the API records them (to the second, so up to a second early), by pod
/// name.
pub(crate) fn api_times(
    pods: &[Pod],
    since: SystemTime,
) -> BTreeMap<String, (Option<f64>, Option<f64>)> {
    let from =
        |t: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time| match SystemTime::from(t.0)
            .duration_since(since)
        {
            Ok(d) => d.as_secs_f64(),
            Err(e) => -e.duration().as_secs_f64(),
        };
    pods.iter()
        .map(|p| {
            let created = p.metadata.creation_timestamp.as_ref().map(from);
            let ready = p
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .and_then(|c| c.iter().find(|c| c.type_ == "Ready" && c.status == "True"))
                .and_then(|c| c.last_transition_time.as_ref())
                .map(from);
            (p.name_any(), (created, ready))
        })
        .collect()
}

/// Whether `pod`'s garage container runs with the variable `env` set.
pub(crate) fn has_env(pod: &Pod, env: &str) -> bool {
    pod.spec.as_ref().is_some_and(|s| {
        s.containers
            .iter()
            .filter(|c| c.name == "garage")
            .any(|c| c.env.iter().flatten().any(|e| e.name == env))
    })
}

/// Fails unless every pod in `pods` is Ready, carries `env` and is another pod than before.
pub(crate) fn check_replaced(tracker: &Tracker, pods: &[Pod], env: &str) -> Result<()> {
    for (name, old_uid) in &tracker.old {
        let Some(pod) = pods.iter().find(|p| &p.name_any() == name) else {
            bail!("pod {name} is gone after the rollout");
        };
        if pod.metadata.uid.as_ref() == Some(old_uid) {
            bail!("pod {name} was not replaced (UID {old_uid} before and after)");
        }
        if !pod_ready(pod) || !has_env(pod, env) {
            bail!("pod {name} is not Ready with {env} set after the rollout");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, uid: &str, ready: bool, deleting: bool) -> Pod {
        let mut p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "uid": uid},
            "status": {"conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]},
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        if deleting {
            p.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ));
        }
        p
    }

    #[test]
    fn a_replacement_is_stamped_deleted_created_then_ready() {
        let mut t = Tracker::new(&[pod("a", "1", true, false), pod("b", "2", true, false)])
            .unwrap_or_else(|e| panic!("{e:#}"));
        let s = Duration::from_secs;
        t.observe(
            s(1),
            &[pod("a", "1", true, true), pod("b", "2", true, false)],
        );
        t.observe(s(2), &[pod("b", "2", true, false)]);
        t.observe(
            s(3),
            &[pod("a", "3", false, false), pod("b", "2", true, false)],
        );
        t.observe(
            s(4),
            &[pod("a", "3", true, false), pod("b", "2", true, false)],
        );
        let a = t.at["a"];
        assert_eq!(
            (a.deleted, a.created, a.ready),
            (Some(s(1)), Some(s(3)), Some(s(4)))
        );
        assert!(t.at["b"].deleted.is_none());
        assert!(!t.all_ready());
        assert_eq!(t.in_order()[0].0, "a");
    }
}
