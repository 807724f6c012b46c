//! One GarageCluster, one managing install.
//!
//! Two installs of the operator (two chart releases, each with its own leader Lease) would
//! otherwise both drive a cluster they can both see: two layout writers, two status writers.
//! Each install has an identity, [`Install`]: `<lease namespace>/<lease name>` of its
//! reconciler, the one Lease all of that install's processes contend for. A GarageCluster
//! names the install that manages it in the annotation
//! [`ANNOTATION_MANAGED_BY_INSTALL`](shared_types::keys::annotation::ANNOTATION_MANAGED_BY_INSTALL):
//!
//! - the value is this install: [`Verdict::Mine`], work goes on;
//! - absent (or blank): [`Verdict::Claim`]. The GarageCluster controller records this
//!   install's identity, once, with a merge patch that carries the `resourceVersion` it read,
//!   so of two installs racing only one write lands; the other is refused (409) and decides
//!   again from the object it re-reads. Every other controller waits for that record;
//! - any other value: [`Verdict::Foreign`]. Nothing is written for that cluster, not its
//!   status, finalizers, children, Garage Admin API or layout, and not the finalizers or
//!   status of the GarageNodes, GarageBuckets, GarageKeys and GarageAdminTokens that work for
//!   it; a Warning Event ([`REASON_MANAGED_BY_ANOTHER_INSTALL`]) on the cluster names the
//!   other install and the hand-over command, once per generation and owner, and again after
//!   [`WARN_INTERVAL`] while it lasts.
//!
//! The decision is here ([`decide`], [`next`]); the reconciler's ownership gate reads the
//! cluster, records the claim and publishes the warning.
//!
//! The Go operator writes no annotation, status field or field-manager name of its own on a
//! GarageCluster (its writes carry the generic manager name its binary is called by), so it
//! cannot be recognised here: it must be stopped before an install of this operator starts.

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use shared_types::keys::annotation::ANNOTATION_MANAGED_BY_INSTALL;

/// Reason of the Warning Event an install publishes on a cluster another install manages.
pub const REASON_MANAGED_BY_ANOTHER_INSTALL: &str = "ManagedByAnotherInstall";

/// How often the Warning Event is repeated while nothing about it changes: often enough that
/// one is always within the API server's default Event retention (one hour).
pub const WARN_INTERVAL: Duration = Duration::from_secs(30 * 60);

/// Lease name when the install names none (`GARAGE_RECONCILER_LEASE` unset).
pub const DEFAULT_LEASE_NAME: &str = "garage-reconciler-leader";
/// Lease namespace when the process is told none (`POD_NAMESPACE` unset).
pub const DEFAULT_LEASE_NAMESPACE: &str = "garage-operator";

/// The identity of one install: `<lease namespace>/<lease name>` of its reconciler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Install(String);

impl Install {
    /// The install whose reconciler holds the Lease `name` in `namespace`.
    pub fn of_lease(namespace: &str, name: &str) -> Self {
        Self(format!("{namespace}/{name}"))
    }

    /// The identity as recorded on a GarageCluster.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Install {
    /// The identity of an install that sets neither the Lease namespace nor its name.
    fn default() -> Self {
        Self::of_lease(DEFAULT_LEASE_NAMESPACE, DEFAULT_LEASE_NAME)
    }
}

impl std::fmt::Display for Install {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who manages a GarageCluster, as this install sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// This install.
    Mine,
    /// Nobody yet: the annotation is absent or blank.
    Claim,
    /// Another install, named by the annotation.
    Foreign(String),
}

/// The verdict of `me` on a cluster with `annotations`. Surrounding blanks are ignored, so
/// a hand-over typed with a stray space still names the install.
pub fn decide(annotations: &BTreeMap<String, String>, me: &Install) -> Verdict {
    match annotations
        .get(ANNOTATION_MANAGED_BY_INSTALL)
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
    {
        None => Verdict::Claim,
        Some(v) if v == me.as_str() => Verdict::Mine,
        Some(v) => Verdict::Foreign(v.to_owned()),
    }
}

/// What the controller asking is to the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The GarageCluster controller: the only one that records a claim, since only it
    /// manages the cluster as a whole. (A key controller of an install that does not watch
    /// the cluster's namespace must not claim a cluster another install runs.)
    Manager,
    /// A controller that works for a cluster: GarageNode, GarageBucket, GarageKey,
    /// GarageAdminToken.
    Member,
}

/// What a pass does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Go on.
    Go,
    /// Record this install on the cluster; the pass ends, the write starts the next one.
    Record,
    /// Nobody has claimed the cluster yet: write nothing and look again.
    Wait,
    /// Another install manages it: write nothing, warn on the cluster.
    HandsOff(String),
}

/// The step of a controller in `role` after `verdict`.
pub fn next(verdict: Verdict, role: Role) -> Step {
    match (verdict, role) {
        (Verdict::Mine, _) => Step::Go,
        (Verdict::Claim, Role::Manager) => Step::Record,
        (Verdict::Claim, Role::Member) => Step::Wait,
        (Verdict::Foreign(other), _) => Step::HandsOff(other),
    }
}

/// The merge patch recording `me` on a cluster read at `resource_version`. `None` without a
/// resourceVersion: an unconditional write could overwrite a record another install has just
/// made.
pub fn claim_patch(resource_version: Option<&str>, me: &Install) -> Option<serde_json::Value> {
    let version = resource_version.filter(|v| !v.is_empty())?;
    Some(serde_json::json!({
        "metadata": {
            "resourceVersion": version,
            "annotations": { ANNOTATION_MANAGED_BY_INSTALL: me.as_str() },
        }
    }))
}

/// The Warning Event's sentence: who manages the cluster, what this install does not do, and
/// how to hand the cluster over to it.
pub fn handover_message(namespace: &str, name: &str, other: &str, me: &Install) -> String {
    format!(
        "GarageCluster {namespace}/{name} is managed by install {other} (annotation {ANNOTATION_MANAGED_BY_INSTALL}); install {me} leaves it alone: no Garage Admin API, layout, child object, finalizer or status write. To hand it over to {me}, stop {other} first, then run: kubectl annotate garagecluster -n {namespace} {name} {ANNOTATION_MANAGED_BY_INSTALL}={me} --overwrite"
    )
}

/// The last warning published about one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warned {
    /// The cluster's generation then.
    pub generation: Option<i64>,
    /// The install it named.
    pub other: String,
    /// When.
    pub at: Instant,
}

/// True when a warning about a cluster at `generation` managed by `other` is due at `now`,
/// `last` being the previous one: a new generation or another owner warns at once, the same
/// one again only after [`WARN_INTERVAL`].
pub fn should_warn(
    last: Option<&Warned>,
    generation: Option<i64>,
    other: &str,
    now: Instant,
) -> bool {
    last.is_none_or(|w| {
        w.generation != generation
            || w.other != other
            || now.saturating_duration_since(w.at) >= WARN_INTERVAL
    })
}

/// The warnings this process has published, by cluster UID. Every controller of the install
/// shares it, so a cluster is warned about once however many of its nodes, keys and buckets
/// meet the same foreign record.
#[derive(Debug, Default)]
pub struct Warnings(Mutex<BTreeMap<String, Warned>>);

impl Warnings {
    /// True when a warning is due ([`should_warn`]); it is then counted as published.
    pub fn admit(&self, uid: &str, generation: Option<i64>, other: &str, now: Instant) -> bool {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !should_warn(map.get(uid), generation, other, now) {
            return false;
        }
        map.insert(
            uid.to_owned(),
            Warned {
                generation,
                other: other.to_owned(),
                at: now,
            },
        );
        true
    }
}
