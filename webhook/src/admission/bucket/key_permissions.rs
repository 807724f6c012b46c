//! GB-C5: the keys granted access to the bucket. A key appears once (by effective namespace
//! and name) and gets at least one flag. Under the legacy flag the reference syntax is not
//! checked and an omitted namespace is not equated with the bucket's own, as released objects
//! had it.

use std::collections::BTreeMap;

use shared_types::garage_bucket::GarageBucket;

use crate::admission::Verdict;
use crate::admission::shared::remote::{check_reference, duplicate_namespace};

/// GB-C5 on `spec.keyPermissions`.
pub fn check(bucket: &GarageBucket, legacy: bool, verdict: &mut Verdict) {
    let own = bucket.metadata.namespace.as_deref().unwrap_or_default();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, permission) in bucket.spec.key_permissions.iter().flatten().enumerate() {
        let field = format!("spec.keyPermissions[{i}]");
        let key = &permission.key_ref;
        if key.name.is_empty() {
            verdict.deny(
                "GB-C5",
                format!("{field}.keyRef.name"),
                format!("keyPermissions[{i}].keyRef.name is required: name the GarageKey to grant access to"),
            );
            continue;
        }
        if !legacy
            && let Some(p) = check_reference(
                &format!("{field}.keyRef"),
                &key.name,
                key.namespace.as_deref(),
            )
        {
            verdict.deny("GB-C5", p.field, p.message);
        }
        let namespace = duplicate_namespace(key.namespace.as_deref(), own, legacy);
        if let Some(previous) = seen.insert(format!("{namespace}/{}", key.name), i) {
            verdict.deny(
                "GB-C5",
                format!("{field}.keyRef"),
                format!(
                    "keyPermissions[{i}]: duplicate keyRef {:?} (also keyPermissions[{previous}]); merge the two entries",
                    key.name
                ),
            );
        }
        if ![permission.read, permission.write, permission.owner].contains(&Some(true)) {
            verdict.deny(
                "GB-C5",
                field,
                format!("keyPermissions[{i}]: at least one permission (read, write, or owner) must be granted; remove the entry to grant nothing"),
            );
        }
    }
}
