//! Which key may do what on which bucket. Grants are declared from both sides (a GarageKey's
//! `bucketPermissions` and `allBuckets`, a GarageBucket's `keyPermissions`); the permission of
//! a pair is the union of every declaration, so the key and the bucket controllers compute the
//! same answer and never undo each other. Each controller acts only on the pairs its object
//! declares or granted before (its managed set); a grant made outside the operator on a pair
//! no object declares is left alone. Pure: callers resolve the objects and Garage's buckets.

use std::collections::{BTreeMap, BTreeSet};

use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_key::GarageKey;
use shared_types::garage_reference_grant::{
    GarageReferenceGrant, GrantFromKind, GrantToKind, Reference,
};

use super::reach::target_namespace;
use garage_api_types::{BucketListItem, BucketPermissions};

/// A bucket ID and an access key ID.
pub type Pair = (String, String);

/// Every GarageReferenceGrant the reconciler can see, and the labels of every namespace it can
/// read (a selector grant admits nothing from a namespace whose labels are unknown).
#[derive(Debug, Default, Clone)]
pub struct Grants {
    /// The grants.
    pub grants: Vec<GarageReferenceGrant>,
    /// Namespace name to its labels.
    pub namespace_labels: BTreeMap<String, BTreeMap<String, String>>,
}

impl Grants {
    /// True when an object of `from_kind` in `from_ns` may reference `to_kind` `to_name` in
    /// `to_ns`.
    pub fn allows(
        &self,
        from_kind: GrantFromKind,
        from_ns: &str,
        to_kind: GrantToKind,
        to_ns: &str,
        to_name: &str,
    ) -> bool {
        if from_ns == to_ns {
            return true;
        }
        let reference = Reference {
            from_kind,
            from_namespace: from_ns,
            to_kind,
            to_name,
        };
        let labels = self.namespace_labels.get(from_ns);
        self.grants
            .iter()
            .filter(|g| g.metadata.namespace.as_deref() == Some(to_ns))
            .any(|g| g.permits(&reference, labels))
    }
}

/// True when what `key` declares can only be resolved against Garage's own bucket list: it is
/// granted every bucket (or was, and the grants must now be taken back), or names a bucket by
/// ID or global alias rather than by GarageBucket.
pub fn reads_garage_buckets(key: &GarageKey) -> bool {
    key.spec.all_buckets.is_some()
        || key.status.as_ref().and_then(|s| s.cluster_wide) == Some(true)
        || key
            .spec
            .bucket_permissions
            .iter()
            .flatten()
            .any(|p| p.bucket_ref.is_none())
}

/// What the declarations of one cluster's objects resolve to.
pub struct Cluster<'a> {
    /// Namespace of the GarageCluster.
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Every GarageKey the reconciler sees (others' clusters are skipped).
    pub keys: &'a [std::sync::Arc<GarageKey>],
    /// Every GarageBucket the reconciler sees.
    pub buckets: &'a [std::sync::Arc<GarageBucket>],
    /// The buckets Garage has.
    pub garage_buckets: &'a [BucketListItem],
    /// The grants.
    pub grants: &'a Grants,
}

fn or(a: BucketPermissions, b: BucketPermissions) -> BucketPermissions {
    BucketPermissions {
        read: a.read || b.read,
        write: a.write || b.write,
        owner: a.owner || b.owner,
    }
}

fn perms(read: Option<bool>, write: Option<bool>, owner: Option<bool>) -> BucketPermissions {
    BucketPermissions {
        read: read.unwrap_or(false),
        write: write.unwrap_or(false),
        owner: owner.unwrap_or(false),
    }
}

impl Cluster<'_> {
    fn ours(&self, ns: &str, reference: &shared_types::common::ClusterReference) -> bool {
        reference.name == self.name
            && target_namespace(ns, reference.namespace.as_deref()) == self.namespace
    }

    /// The access key ID of the GarageKey `ns/name` of this cluster, once it has one.
    fn access_key(&self, ns: &str, name: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|k| {
                k.metadata.namespace.as_deref() == Some(ns)
                    && k.metadata.name.as_deref() == Some(name)
            })
            .filter(|k| self.ours(ns, &k.spec.cluster_ref))
            .and_then(|k| k.status.as_ref()?.access_key_id.as_deref())
            .filter(|id| !id.is_empty())
    }

    /// The bucket ID of the GarageBucket `ns/name` of this cluster, once it has one.
    fn bucket_id(&self, ns: &str, name: &str) -> Option<&str> {
        self.buckets
            .iter()
            .find(|b| {
                b.metadata.namespace.as_deref() == Some(ns)
                    && b.metadata.name.as_deref() == Some(name)
            })
            .filter(|b| self.ours(ns, &b.spec.cluster_ref))
            .and_then(|b| b.status.as_ref()?.bucket_id.as_deref())
            .filter(|id| !id.is_empty())
    }

    /// The buckets one key declares on its own (not counting `allBuckets`), with what it asks
    /// for on each. References that do not resolve yet (or are not granted) are left out.
    pub fn key_declares(&self, key: &GarageKey) -> BTreeMap<String, BucketPermissions> {
        let mut out: BTreeMap<String, BucketPermissions> = BTreeMap::new();
        let ns = key.metadata.namespace.as_deref().unwrap_or_default();
        for p in key.spec.bucket_permissions.iter().flatten() {
            let id = if let Some(r) = &p.bucket_ref {
                let bns = target_namespace(ns, r.namespace.as_deref());
                if !self.grants.allows(
                    GrantFromKind::GarageKey,
                    ns,
                    GrantToKind::GarageBucket,
                    bns,
                    &r.name,
                ) {
                    continue;
                }
                self.bucket_id(bns, &r.name).map(str::to_owned)
            } else if let Some(id) = p.bucket_id.as_deref().filter(|s| !s.is_empty()) {
                self.garage_buckets
                    .iter()
                    .any(|b| b.id == id)
                    .then(|| id.to_owned())
            } else if let Some(alias) = p.global_alias.as_deref() {
                self.garage_buckets
                    .iter()
                    .find(|b| b.global_aliases.iter().any(|a| a == alias))
                    .map(|b| b.id.clone())
            } else {
                None
            };
            if let Some(id) = id {
                let entry = out.entry(id).or_default();
                *entry = or(*entry, perms(p.read, p.write, p.owner));
            }
        }
        out
    }

    /// The key's `allBuckets` baseline, when it sets one.
    pub fn key_baseline(key: &GarageKey) -> Option<BucketPermissions> {
        key.spec
            .all_buckets
            .as_ref()
            .map(|a| perms(a.read, a.write, a.owner))
    }

    /// The keys one bucket declares, by access key ID, with what it grants each.
    pub fn bucket_declares(&self, bucket: &GarageBucket) -> BTreeMap<String, BucketPermissions> {
        let mut out: BTreeMap<String, BucketPermissions> = BTreeMap::new();
        let ns = bucket.metadata.namespace.as_deref().unwrap_or_default();
        for p in bucket.spec.key_permissions.iter().flatten() {
            let kns = target_namespace(ns, p.key_ref.namespace.as_deref());
            if !self.grants.allows(
                GrantFromKind::GarageBucket,
                ns,
                GrantToKind::GarageKey,
                kns,
                &p.key_ref.name,
            ) {
                continue;
            }
            if let Some(id) = self.access_key(kns, &p.key_ref.name) {
                let entry = out.entry(id.to_owned()).or_default();
                *entry = or(*entry, perms(p.read, p.write, p.owner));
            }
        }
        out
    }

    /// The permission every declaration of this cluster gives `pair`, `None` when nothing
    /// declares it.
    pub fn declared(&self, pair: &Pair) -> Option<BucketPermissions> {
        let (bucket_id, key_id) = pair;
        let mut found: Option<BucketPermissions> = None;
        let mut add = |p: BucketPermissions| found = Some(or(found.unwrap_or_default(), p));
        for key in self.keys.iter() {
            let ns = key.metadata.namespace.as_deref().unwrap_or_default();
            if !self.ours(ns, &key.spec.cluster_ref)
                || key.metadata.deletion_timestamp.is_some()
                || key.status.as_ref().and_then(|s| s.access_key_id.as_deref()) != Some(key_id)
            {
                continue;
            }
            if let Some(p) = self.key_declares(key).get(bucket_id) {
                add(*p);
            }
            if let Some(p) = Self::key_baseline(key)
                && self.garage_buckets.iter().any(|b| &b.id == bucket_id)
            {
                add(p);
            }
        }
        for bucket in self.buckets.iter() {
            let ns = bucket.metadata.namespace.as_deref().unwrap_or_default();
            if !self.ours(ns, &bucket.spec.cluster_ref)
                || bucket.metadata.deletion_timestamp.is_some()
                || bucket.status.as_ref().and_then(|s| s.bucket_id.as_deref()) != Some(bucket_id)
            {
                continue;
            }
            if let Some(p) = self.bucket_declares(bucket).get(key_id) {
                add(*p);
            }
        }
        found
    }
}

/// One permission change on one pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Bucket ID and access key ID.
    pub pair: Pair,
    /// Permissions to grant (those set).
    pub allow: BucketPermissions,
    /// Permissions to revoke (those set).
    pub deny: BucketPermissions,
}

/// The changes that make each pair of `scope` hold exactly what is `declared` for it, given
/// what Garage has now (`current`).
pub fn changes(
    scope: &BTreeSet<Pair>,
    current: &BTreeMap<Pair, BucketPermissions>,
    declared: impl Fn(&Pair) -> Option<BucketPermissions>,
) -> Vec<Change> {
    let mut out = Vec::new();
    for pair in scope {
        let want = declared(pair).unwrap_or_default();
        let have = current.get(pair).copied().unwrap_or_default();
        let allow = BucketPermissions {
            read: want.read && !have.read,
            write: want.write && !have.write,
            owner: want.owner && !have.owner,
        };
        let deny = BucketPermissions {
            read: have.read && !want.read,
            write: have.write && !want.write,
            owner: have.owner && !want.owner,
        };
        if allow != BucketPermissions::default() || deny != BucketPermissions::default() {
            out.push(Change {
                pair: pair.clone(),
                allow,
                deny,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn key(spec: serde_json::Value, status: serde_json::Value) -> GarageKey {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "garage.rajsingh.info/v1beta1",
            "kind": "GarageKey",
            "metadata": {"name": "k", "namespace": "apps"},
            "spec": spec,
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn only_keys_that_name_garage_buckets_directly_need_the_bucket_list() {
        let by_ref = serde_json::json!({"clusterRef": {"name": "g"},
            "bucketPermissions": [{"bucketRef": {"name": "b"}, "read": true}]});
        assert!(!reads_garage_buckets(&key(by_ref, serde_json::json!({}))));
        let by_alias = serde_json::json!({"clusterRef": {"name": "g"},
            "bucketPermissions": [{"globalAlias": "b", "read": true}]});
        assert!(reads_garage_buckets(&key(by_alias, serde_json::json!({}))));
        let wide = serde_json::json!({"clusterRef": {"name": "g"}, "allBuckets": {"read": true}});
        assert!(reads_garage_buckets(&key(wide, serde_json::json!({}))));
        // The baseline is gone from the spec but its grants are still in Garage: revoking
        // them needs the list.
        let was_wide = serde_json::json!({"clusterRef": {"name": "g"}});
        assert!(reads_garage_buckets(&key(
            was_wide,
            serde_json::json!({"clusterWide": true})
        )));
    }

    fn p(read: bool, write: bool, owner: bool) -> BucketPermissions {
        BucketPermissions { read, write, owner }
    }

    fn pair(b: &str) -> Pair {
        (b.into(), "GK1".into())
    }

    #[test]
    fn changes_bring_each_pair_in_scope_to_exactly_what_is_declared() {
        let none = p(false, false, false);
        type Case = (
            &'static str,
            Option<BucketPermissions>,
            Option<BucketPermissions>,
            Option<(BucketPermissions, BucketPermissions)>,
        );
        let cases: &[Case] = &[
            (
                "declared and held",
                Some(p(true, true, false)),
                Some(p(true, true, false)),
                None,
            ),
            ("neither", None, None, None),
            (
                "declared, not held: allowed",
                Some(p(true, false, true)),
                None,
                Some((p(true, false, true), none)),
            ),
            (
                "held, no longer declared: denied",
                None,
                Some(p(true, true, false)),
                Some((none, p(true, true, false))),
            ),
            (
                "only the difference moves",
                Some(p(true, false, false)),
                Some(p(false, true, false)),
                Some((p(true, false, false), p(false, true, false))),
            ),
            (
                "an all-false declaration revokes",
                Some(none),
                Some(p(false, false, true)),
                Some((none, p(false, false, true))),
            ),
        ];
        for (what, declared, held, want) in cases {
            let scope = BTreeSet::from([pair("b1")]);
            let current: BTreeMap<Pair, BucketPermissions> =
                held.iter().map(|h| (pair("b1"), *h)).collect();
            let got = changes(&scope, &current, |_| *declared);
            let want: Vec<Change> = want
                .iter()
                .map(|(allow, deny)| Change {
                    pair: pair("b1"),
                    allow: *allow,
                    deny: *deny,
                })
                .collect();
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn pairs_outside_the_scope_are_never_changed() {
        // A grant made outside the operator on a pair no object manages is left alone.
        let current = BTreeMap::from([(pair("foreign"), p(true, true, true))]);
        let scope = BTreeSet::from([pair("b1")]);
        let got = changes(&scope, &current, |_| Some(p(true, false, false)));
        assert_eq!(
            got,
            [Change {
                pair: pair("b1"),
                allow: p(true, false, false),
                deny: p(false, false, false),
            }]
        );
    }
}
