//! Feeds the pure plans of GarageBuckets and GarageKeys arbitrary specs and Garage states:
//! the bucket settings update (`decide::garage_objects::bucket::plan::update`) and the
//! key-on-bucket permissions (`decide::garage_objects::access`: what every declaration grants a
//! pair, and the changes that make Garage hold it).
//!
//! Input: a leading 0x01 byte makes the rest describe keys, buckets, grants and Garage's
//! permissions (`AccessWorld`); anything else is a GarageBucket manifest as JSON (the sample
//! manifests are the seeds), a NUL byte, then bytes that describe the bucket as Garage holds
//! it (`BucketWorld`).
//!
//! Invariants, beyond "no panic" and "the same input gives the same plan":
//! - bucket: the update is the one write that brings Garage to the spec: once Garage holds
//!   what it sends (lifecycle rules read back through JSON, in any order, with the date alone
//!   or in full), planning again finds nothing to do; an update that changes nothing is never
//!   planned; a plan fails only for quotas that cannot be expressed;
//! - access: what a pair is granted does not depend on the order the objects are listed in
//!   (each controller reads them from its own cache); GarageKeys and GarageBuckets being
//!   deleted or belonging to another cluster grant nothing; a GarageReferenceGrant only ever
//!   adds permissions; the changes touch only the pairs in scope, never both grant and revoke
//!   one permission, and once applied leave every pair in scope with exactly what is
//!   declared, so that planning again finds nothing.

#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arbitrary::{Arbitrary, Unstructured};
use decide::garage_objects::access::{self, Cluster, Grants, Pair};
use decide::garage_objects::bucket::plan;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use libfuzzer_sys::fuzz_target;
use operator_fuzz::input;
use operator_fuzz::world::at;
use reconciler::garage::{
    BucketInfo, BucketListItem, BucketPermissions, BucketUpdate, LifecycleRule, WebsiteConfig,
};
use serde_json::json;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_key::GarageKey;
use shared_types::garage_reference_grant::GarageReferenceGrant;

/// Garage's copy of the bucket.
#[derive(Debug, Arbitrary)]
struct BucketWorld {
    /// Garage first holds what the spec asks for (then the fields below change it).
    from_spec: bool,
    quotas: Option<(Option<u32>, Option<u32>)>,
    website: Option<(bool, Option<u8>, Option<u8>)>,
    rules: Option<Vec<RuleW>>,
    /// Garage reads lifecycle rules back in reverse order.
    reversed: bool,
    /// Garage reads expiration dates back as the date alone.
    date_only: bool,
}

#[derive(Debug, Arbitrary)]
struct RuleW {
    id: u8,
    disabled: bool,
    prefix: Option<u8>,
    days: Option<u8>,
    date: bool,
    abort_days: Option<u8>,
}

const DOCUMENTS: &[&str] = &["", "index.html", "404.html", "other.html"];

fn info(w: &BucketWorld) -> Option<BucketInfo> {
    let rules: Option<Vec<_>> = w.rules.as_ref().map(|rules| {
        rules
            .iter()
            .take(3)
            .map(|r| {
                json!({
                    "ID": format!("r{}", r.id % 3),
                    "Status": if r.disabled { "Disabled" } else { "Enabled" },
                    "Filter": r.prefix.map(|p| json!({"Prefix": format!("p{}/", p % 2)})),
                    "Expiration": (r.days.is_some() || r.date).then(|| json!({
                        "Days": r.days.map(i64::from),
                        "Date": r.date.then_some("2030-01-01T00:00:00Z"),
                    })),
                    "AbortIncompleteMultipartUpload": r.abort_days.map(|d| json!({"DaysAfterInitiation": d})),
                })
            })
            .collect()
    });
    let (access, index, error) = w.website.unwrap_or((false, None, None));
    let doc = |d: Option<u8>| d.map(|d| DOCUMENTS[usize::from(d) % DOCUMENTS.len()]);
    let quotas = w.quotas.unwrap_or((None, None));
    serde_json::from_value(json!({
        "id": "b1", "created": "2026-01-01T00:00:00Z", "globalAliases": ["b"],
        "websiteAccess": access,
        "websiteConfig": access.then(|| json!({"indexDocument": doc(index).unwrap_or("index.html"), "errorDocument": doc(error)})),
        "keys": [], "objects": 0, "bytes": 0, "unfinishedUploads": 0,
        "unfinishedMultipartUploads": 0, "unfinishedMultipartUploadParts": 0,
        "unfinishedMultipartUploadBytes": 0,
        "quotas": {"maxSize": quotas.0, "maxObjects": quotas.1},
        "lifecycleRules": rules,
    }))
    .ok()
}

/// Lifecycle rules as Garage reads them back: through JSON, maybe reordered, maybe with the
/// date alone.
fn read_back(rules: &[LifecycleRule], w: &BucketWorld) -> Vec<LifecycleRule> {
    let mut out: Vec<LifecycleRule> = rules
        .iter()
        .map(|r| {
            let mut r: LifecycleRule = serde_json::to_value(r)
                .and_then(serde_json::from_value)
                .expect("a lifecycle rule round-trips through JSON");
            if w.date_only
                && let Some(date) = r.expiration.as_mut().and_then(|e| e.date.as_mut())
            {
                *date = date.chars().take(10).collect();
            }
            r
        })
        .collect();
    if w.reversed {
        out.reverse();
    }
    out
}

/// `info` once Garage has applied `u`.
fn apply(info: &BucketInfo, u: &BucketUpdate, w: &BucketWorld) -> BucketInfo {
    let mut next = info.clone();
    if let Some(q) = u.quotas {
        next.quotas = q;
    }
    if let Some(website) = &u.website_access {
        next.website_access = website.enabled;
        next.website_config = website.enabled.then(|| WebsiteConfig {
            index_document: website.index_document.clone().unwrap_or_default(),
            error_document: website.error_document.clone(),
            routing_rules: None,
        });
    }
    if let Some(rules) = &u.lifecycle_rules {
        next.lifecycle_rules = Some(read_back(rules, w));
    }
    next
}

fn bucket(data: &[u8]) {
    let Some((manifest, w)) = input::manifest_and::<BucketWorld>(data) else {
        return;
    };
    let Some(b) = input::object::<GarageBucket>(manifest, "my-bucket") else {
        return;
    };
    let Some(mut info) = info(&w) else {
        return;
    };
    let spec = &b.spec;
    if w.from_spec
        && let Ok(Some(u)) = plan::update(spec, &info)
    {
        info = apply(&info, &u, &w);
    }
    let planned = plan::update(spec, &info);
    assert_eq!(
        planned,
        plan::update(spec, &info),
        "the plan is not a function of its input"
    );
    match planned {
        Err(e) => assert!(
            plan::quotas(spec).is_err(),
            "the plan failed on {}: {}",
            e.field,
            e.message
        ),
        Ok(None) => {}
        Ok(Some(u)) => {
            assert_ne!(u, BucketUpdate::default(), "an update that changes nothing");
            let after = apply(&info, &u, &w);
            assert_eq!(
                plan::update(spec, &after),
                Ok(None),
                "Garage holds what was sent, yet another update is planned"
            );
        }
    }
}

/// Two namespaces and four names of each kind, so that references meet their objects.
const NAMESPACES: &[&str] = &["ns", "other"];

#[derive(Debug, Arbitrary)]
struct Perms {
    read: Option<bool>,
    write: Option<bool>,
    owner: Option<bool>,
}

#[derive(Debug, Arbitrary)]
enum Target {
    Ref { name: u8, namespace: Option<bool> },
    Id(u8),
    Alias(u8),
    Nothing,
}

#[derive(Debug, Arbitrary)]
struct KeyW {
    in_other: bool,
    name: u8,
    other_cluster: bool,
    access_key: Option<u8>,
    deleting: bool,
    grants: Vec<(Target, Perms)>,
    all_buckets: Option<Perms>,
}

#[derive(Debug, Arbitrary)]
struct BucketW {
    in_other: bool,
    name: u8,
    other_cluster: bool,
    bucket_id: Option<u8>,
    deleting: bool,
    grants: Vec<(u8, Option<bool>, Perms)>,
}

#[derive(Debug, Arbitrary)]
struct GrantW {
    in_other: bool,
    from: Vec<(bool, Option<bool>)>,
    to: Option<Vec<(u8, Option<u8>)>>,
}

#[derive(Debug, Arbitrary)]
struct AccessWorld {
    keys: Vec<KeyW>,
    buckets: Vec<BucketW>,
    grants: Vec<GrantW>,
    garage_buckets: u8,
    current: Vec<(u8, u8, u8)>,
    scope: Vec<(u8, u8)>,
}

fn perms(p: &Perms) -> serde_json::Value {
    json!({"read": p.read, "write": p.write, "owner": p.owner})
}

fn ns(other: bool) -> &'static str {
    NAMESPACES[usize::from(other)]
}

fn objects(
    w: &AccessWorld,
) -> (
    Vec<Arc<GarageKey>>,
    Vec<Arc<GarageBucket>>,
    Vec<GarageReferenceGrant>,
) {
    let mut seen = BTreeSet::new();
    let keys = w
        .keys
        .iter()
        .take(4)
        // The API server holds one object per namespace and name.
        .filter(|k| seen.insert((k.in_other, k.name % 4)))
        .filter_map(|k| {
            let mut spec = json!({
                "clusterRef": {"name": if k.other_cluster { "elsewhere" } else { "garage" }, "namespace": "ns"},
                "bucketPermissions": k.grants.iter().take(3).map(|(t, p)| {
                    let mut g = perms(p);
                    match t {
                        Target::Ref { name, namespace } => g["bucketRef"] = json!({"name": format!("b{}", name % 4), "namespace": namespace.map(ns)}),
                        Target::Id(i) => g["bucketId"] = json!(format!("id-{}", i % 4)),
                        Target::Alias(a) => g["globalAlias"] = json!(format!("alias-{}", a % 4)),
                        Target::Nothing => {}
                    }
                    g
                }).collect::<Vec<_>>(),
            });
            if let Some(p) = &k.all_buckets {
                spec["allBuckets"] = perms(p);
            }
            let mut key: GarageKey = serde_json::from_value(json!({
                "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageKey",
                "metadata": {"name": format!("k{}", k.name % 4), "namespace": ns(k.in_other)},
                "spec": spec,
                "status": {"accessKeyId": k.access_key.map(|a| format!("GK{}", a % 4))},
            }))
            .ok()?;
            if k.deleting {
                key.metadata.deletion_timestamp = Some(Time(at(0)));
            }
            Some(Arc::new(key))
        })
        .collect();
    let mut seen = BTreeSet::new();
    let buckets = w
        .buckets
        .iter()
        .take(4)
        .filter(|b| seen.insert((b.in_other, b.name % 4)))
        .filter_map(|b| {
            let mut bucket: GarageBucket = serde_json::from_value(json!({
                "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageBucket",
                "metadata": {"name": format!("b{}", b.name % 4), "namespace": ns(b.in_other)},
                "spec": {
                    "clusterRef": {"name": if b.other_cluster { "elsewhere" } else { "garage" }, "namespace": "ns"},
                    "keyPermissions": b.grants.iter().take(3).map(|(k, namespace, p)| {
                        let mut g = perms(p);
                        g["keyRef"] = json!({"name": format!("k{}", k % 4), "namespace": namespace.map(ns)});
                        g
                    }).collect::<Vec<_>>(),
                },
                "status": {"bucketId": b.bucket_id.map(|i| format!("id-{}", i % 4))},
            }))
            .ok()?;
            if b.deleting {
                bucket.metadata.deletion_timestamp = Some(Time(at(0)));
            }
            Some(Arc::new(bucket))
        })
        .collect();
    let kinds = ["GarageCluster", "GarageBucket", "GarageKey"];
    let grants = w
        .grants
        .iter()
        .take(3)
        .enumerate()
        .filter_map(|(i, g)| {
            serde_json::from_value(json!({
                "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageReferenceGrant",
                "metadata": {"name": format!("g{i}"), "namespace": ns(g.in_other)},
                "spec": {
                    "from": g.from.iter().take(2).map(|(bucket, namespace)| {
                        let kind = if *bucket { "GarageBucket" } else { "GarageKey" };
                        match namespace {
                            Some(other) => json!({"kind": kind, "namespace": ns(*other)}),
                            None => json!({"kind": kind, "namespaceSelector": {"matchLabels": {"team": "b"}}}),
                        }
                    }).collect::<Vec<_>>(),
                    "to": g.to.as_ref().map(|to| to.iter().take(2).map(|(kind, name)| json!({
                        "kind": kinds[usize::from(*kind) % kinds.len()],
                        "name": name.map(|n| format!("{}{}", if kind % 2 == 0 { "b" } else { "k" }, n % 4)),
                    })).collect::<Vec<_>>()),
                },
            }))
            .ok()
        })
        .collect();
    (keys, buckets, grants)
}

fn declared_all(c: &Cluster<'_>, pairs: &[Pair]) -> Vec<Option<BucketPermissions>> {
    pairs.iter().map(|p| c.declared(p)).collect()
}

fn access_plan(w: AccessWorld) {
    let (keys, buckets, grants) = objects(&w);
    let garage_buckets: Vec<BucketListItem> = (0..w.garage_buckets % 5)
        .filter_map(|i| {
            serde_json::from_value(json!({
                "id": format!("id-{i}"), "created": "2026-01-01T00:00:00Z",
                "globalAliases": [format!("alias-{i}")], "localAliases": [],
            }))
            .ok()
        })
        .collect();
    let namespace_labels = BTreeMap::from([
        (
            "ns".to_owned(),
            BTreeMap::from([("team".to_owned(), "a".to_owned())]),
        ),
        (
            "other".to_owned(),
            BTreeMap::from([("team".to_owned(), "b".to_owned())]),
        ),
    ]);
    let with_grants = Grants {
        grants: grants.clone(),
        namespace_labels: namespace_labels.clone(),
    };
    let cluster = |keys: &'_ [Arc<GarageKey>],
                   buckets: &'_ [Arc<GarageBucket>],
                   grants: &'_ Grants,
                   garage: &'_ [BucketListItem]|
     -> Vec<Option<BucketPermissions>> {
        let pairs = pairs();
        let c = Cluster {
            namespace: "ns",
            name: "garage",
            keys,
            buckets,
            garage_buckets: garage,
            grants,
        };
        declared_all(&c, &pairs)
    };
    let declared = cluster(&keys, &buckets, &with_grants, &garage_buckets);
    assert_eq!(
        declared,
        cluster(&keys, &buckets, &with_grants, &garage_buckets)
    );

    let rev = |v: &[Arc<GarageKey>]| v.iter().rev().cloned().collect::<Vec<_>>();
    let rev_buckets: Vec<Arc<GarageBucket>> = buckets.iter().rev().cloned().collect();
    let rev_grants = Grants {
        grants: grants.iter().rev().cloned().collect(),
        namespace_labels: namespace_labels.clone(),
    };
    let rev_garage: Vec<BucketListItem> = garage_buckets.iter().rev().cloned().collect();
    assert_eq!(
        declared,
        cluster(&rev(&keys), &rev_buckets, &rev_grants, &rev_garage),
        "the grants depend on the order objects are listed in"
    );

    // Deleting objects still resolve references (a key's ID is its ID until it is gone), so
    // only the declarations they make are dropped: compare with them present but silent.
    let silent_keys = silenced(
        &keys,
        |k| k.metadata.deletion_timestamp.is_none() && k.spec.cluster_ref.name == "garage",
        |k| {
            k.spec.bucket_permissions = None;
            k.spec.all_buckets = None;
        },
    );
    let silent_buckets = silenced(
        &buckets,
        |b| b.metadata.deletion_timestamp.is_none() && b.spec.cluster_ref.name == "garage",
        |b| b.spec.key_permissions = None,
    );
    assert_eq!(
        declared,
        cluster(&silent_keys, &silent_buckets, &with_grants, &garage_buckets),
        "a deleting object or another cluster's grants something"
    );

    let without = Grants {
        grants: vec![],
        namespace_labels,
    };
    for (with, without) in declared
        .iter()
        .zip(cluster(&keys, &buckets, &without, &garage_buckets))
    {
        let w = with.unwrap_or_default();
        let wo = without.unwrap_or_default();
        assert!(
            (w.read || !wo.read) && (w.write || !wo.write) && (w.owner || !wo.owner),
            "a grant took a permission away"
        );
    }

    let all_pairs = pairs();
    let scope: BTreeSet<Pair> = w
        .scope
        .iter()
        .take(8)
        .map(|(b, k)| all_pairs[usize::from(*b % 4) * 4 + usize::from(*k % 4)].clone())
        .collect();
    let mut current: BTreeMap<Pair, BucketPermissions> = w
        .current
        .iter()
        .take(8)
        .map(|(b, k, p)| {
            (
                all_pairs[usize::from(*b % 4) * 4 + usize::from(*k % 4)].clone(),
                BucketPermissions {
                    read: p & 1 != 0,
                    write: p & 2 != 0,
                    owner: p & 4 != 0,
                },
            )
        })
        .collect();
    let lookup = |pair: &Pair| {
        all_pairs
            .iter()
            .position(|p| p == pair)
            .and_then(|i| declared[i])
    };
    let changes = access::changes(&scope, &current, lookup);
    let before = current.clone();
    for c in &changes {
        assert!(scope.contains(&c.pair), "a change outside the scope");
        let (a, d) = (c.allow, c.deny);
        assert!(
            !(a.read && d.read || a.write && d.write || a.owner && d.owner),
            "grants and revokes at once"
        );
        let p = current.entry(c.pair.clone()).or_default();
        p.read = (p.read || a.read) && !d.read;
        p.write = (p.write || a.write) && !d.write;
        p.owner = (p.owner || a.owner) && !d.owner;
    }
    for pair in &scope {
        assert_eq!(
            current.get(pair).copied().unwrap_or_default(),
            lookup(pair).unwrap_or_default()
        );
    }
    for (pair, p) in &before {
        if !scope.contains(pair) {
            assert_eq!(
                current.get(pair),
                Some(p),
                "a pair outside the scope changed"
            );
        }
    }
    assert!(
        access::changes(&scope, &current, lookup).is_empty(),
        "planning again changes more"
    );
}

/// `objects`, with what the ones that are not `live` declare taken out by `silence`; they
/// stay listed, as the targets of other objects' references.
fn silenced<K: Clone>(
    objects: &[Arc<K>],
    live: impl Fn(&K) -> bool,
    silence: impl Fn(&mut K),
) -> Vec<Arc<K>> {
    objects
        .iter()
        .map(|o| {
            if live(o) {
                return o.clone();
            }
            let mut o = (**o).clone();
            silence(&mut o);
            Arc::new(o)
        })
        .collect()
}

/// Every (bucket ID, access key ID) of the access world.
fn pairs() -> Vec<Pair> {
    (0..4)
        .flat_map(|b| (0..4).map(move |k| (format!("id-{b}"), format!("GK{k}"))))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    match data.split_first() {
        Some((0x01, rest)) => {
            if let Ok(w) = AccessWorld::arbitrary(&mut Unstructured::new(rest)) {
                access_plan(w);
            }
        }
        _ => {
            bucket(data);
        }
    }
});
