//! Table tests of the create-time GarageCluster rules, and the builders the
//! other test modules share.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};
use shared_types::garage_cluster::v1beta2::GarageCluster;

use super::validate_cluster;
use crate::admission::{Context, Review, Verdict};

/// A GarageCluster from JSON (metadata defaults filled in).
pub(super) fn gc(v: &Value) -> GarageCluster {
    let mut v = v.clone();
    v["apiVersion"] = json!("garage.rajsingh.info/v1beta2");
    v["kind"] = json!("GarageCluster");
    serde_json::from_value(v).unwrap()
}

/// A valid unified cluster: 3 storage replicas, 2 gateways.
pub(super) fn base() -> Value {
    json!({
        "metadata": {"name": "garage", "namespace": "garage", "generation": 1, "uid": "uid-1", "resourceVersion": "7"},
        "spec": {
            "replication": {"factor": 3, "consistencyMode": "consistent"},
            "storage": {"replicas": 3, "metadata": {"size": "1Gi"}, "data": {"size": "10Gi"}},
            "gateway": {"replicas": 2}
        }
    })
}

/// A node-local pool rooted at `root`, selected by `pool=<name>`.
pub(super) fn pool(name: &str, root: &str) -> Value {
    json!({
        "name": name,
        "capacity": "700Gi",
        "metadata": {"hostPath": format!("{root}/metadata"), "hostPathType": "Directory"},
        "data": {"hostPath": format!("{root}/data"), "hostPathType": "Directory"},
        "selector": {"matchLabels": {"storage.garage.example/pool": name}}
    })
}

/// A pool-only cluster: replicas 0, one pool.
pub(super) fn pool_base() -> Value {
    json!({
        "metadata": {"name": "garage", "namespace": "garage", "generation": 1, "uid": "uid-1"},
        "spec": {
            "zone": "site-a",
            "replication": {"factor": 3, "consistencyMode": "consistent"},
            "admin": {"adminTokenSecretRef": {"name": "garage-admin-token", "key": "admin-token"}},
            "storage": {"layoutPolicy": "Manual", "replicas": 0, "nodeLocalPools": [pool("local-700", "/var/lib/garage/local-700")]}
        }
    })
}

/// Sets the JSON pointer `path` to `value`, creating objects on the way.
pub(super) fn set(mut v: Value, path: &str, value: Value) -> Value {
    let mut cur = &mut v;
    for raw in path.trim_start_matches('/').split('/') {
        let part = raw.replace("~1", "/").replace("~0", "~");
        cur = match part.parse::<usize>() {
            Ok(i) if cur.is_array() => {
                let a = cur.as_array_mut().unwrap();
                if i == a.len() {
                    a.push(Value::Null);
                }
                &mut a[i]
            }
            _ => {
                if !cur.is_object() {
                    *cur = json!({});
                }
                cur.as_object_mut()
                    .unwrap()
                    .entry(part)
                    .or_insert(Value::Null)
            }
        };
    }
    *cur = value;
    v
}

/// Removes the member at JSON pointer `path`.
pub(super) fn del(mut v: Value, path: &str) -> Value {
    let (parent, last) = path.rsplit_once('/').unwrap();
    if let Some(p) = v.pointer_mut(if parent.is_empty() { "" } else { parent }) {
        match p {
            Value::Object(o) => {
                o.remove(last);
            }
            Value::Array(a) => {
                a.remove(last.parse::<usize>().unwrap());
            }
            _ => {}
        }
    }
    v
}

pub(super) fn create_with(v: &Value, ctx: &Context) -> Verdict {
    validate_cluster(Review::create(&gc(v)), ctx)
}

pub(super) fn create(v: &Value) -> Verdict {
    create_with(v, &Context::default())
}

pub(super) fn update_with(old: &Value, new: &Value, ctx: &Context) -> Verdict {
    validate_cluster(Review::update(&gc(old), &gc(new)), ctx)
}

pub(super) fn update(old: &Value, new: &Value) -> Verdict {
    update_with(old, new, &Context::default())
}

/// Checks one case: `want` None means allowed, Some(rule) means that rule
/// fired. Returns a description of a mismatch.
pub(super) fn judge(name: &str, verdict: &Verdict, want: Option<&str>) -> Option<String> {
    match want {
        None if !verdict.allowed() => Some(format!(
            "{name}: expected allowed, got {}",
            verdict.message()
        )),
        Some(rule) if !verdict.broke(rule) => Some(format!(
            "{name}: expected {rule}, got [{}]",
            verdict.message()
        )),
        _ => None,
    }
}

pub(super) fn run(cases: Vec<(&str, Verdict, Option<&str>)>) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(n, v, w)| judge(n, v, *w))
        .collect();
    assert!(
        failures.is_empty(),
        "{} failing case(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

pub(super) fn name(n: usize) -> String {
    let mut s = "g".to_string();
    s.push_str(&"a".repeat(n - 1));
    s
}

#[test]
fn the_base_objects_are_allowed() {
    run(vec![
        ("unified", create(&base()), None),
        ("pool-only seed example", create(&pool_base()), None),
    ]);
}

#[test]
fn managed_names_gc_c3() {
    let storage_only = |n: usize, r: i64| {
        set(
            set(
                del(base(), "/spec/gateway"),
                "/metadata/name",
                json!(name(n)),
            ),
            "/spec/storage/replicas",
            json!(r),
        )
    };
    let edge = |n: usize, r: i64| {
        json!({"metadata": {"name": name(n), "namespace": "garage"},
               "spec": {"gateway": {"replicas": r}, "connectTo": {"clusterRef": {"name": "store"}}}})
    };
    let handle = |n: usize| {
        json!({"metadata": {"name": name(n), "namespace": "garage"},
        "spec": {"connectTo": {"clusterRef": {"name": "store"}}}})
    };
    run(vec![
        (
            "50-char name, 50 replicas",
            create(&storage_only(50, 50)),
            None,
        ),
        (
            "51-char name, 50 replicas",
            create(&storage_only(51, 50)),
            Some("GC-C3"),
        ),
        (
            "51-char name, 10 replicas",
            create(&storage_only(51, 10)),
            None,
        ),
        (
            "51-char name, 11 replicas",
            create(&storage_only(51, 11)),
            Some("GC-C3"),
        ),
        (
            "54-char pool-only",
            create(&set(pool_base(), "/metadata/name", json!(name(54)))),
            None,
        ),
        (
            "55-char headless",
            create(&set(pool_base(), "/metadata/name", json!(name(55)))),
            Some("GC-C3"),
        ),
        ("63-char handle", create(&handle(63)), None),
        ("64-char handle", create(&handle(64)), Some("GC-C3")),
        ("52-char edge, 50", create(&edge(52, 50)), None),
        ("53-char edge, 50", create(&edge(53, 50)), Some("GC-C3")),
        ("53-char edge, 10", create(&edge(53, 10)), None),
        ("53-char edge, 11", create(&edge(53, 11)), Some("GC-C3")),
        (
            "storage Manual override, 54 chars, 11",
            create(&set(
                storage_only(54, 11),
                "/spec/storage/layoutPolicy",
                json!("Manual"),
            )),
            None,
        ),
        (
            "cluster Manual, storage Auto, 51 chars, 11",
            create(&set(
                set(storage_only(51, 11), "/spec/layoutPolicy", json!("Manual")),
                "/spec/storage/layoutPolicy",
                json!("Auto"),
            )),
            Some("GC-C3"),
        ),
        (
            "upper-case name",
            create(&set(base(), "/metadata/name", json!("Garage"))),
            Some("GC-C3"),
        ),
        (
            "unified gateway label bound",
            create(&set(
                set(base(), "/metadata/name", json!(name(51))),
                "/spec/gateway/replicas",
                json!(11),
            )),
            Some("GC-C3"),
        ),
    ]);
}

#[test]
fn tier_shapes_gc_c14_and_replica_bounds_gc_c15() {
    run(vec![
        (
            "nothing set",
            create(&set(base(), "/spec", json!({}))),
            Some("GC-C14"),
        ),
        (
            "gateway alone",
            create(
                &json!({"metadata": {"name": "g", "namespace": "n"}, "spec": {"gateway": {"replicas": 1}}}),
            ),
            Some("GC-C14"),
        ),
        (
            "storage + connectTo",
            create(&set(
                base(),
                "/spec/connectTo",
                json!({"clusterRef": {"name": "x"}}),
            )),
            Some("GC-C14"),
        ),
        (
            "storage + connectTo, no gateway",
            create(&set(
                del(base(), "/spec/gateway"),
                "/spec/connectTo",
                json!({"clusterRef": {"name": "x"}}),
            )),
            Some("GC-C14"),
        ),
        (
            "storage 50",
            create(&set(base(), "/spec/storage/replicas", json!(50))),
            None,
        ),
        (
            "storage 51",
            create(&set(base(), "/spec/storage/replicas", json!(51))),
            Some("GC-C15"),
        ),
        (
            "gateway 51",
            create(&set(base(), "/spec/gateway/replicas", json!(51))),
            Some("GC-C15"),
        ),
        (
            "negative storage",
            create(&set(base(), "/spec/storage/replicas", json!(-1))),
            Some("GC-C15"),
        ),
    ]);
}

#[test]
fn annotations_security_and_consul_gc_c4_to_c7() {
    let drain = |v: &str| {
        set(
            base(),
            "/metadata/annotations",
            json!({"garage.rajsingh.info/drain": v}),
        )
    };
    let federated_drain = set(
        set(
            set(drain("true"), "/spec/deletionPolicy", json!("Drain")),
            "/spec/remoteClusters",
            json!([{"name": "b", "zone": "b", "connection": {"adminApiEndpoint": "http://b:3903"}}]),
        ),
        "/spec/layoutManagement",
        json!({"drain": {"unverifiedPeersPolicy": "AssumeConsistent"}}),
    );
    run(vec![
        (
            "drain without Drain policy",
            create(&drain("true")),
            Some("GC-C6"),
        ),
        ("drain value yes", create(&drain("yes")), Some("GC-C6")),
        (
            "drain on a federated Drain site",
            create(&federated_drain),
            None,
        ),
        (
            "force-delete value 1",
            create(&set(
                base(),
                "/metadata/annotations",
                json!({"garage.rajsingh.info/force-delete-unrevoked-operator-tokens": "1"}),
            )),
            Some("GC-C7"),
        ),
        (
            "force-delete true",
            create(&set(
                base(),
                "/metadata/annotations",
                json!({"garage.rajsingh.info/force-delete-unrevoked-operator-tokens": "true"}),
            )),
            None,
        ),
        (
            "tls enabled",
            create(&set(base(), "/spec/security/tls", json!({"enabled": true}))),
            Some("GC-C5"),
        ),
        (
            "tls empty",
            create(&set(base(), "/spec/security/tls", json!({}))),
            None,
        ),
        (
            "consul without addr",
            create(&set(
                base(),
                "/spec/discovery",
                json!({"consul": {"enabled": true, "serviceName": "g"}}),
            )),
            Some("GC-C4"),
        ),
        (
            "consul complete",
            create(&set(
                base(),
                "/spec/discovery",
                json!({"consul": {"enabled": true, "serviceName": "g", "httpAddr": "http://consul:8500"}}),
            )),
            None,
        ),
    ]);
}

#[test]
fn templates_and_tags_gc_c8_to_c11() {
    let tpl = json!({"accessModes": ["ReadWriteOnce"]});
    run(vec![
        (
            "reserved storage label",
            create(&set(
                base(),
                "/spec/storage/podLabels",
                json!({"garage.rajsingh.info/storage-group": "x"}),
            )),
            Some("GC-C8"),
        ),
        (
            "reserved storage env",
            create(&set(
                base(),
                "/spec/storage/env",
                json!([{"name": "GARAGE_RPC_SECRET", "value": "x"}]),
            )),
            Some("GC-C8"),
        ),
        (
            "safe storage env",
            create(&set(
                base(),
                "/spec/storage/env",
                json!([{"name": "GARAGE_ALLOW_WORLD_READABLE_SECRETS", "value": "true"}]),
            )),
            None,
        ),
        (
            "reserved pool env",
            create(&set(
                pool_base(),
                "/spec/storage/nodeLocalPools/0/podTemplate",
                json!({"env": [{"name": "GARAGE_ADMIN_TOKEN", "value": "x"}]}),
            )),
            Some("GC-C8"),
        ),
        (
            "reserved gateway label",
            create(&set(
                base(),
                "/spec/gateway/podLabels",
                json!({"app.kubernetes.io/name": "x"}),
            )),
            Some("GC-C9"),
        ),
        (
            "unsafe gateway envFrom",
            create(&set(
                base(),
                "/spec/gateway/envFrom",
                json!([{"prefix": "GARAGE_", "configMapRef": {"name": "c"}}]),
            )),
            Some("GC-C9"),
        ),
        (
            "reserved tag",
            create(&set(
                base(),
                "/spec/defaultNodeTags",
                json!(["tier:gateway"]),
            )),
            Some("GC-C10"),
        ),
        (
            "user tag",
            create(&set(base(), "/spec/defaultNodeTags", json!(["rack:a"]))),
            None,
        ),
        (
            "metadata claim template",
            create(&set(
                base(),
                "/spec/storage/metadata/volumeClaimTemplateSpec",
                tpl.clone(),
            )),
            Some("GC-C11"),
        ),
        (
            "data path claim template",
            create(&set(
                base(),
                "/spec/storage/data/paths",
                json!([{"path": "/data/a", "volume": {"size": "1Gi", "volumeClaimTemplateSpec": tpl}}]),
            )),
            Some("GC-C11"),
        ),
        (
            "claim template carrying a VAC",
            create(&set(
                base(),
                "/spec/storage/data/volumeClaimTemplateSpec",
                json!({"volumeAttributesClassName": "fast"}),
            )),
            Some("GC-C11"),
        ),
        (
            "Manual claim template",
            create(&set(
                set(base(), "/spec/layoutPolicy", json!("Manual")),
                "/spec/storage/metadata/volumeClaimTemplateSpec",
                json!({}),
            )),
            Some("GC-C11"),
        ),
    ]);
}

#[test]
fn reserved_transport_and_budget_gc_c12_c13() {
    let ann = |k: &str, v: &str| set(pool_base(), "/metadata/annotations", json!({k: v}));
    let big = "x".repeat(256 * 1024);
    run(vec![
        (
            "pool payload",
            create(&ann("garage.rajsingh.info/v1beta2-node-local-pools", "")),
            Some("GC-C12"),
        ),
        (
            "gateway payload",
            create(&ann("garage.rajsingh.info/v1beta2-gateway-tier", "{}")),
            Some("GC-C12"),
        ),
        (
            "reserved marker",
            create(&ann(
                "garage.rajsingh.info/v1beta2-only",
                "unrelated,gateway-tier-present",
            )),
            Some("GC-C12"),
        ),
        (
            "other marker",
            create(&ann(
                "garage.rajsingh.info/v1beta2-only",
                "unrelated-component",
            )),
            None,
        ),
        (
            "256 KiB pool annotation",
            create(&set(
                pool_base(),
                "/spec/storage/nodeLocalPools/0/podTemplate/podAnnotations",
                json!({"big": big}),
            )),
            Some("GC-C13"),
        ),
        (
            "256 KiB gateway env",
            create(&set(
                base(),
                "/spec/gateway/env",
                json!([{"name": "BIG", "value": big}]),
            )),
            Some("GC-C13"),
        ),
    ]);
}
