//! Objects the plan tests of the key, bucket and admin-token controllers start from: GarageKeys
//! and GarageBuckets of cluster `apps/garage`, Garage's answers, and the snapshot a pass
//! decides grants from.

// Test fixtures only (built for tests, or with the `test-support` feature): a malformed
// fixture is a bug in the test, so it panics.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use serde_json::{Value, json};
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_key::GarageKey;

use super::Snapshot;
use super::access::Grants;
use garage_api_types::{BucketInfo, BucketListItem, KeyInfo};

/// Overlays the fields of `over` on `base`, recursively for objects.
fn merged(mut base: Value, over: Value) -> Value {
    if let (Value::Object(b), Value::Object(o)) = (&mut base, &over) {
        for (k, v) in o {
            let slot = b.entry(k.clone()).or_insert(Value::Null);
            *slot = merged(slot.take(), v.clone());
        }
        return base;
    }
    over
}

/// A GarageKey `apps/<name>` (UID `uid-<name>`) of cluster `garage`, with `over` laid on it.
pub fn key(name: &str, over: Value) -> GarageKey {
    let base = json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageKey",
        "metadata": {"name": name, "namespace": "apps", "uid": format!("uid-{name}"),
                     "generation": 1, "finalizers": [shared_types::keys::finalizer::FINALIZER_KEY]},
        "spec": {"clusterRef": {"name": "garage"}},
    });
    serde_json::from_value(merged(base, over)).unwrap()
}

/// A GarageBucket `apps/<name>` (UID `uid-<name>`) of cluster `garage`, with `over` laid on it.
pub fn bucket(name: &str, over: Value) -> GarageBucket {
    let base = json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageBucket",
        "metadata": {"name": name, "namespace": "apps", "uid": format!("uid-{name}"),
                     "generation": 1, "finalizers": [shared_types::keys::finalizer::FINALIZER_BUCKET]},
        "spec": {"clusterRef": {"name": "garage"}},
    });
    serde_json::from_value(merged(base, over)).unwrap()
}

/// Garage's key `id` (secret `secret`), named `name`, with `over` laid on it.
pub fn key_info(id: &str, name: &str, secret: &str, over: Value) -> KeyInfo {
    let base = json!({
        "accessKeyId": id, "name": name, "expired": false, "secretAccessKey": secret,
        "permissions": {"createBucket": false}, "buckets": [],
    });
    serde_json::from_value(merged(base, over)).unwrap()
}

/// A permission entry of a key's or bucket's answer: `id` with read, write, owner.
pub fn on(id: &str, rwo: [bool; 3]) -> Value {
    json!({"id": id, "globalAliases": [], "localAliases": [],
           "permissions": {"read": rwo[0], "write": rwo[1], "owner": rwo[2]}})
}

/// Garage's bucket `id` with global aliases `aliases`, empty, with `over` laid on it.
pub fn bucket_info(id: &str, aliases: &[&str], over: Value) -> BucketInfo {
    let base = json!({
        "id": id, "created": "2026-01-01T00:00:00Z", "globalAliases": aliases,
        "websiteAccess": false, "keys": [], "objects": 0, "bytes": 0,
        "unfinishedUploads": 0, "unfinishedMultipartUploads": 0,
        "unfinishedMultipartUploadParts": 0, "unfinishedMultipartUploadBytes": 0,
        "quotas": {"maxSize": null, "maxObjects": null},
    });
    serde_json::from_value(merged(base, over)).unwrap()
}

/// An entry of Garage's bucket list.
pub fn listed(id: &str, aliases: &[&str]) -> BucketListItem {
    BucketListItem {
        id: id.into(),
        created: "2026-01-01T00:00:00Z".into(),
        global_aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
        local_aliases: Vec::new(),
    }
}

/// The snapshot of cluster `apps/garage` with these objects, Garage buckets and grants.
pub fn snapshot(
    keys: Vec<GarageKey>,
    buckets: Vec<GarageBucket>,
    garage_buckets: Vec<BucketListItem>,
    grants: Grants,
) -> Snapshot {
    Snapshot {
        keys: keys.into_iter().map(Arc::new).collect(),
        buckets: buckets.into_iter().map(Arc::new).collect(),
        garage_buckets,
        grants,
        cluster_namespace: "apps".into(),
        cluster_name: "garage".into(),
    }
}
