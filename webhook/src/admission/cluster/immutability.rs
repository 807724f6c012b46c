//! Freezes while a transaction is in flight: GC-S1/S2 (storage drain) and
//! GC-S3/S4 (storage rollout). The controller resumes those transactions
//! from what it recorded; a topology edit underneath would invalidate it.

use serde_json::Value;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::{ANNOTATION_DRAIN, ANNOTATION_RECOVER_STORAGE_ROLLOUT};

use crate::admission::Verdict;

/// The value of annotation `key` on `c`.
pub(super) fn annotation<'a>(c: &'a GarageCluster, key: &str) -> Option<&'a str> {
    c.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// The value of annotation `key` when `new` sets it or changes it relative to `old` (any
/// value on create); `None` when absent or stored unchanged.
pub(super) fn set_or_changed<'a>(
    old: Option<&GarageCluster>,
    new: &'a GarageCluster,
    key: &str,
) -> Option<&'a str> {
    let value = annotation(new, key)?;
    (old.and_then(|o| annotation(o, key)) != Some(value)).then_some(value)
}

/// GC-S1 and GC-S2: no spec change and no drain-annotation change while
/// `status.storageDrain` is recorded.
pub fn check_drain_freeze(old: &GarageCluster, new: &GarageCluster, verdict: &mut Verdict) {
    let Some(drain) = old.status.as_ref().and_then(|s| s.storage_drain.as_ref()) else {
        return;
    };
    let tx = drain.transaction_id.as_deref().unwrap_or_default();
    if old.spec != new.spec {
        verdict.deny("GC-S1", "spec", format!("spec cannot change while status.storageDrain transaction {tx:?} is active; wait for its exact actor to complete"));
    }
    if annotation(old, ANNOTATION_DRAIN) != annotation(new, ANNOTATION_DRAIN) {
        verdict.deny("GC-S2", format!("metadata.annotations[{ANNOTATION_DRAIN}]"), format!("annotation {ANNOTATION_DRAIN} cannot change while status.storageDrain transaction {tx:?} is active"));
    }
}

const SAFE_TOP: &[&str] = &[
    "image",
    "imageRepository",
    "imagePullPolicy",
    "imagePullSecrets",
    "serviceAccountName",
    "s3Api",
    "k2vApi",
    "webApi",
    "admin",
    "database",
    "blocks",
    "discovery",
    "security",
    "logging",
];
const SAFE_NETWORK: &[&str] = &[
    "rpcBindPort",
    "rpcBindAddress",
    "rpcBindOutgoing",
    "rpcPingTimeout",
    "rpcTimeout",
];
const SAFE_POD: &[&str] = &[
    "resources",
    "nodeSelector",
    "tolerations",
    "affinity",
    "topologySpreadConstraints",
    "podAnnotations",
    "podLabels",
    "priorityClassName",
    "securityContext",
    "containerSecurityContext",
    "env",
    "envFrom",
];
const SAFE_STORAGE: &[&str] = &[
    "metadataSnapshotsDir",
    "metadataAutoSnapshotInterval",
    "metadataFsync",
    "dataFsync",
];

fn remove(v: &mut Value, keys: &[&str]) {
    if let Some(o) = v.as_object_mut() {
        for k in keys {
            o.remove(*k);
        }
    }
}

/// The spec with every recovery-safe field blanked (GC-S4).
fn frozen_part(c: &GarageCluster) -> Value {
    let mut v = serde_json::to_value(&c.spec).unwrap_or(Value::Null);
    remove(&mut v, SAFE_TOP);
    if let Some(n) = v.get_mut("network") {
        remove(n, SAFE_NETWORK);
    }
    if let Some(s) = v.get_mut("storage") {
        remove(s, SAFE_POD);
        remove(s, SAFE_STORAGE);
        if let Some(pools) = s.get_mut("nodeLocalPools").and_then(Value::as_array_mut) {
            for p in pools {
                remove(p, &["podTemplate"]);
            }
        }
    }
    if let Some(g) = v.get_mut("gateway") {
        remove(g, SAFE_POD);
        remove(g, &["readinessProbe"]);
    }
    v
}

/// GC-S3 and GC-S4, keyed on `status.storageRollout` of the old object.
pub fn check_rollout_freeze(old: &GarageCluster, new: &GarageCluster, verdict: &mut Verdict) {
    let Some(r) = old.status.as_ref().and_then(|s| s.storage_rollout.as_ref()) else {
        return;
    };
    let was = annotation(old, ANNOTATION_RECOVER_STORAGE_ROLLOUT).is_some_and(|v| !v.is_empty());
    let is = annotation(new, ANNOTATION_RECOVER_STORAGE_ROLLOUT).is_some_and(|v| !v.is_empty());
    if was && !is {
        verdict.deny("GC-S3", format!("metadata.annotations[{ANNOTATION_RECOVER_STORAGE_ROLLOUT}]"), format!("annotation {ANNOTATION_RECOVER_STORAGE_ROLLOUT} cannot be removed until the exact status.storageRollout actor converges"));
    }
    if frozen_part(old) != frozen_part(new) {
        let actor = if let Some(n) = r.garage_node_name.as_deref().filter(|s| !s.is_empty()) {
            format!("GarageNode {n}")
        } else if let Some(p) = r.node_local_pool_name.as_deref().filter(|s| !s.is_empty()) {
            format!(
                "node-local pool {p} on Kubernetes Node {}",
                r.kubernetes_node_name.as_deref().unwrap_or_default()
            )
        } else if let Some(id) = r.garage_node_id.as_deref().filter(|s| !s.is_empty()) {
            format!("Garage identity {id}")
        } else {
            "an unnamed actor".to_string()
        };
        verdict.deny("GC-S4", "spec", format!("only workload and non-topology Garage configuration may change while the managed Pod replacement of {actor} is in flight; replication, layout, membership, volume/capacity, RPC identity/public routing, federation, and service topology stay frozen until that status.storageRollout actor converges, then retry"));
    }
}
