//! Property tests: generated objects of every shape survive both round trips, a legacy
//! read-modify-write keeps v1beta2-only data, and no input makes a ConversionReview panic.

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use kube::core::conversion::ConversionReview;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use shared_types::garage_cluster::{v1beta1, v1beta2};
use support::{object, to_json};
use webhook::convert::{V1BETA1, V1BETA2, convert_review, to_v1beta1, to_v1beta2};

/// Sets `key` when the generated value is present.
fn put(map: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        map.insert(key.to_owned(), value);
    }
}

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9]{0,6}"
}

fn labels() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(name(), "[a-z0-9]{0,5}", 0..3).prop_map(|m| json!(m))
}

fn volume() -> impl Strategy<Value = Value> {
    (
        prop::option::of(prop::sample::select(vec!["1Gi", "10Gi", "500Mi", "1Ti"])),
        prop::option::of(name()),
        prop::option::of(name()),
        prop::option::of(labels()),
        prop::option::of(prop::sample::select(vec![
            "PersistentVolumeClaim",
            "EmptyDir",
        ])),
    )
        .prop_map(|(size, class, vac, labels, kind)| {
            let mut m = Map::new();
            put(&mut m, "size", size.map(Value::from));
            put(&mut m, "storageClassName", class.map(Value::from));
            put(&mut m, "volumeAttributesClassName", vac.map(Value::from));
            put(&mut m, "labels", labels);
            put(&mut m, "type", kind.map(Value::from));
            Value::Object(m)
        })
}

fn pdb() -> impl Strategy<Value = Value> {
    (
        prop::option::of(any::<bool>()),
        prop::option::of(prop_oneof![
            (0..5i32).prop_map(Value::from),
            Just(json!("25%")),
        ]),
    )
        .prop_map(|(enabled, max)| {
            let mut m = Map::new();
            put(&mut m, "enabled", enabled.map(Value::from));
            put(&mut m, "maxUnavailable", max);
            Value::Object(m)
        })
}

fn retention() -> impl Strategy<Value = Value> {
    prop::sample::select(vec!["Retain", "Delete"]).prop_map(|r| json!({"whenDeleted": r}))
}

fn env() -> impl Strategy<Value = Value> {
    prop::collection::vec((name(), "[a-z0-9]{0,4}"), 0..3).prop_map(|vars| {
        json!(
            vars.into_iter()
                .map(|(n, v)| json!({"name": n.to_uppercase(), "value": v}))
                .collect::<Vec<_>>()
        )
    })
}

/// The ten pod fields, a few of them varied.
fn pod_fields() -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::option::of(labels()),
        prop::option::of(labels()),
        prop::option::of(name()),
        prop::option::of(prop::sample::select(vec!["100m", "1", "2"])),
    )
        .prop_map(|(selector, pod_labels, priority, cpu)| {
            let mut m = Map::new();
            put(&mut m, "nodeSelector", selector);
            put(&mut m, "podLabels", pod_labels);
            put(&mut m, "priorityClassName", priority.map(Value::from));
            put(
                &mut m,
                "resources",
                cpu.map(|c| json!({"requests": {"cpu": c}})),
            );
            m
        })
}

fn pools() -> impl Strategy<Value = Value> {
    prop::collection::btree_set(name(), 1..3).prop_map(|names| {
        json!(names.into_iter().map(|n| json!({
            "name": n, "capacity": "1Ti",
            "metadata": {"hostPath": format!("/m/{n}")}, "data": {"hostPath": format!("/d/{n}")},
            "selector": {"matchLabels": {"pool": n}},
        })).collect::<Vec<_>>())
    })
}

fn shared() -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::option::of(name()),
        prop::option::of(name()),
        prop::option::of(prop::sample::select(vec!["Auto", "Manual"])),
        prop::option::of((name(), name())),
        prop::option::of(labels()),
    )
        .prop_map(|(zone, label, policy, remote, annotations)| {
            let mut m = Map::new();
            put(&mut m, "zone", zone.map(Value::from));
            put(&mut m, "zoneFrom", label.map(|l| json!({"nodeLabel": l})));
            put(&mut m, "layoutPolicy", policy.map(Value::from));
            put(&mut m, "remoteClusters", remote.map(|(n, z)| json!([{"name": n, "zone": z,
                "connection": {"adminApiEndpoint": "https://r:3903", "gatewayRpcEndpointTemplate": "g-{ordinal}:3901"}}])));
            // Not spec: user annotations, carried in the map and split off by the caller. The API
            // server never stores an empty annotation map (ObjectMeta omits it), so none is made.
            put(&mut m, "__annotations", annotations.filter(|a| a != &json!({})));
            m
        })
}

fn storage_block() -> impl Strategy<Value = Map<String, Value>> {
    (
        0..5i32,
        prop::option::of(volume()),
        prop::option::of(volume()),
        prop::option::of(prop::sample::select(vec!["Auto", "Manual"])),
        prop::option::of("[a-z]{1,4}-\\{ordinal\\}:3901"),
        prop::option::of(env()),
        prop::option::of(any::<bool>()),
        prop::option::of(retention()),
    )
        .prop_map(
            |(replicas, metadata, data, policy, rpc, env, fsync, retention)| {
                let mut m = Map::new();
                m.insert("replicas".into(), json!(replicas));
                put(&mut m, "metadata", metadata);
                put(&mut m, "data", data);
                put(&mut m, "layoutPolicy", policy.map(Value::from));
                put(&mut m, "rpcPublicAddr", rpc.map(Value::from));
                put(&mut m, "env", env);
                put(&mut m, "metadataFsync", fsync.map(Value::from));
                put(&mut m, "pvcRetentionPolicy", retention);
                m
            },
        )
}

fn split_annotations(
    mut spec: Map<String, Value>,
    api_version: &str,
    status: Option<Value>,
) -> Value {
    let annotations = spec.remove("__annotations");
    let mut object = object(api_version, Value::Object(spec), annotations);
    if let Some(status) = status {
        object["status"] = status;
    }
    object
}

fn status() -> impl Strategy<Value = Option<Value>> {
    prop::option::of((0..5i32, prop::collection::vec(name(), 0..3)).prop_map(|(n, ids)| json!({
        "replicas": n, "selector": "s", "scaleReplicas": n, "scaleSelector": "ss",
        "storageDrain": {"transactionId": "t", "targetHash": "h", "layoutVersion": 3, "queueLength": 0,
            "errorCount": 0, "requiresEmptyQueue": true, "startedAt": "2024-05-01T00:00:00Z",
            "roleRemovalNodeIds": ids.clone(), "removedStorageNodeIds": ids},
    })))
}

#[derive(Clone, Copy, Debug)]
enum HubShape {
    Storage,
    Unified,
    Edge,
    Handle,
}

/// A v1beta2 object of any shape, as JSON.
fn hub_object() -> impl Strategy<Value = (HubShape, Value)> {
    let gateway = (
        0..5i32,
        prop::option::of(volume()),
        prop::option::of(env()),
        prop::option::of("[a-z]{1,5}:3901"),
        prop::option::of(pdb()),
        prop::option::of(retention()),
        pod_fields(),
        any::<bool>(),
    )
        .prop_map(
            |(replicas, metadata, env, rpc, pdb, retention, pod, probe)| {
                let mut m = pod;
                m.insert("replicas".into(), json!(replicas));
                put(&mut m, "metadata", metadata);
                put(&mut m, "env", env);
                put(&mut m, "rpcPublicAddr", rpc.map(Value::from));
                put(&mut m, "podDisruptionBudget", pdb);
                put(&mut m, "pvcRetentionPolicy", retention);
                put(
                    &mut m,
                    "readinessProbe",
                    probe.then(|| json!({"tcpSocket": {"port": 3900}})),
                );
                Value::Object(m)
            },
        );
    let storage = (
        storage_block(),
        pod_fields(),
        prop::option::of(pools()),
        prop::option::of(pdb()),
        prop::option::of(0..50i64),
    )
        .prop_map(|(mut block, pod, pools, pdb, reserve)| {
            block.extend(pod);
            put(&mut block, "nodeLocalPools", pools);
            put(&mut block, "podDisruptionBudget", pdb);
            put(
                &mut block,
                "capacityReservePercent",
                reserve.map(Value::from),
            );
            Value::Object(block)
        });
    let shape = prop::sample::select(vec![
        HubShape::Storage,
        HubShape::Unified,
        HubShape::Edge,
        HubShape::Handle,
    ]);
    (shape, shared(), storage, gateway, status()).prop_map(
        |(shape, mut spec, storage, gateway, status)| {
            let connect = json!({"clusterRef": {"name": "main"}});
            match shape {
                HubShape::Storage => {
                    spec.insert("storage".into(), storage);
                }
                HubShape::Unified => {
                    spec.insert("storage".into(), storage);
                    spec.insert("gateway".into(), gateway);
                }
                HubShape::Edge => {
                    spec.insert("gateway".into(), gateway);
                    spec.insert("connectTo".into(), connect);
                }
                HubShape::Handle => {
                    spec.insert("connectTo".into(), connect);
                }
            }
            (shape, split_annotations(spec, V1BETA2, status))
        },
    )
}

/// A v1beta1 object of any shape, as JSON, in the form a v1beta1 view is written in.
fn spoke_object() -> impl Strategy<Value = Value> {
    let shape = 0..3u8;
    (
        shape,
        shared(),
        storage_block(),
        pod_fields(),
        prop::option::of(pdb()),
        prop::option::of(0..50i64),
        status(),
    )
        .prop_map(|(shape, mut spec, mut block, pod, pdb, reserve, status)| {
            let replicas = block.remove("replicas").unwrap_or(json!(1));
            match shape {
                0 => {
                    spec.extend(pod);
                    spec.insert("gateway".into(), json!(false));
                    spec.insert("replicas".into(), replicas);
                    if !block.is_empty() {
                        spec.insert("storage".into(), Value::Object(block));
                    }
                    put(&mut spec, "podDisruptionBudget", pdb);
                    put(
                        &mut spec,
                        "capacityReservePercent",
                        reserve.map(Value::from),
                    );
                }
                1 => {
                    spec.extend(pod);
                    spec.insert("gateway".into(), json!(true));
                    spec.insert("replicas".into(), replicas);
                    spec.insert("connectTo".into(), json!({"clusterRef": {"name": "main"}}));
                    let mut edge = Map::new();
                    put(&mut edge, "metadata", block.remove("metadata"));
                    put(
                        &mut edge,
                        "pvcRetentionPolicy",
                        block.remove("pvcRetentionPolicy"),
                    );
                    if !edge.is_empty() {
                        spec.insert("storage".into(), Value::Object(edge));
                    }
                    put(&mut spec, "podDisruptionBudget", pdb);
                }
                _ => {
                    spec.insert("gateway".into(), json!(false));
                    spec.insert("replicas".into(), json!(0));
                    spec.insert(
                        "connectTo".into(),
                        json!({"adminApiEndpoint": "http://main:3903"}),
                    );
                }
            }
            split_annotations(spec, V1BETA1, status)
        })
}

proptest! {
    #[test]
    fn v1beta1_to_v1beta2_to_v1beta1_is_identity(doc in spoke_object()) {
        let typed: v1beta1::GarageCluster = serde_json::from_value(doc.clone()).unwrap();
        let back = to_v1beta1(to_v1beta2(typed).unwrap()).unwrap();
        prop_assert_eq!(to_json(&back), doc);
    }

    #[test]
    fn v1beta2_to_v1beta1_to_v1beta2_is_identity((_shape, doc) in hub_object()) {
        let typed: v1beta2::GarageCluster = serde_json::from_value(doc.clone()).unwrap();
        let back = to_v1beta2(to_v1beta1(typed).unwrap()).unwrap();
        prop_assert_eq!(to_json(&back), doc);
    }

    #[test]
    fn a_legacy_replicas_edit_keeps_v1beta2_only_data((shape, doc) in hub_object(), replicas in 0..9i32) {
        let typed: v1beta2::GarageCluster = serde_json::from_value(doc.clone()).unwrap();
        let mut view = to_json(&to_v1beta1(typed).unwrap());
        view["spec"]["replicas"] = json!(replicas);
        let edited: v1beta1::GarageCluster = serde_json::from_value(view).unwrap();
        let back = to_json(&to_v1beta2(edited).unwrap());
        let mut want = doc;
        match shape {
            HubShape::Storage | HubShape::Unified => want["spec"]["storage"]["replicas"] = json!(replicas),
            HubShape::Edge => want["spec"]["gateway"]["replicas"] = json!(replicas),
            // A handle with replicas is a (then invalid) storage cluster; admission decides.
            HubShape::Handle => return Ok(()),
        }
        prop_assert_eq!(back, want);
    }

    #[test]
    fn reviews_never_panic_on_mangled_objects(
        (_shape, doc) in hub_object(),
        path in prop::sample::select(vec!["spec", "metadata", "apiVersion", "kind", "status",
            "spec.storage", "spec.gateway", "metadata.annotations"]),
        junk in prop_oneof![Just(Value::Null), any::<i64>().prop_map(Value::from),
            ".{0,8}".prop_map(Value::from), Just(json!([{}])), Just(json!({"replicas": -1}))],
        desired in prop::sample::select(vec![V1BETA1, V1BETA2, "garage.rajsingh.info/v1alpha1", "v1"]),
    ) {
        let mut mangled = doc;
        let mut target = &mut mangled;
        let mut keys = path.split('.').peekable();
        while let Some(key) = keys.next() {
            if keys.peek().is_none() {
                if let Some(map) = target.as_object_mut() { map.insert(key.to_owned(), junk.clone()); }
                break;
            }
            target = &mut target[key];
        }
        let review: ConversionReview = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "u", "desiredAPIVersion": desired, "objects": [mangled]},
        })).unwrap();
        let response = convert_review(review).response.unwrap();
        prop_assert_eq!(response.uid, "u");
        prop_assert!(response.result.is_success() || !response.result.message.is_empty());
    }
}
