//! GK-C4: the buckets a key is granted, each named exactly one way and once, each with a
//! flag; GK-C5: the cluster-wide baseline `allBuckets` grants something. Under the legacy flag
//! the reference and alias syntax are not checked and an omitted namespace is not equated with
//! the key's own, as released objects had it.

use std::collections::BTreeMap;

use shared_types::garage_key::GarageKey;

use crate::admission::Verdict;
use crate::admission::bucket::aliases::alias_message;
use crate::admission::shared::remote::{check_reference, duplicate_namespace};

fn granted(read: Option<bool>, write: Option<bool>, owner: Option<bool>) -> bool {
    [read, write, owner].contains(&Some(true))
}

/// GK-C4 on `spec.bucketPermissions`.
pub fn check(key: &GarageKey, legacy: bool, verdict: &mut Verdict) {
    let own = key.metadata.namespace.as_deref().unwrap_or_default();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, p) in key.spec.bucket_permissions.iter().flatten().enumerate() {
        let field = format!("spec.bucketPermissions[{i}]");
        let mut ways = Vec::new();
        if let Some(bucket) = &p.bucket_ref {
            if bucket.name.is_empty() {
                verdict.deny(
                    "GK-C4",
                    format!("{field}.bucketRef.name"),
                    format!(
                        "bucketPermissions[{i}].bucketRef.name is required: name the GarageBucket"
                    ),
                );
            } else if !legacy
                && let Some(problem) = check_reference(
                    &format!("{field}.bucketRef"),
                    &bucket.name,
                    bucket.namespace.as_deref(),
                )
            {
                verdict.deny("GK-C4", problem.field, problem.message);
            }
            let namespace = duplicate_namespace(bucket.namespace.as_deref(), own, legacy);
            ways.push(format!("ref:{namespace}/{}", bucket.name));
        }
        if let Some(id) = p.bucket_id.as_deref().filter(|id| !id.is_empty()) {
            ways.push(format!("id:{id}"));
        }
        if let Some(alias) = p.global_alias.as_deref().filter(|a| !a.is_empty()) {
            if !legacy
                && let Some(message) =
                    alias_message(&format!("bucketPermissions[{i}].globalAlias"), alias)
            {
                verdict.deny("GK-C4", format!("{field}.globalAlias"), message);
            }
            ways.push(format!("alias:{alias}"));
        }
        match ways.as_slice() {
            [] => verdict.deny(
                "GK-C4",
                field.clone(),
                format!("bucketPermissions[{i}]: must specify bucketRef, bucketId, or globalAlias to name the bucket"),
            ),
            [reference] => {
                if let Some(previous) = seen.insert(reference.clone(), i) {
                    verdict.deny(
                        "GK-C4",
                        field.clone(),
                        format!("bucketPermissions[{i}]: duplicate bucket reference {reference:?} (also bucketPermissions[{previous}]); merge the two entries"),
                    );
                }
            }
            _ => verdict.deny(
                "GK-C4",
                field.clone(),
                format!("bucketPermissions[{i}]: specify only one of bucketRef, bucketId, or globalAlias"),
            ),
        }
        if !granted(p.read, p.write, p.owner) {
            verdict.deny(
                "GK-C4",
                field,
                format!("bucketPermissions[{i}]: at least one permission (read, write, or owner) must be granted; remove the entry to grant nothing"),
            );
        }
    }
}

/// GK-C5 on `spec.allBuckets`.
pub fn check_all_buckets(key: &GarageKey, verdict: &mut Verdict) {
    if let Some(all) = &key.spec.all_buckets
        && !granted(all.read, all.write, all.owner)
    {
        verdict.deny(
            "GK-C5",
            "spec.allBuckets",
            "allBuckets: at least one permission (read, write, or owner) must be granted; remove allBuckets to grant nothing cluster-wide",
        );
    }
}
