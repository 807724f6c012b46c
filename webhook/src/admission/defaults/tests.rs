//! DEF-* cases: each checks the defaulted object, and that the patch holds
//! only add/replace operations and turns the submitted JSON into it.

use super::{
    default_bucket, default_cluster, default_cluster_v1beta1, default_key, default_node, patch,
};
use json_patch::PatchOperation;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_cluster::{v1beta1, v1beta2};
use shared_types::garage_key::GarageKey;
use shared_types::garage_node::GarageNode;

/// Applies the patch of `original` → `defaulted` and checks it is add/replace
/// only and reproduces `defaulted` on every key it holds.
fn assert_patch(original: &Value, defaulted: &Value) -> Value {
    let p = patch(original, defaulted);
    assert!(
        p.0.iter()
            .all(|op| matches!(op, PatchOperation::Add(_) | PatchOperation::Replace(_))),
        "only add/replace expected: {p:?}"
    );
    let mut doc = original.clone();
    json_patch::patch(&mut doc, &p.0).expect("patch applies to the original");
    assert_eq!(
        &doc, defaulted,
        "patched original equals the defaulted object"
    );
    doc
}

fn v2(spec: Value) -> Value {
    json!({"apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster", "metadata": {"name": "garage", "namespace": "store"}, "spec": spec})
}

/// Defaults `original` as a `T` with `default` and checks the patch (see [`assert_patch`]).
fn run<T: DeserializeOwned + Serialize>(original: Value, default: fn(&T) -> T) -> Value {
    let typed: T = serde_json::from_value(original.clone()).unwrap();
    let defaulted = serde_json::to_value(default(&typed)).unwrap();
    assert_patch(&original, &defaulted)
}

fn run_v2(original: Value) -> Value {
    run::<v1beta2::GarageCluster>(original, default_cluster)
}

fn run_v1(original: Value) -> Value {
    run::<v1beta1::GarageCluster>(original, default_cluster_v1beta1)
}

fn run_node(original: Value) -> Value {
    run::<GarageNode>(original, default_node)
}

#[test]
fn v1beta2_cluster_defaults() {
    let out = run_v2(v2(
        json!({"storage": {"replicas": 0}, "gateway": {"replicas": 0}}),
    ));
    let spec = &out["spec"];
    assert_eq!(spec["layoutPolicy"], "Auto");
    assert_eq!(
        spec["replication"],
        json!({"factor": 3, "consistencyMode": "consistent"})
    );
    assert_eq!(
        spec["storage"]["replicas"], 0,
        "explicit storage replicas 0 is preserved"
    );
    assert_eq!(
        spec["gateway"]["replicas"], 0,
        "explicit gateway replicas 0 is preserved"
    );
    assert_eq!(
        spec.get("deletionPolicy"),
        None,
        "deletionPolicy is never defaulted"
    );
    assert_eq!(
        spec["webApi"],
        json!({"enabled": true, "rootDomain": ".garage.store.svc"})
    );
    assert_eq!(
        spec.get("layoutManagement"),
        None,
        "layoutManagement is not created"
    );
}

#[test]
fn v1beta2_keeps_explicit_values() {
    let out = run_v2(v2(json!({
        "storage": {"replicas": 3},
        "deletionPolicy": "Drain",
        "layoutPolicy": "Manual",
        "replication": {"factor": 1, "consistencyMode": "degraded"},
        "webApi": {"enabled": false},
        "layoutManagement": {"drain": {"unverifiedPeersPolicy": "AssumeConsistent"}}
    })));
    let spec = &out["spec"];
    assert_eq!(spec["deletionPolicy"], "Drain");
    assert_eq!(spec["layoutPolicy"], "Manual");
    assert_eq!(
        spec["replication"],
        json!({"factor": 1, "consistencyMode": "degraded"})
    );
    assert_eq!(
        spec["webApi"],
        json!({"enabled": false}),
        "disabled web API gets no rootDomain"
    );
    assert_eq!(
        spec["layoutManagement"]["drain"]["unverifiedPeersPolicy"],
        "AssumeConsistent"
    );
}

#[test]
fn v1beta2_fills_partial_objects() {
    let out = run_v2(v2(json!({
        "storage": {"replicas": 1},
        "replication": {"factor": 0},
        "webApi": {"rootDomain": ""},
        "layoutManagement": {"drain": {}}
    })));
    let spec = &out["spec"];
    assert_eq!(spec["replication"]["factor"], 3, "factor 0 becomes 3");
    assert_eq!(spec["replication"]["consistencyMode"], "consistent");
    assert_eq!(
        spec["webApi"],
        json!({"enabled": true, "rootDomain": ".garage.store.svc"})
    );
    assert_eq!(
        spec["layoutManagement"]["drain"]["unverifiedPeersPolicy"],
        "Block"
    );
}

#[test]
fn v1beta2_pool_host_path_types() {
    let out = run_v2(v2(json!({"storage": {"replicas": 0, "nodeLocalPools": [
        {"name": "a", "capacity": "1Ti", "metadata": {"hostPath": "/m"}, "data": {"hostPath": "/d"}, "selector": {"matchLabels": {"p": "a"}}},
        {"name": "b", "capacity": "1Ti", "metadata": {"hostPath": "/m2", "hostPathType": "DirectoryOrCreate"}, "dataPaths": [{"path": "/data/x", "hostPath": "/x", "capacity": "1Ti"}], "selector": {"matchLabels": {"p": "b"}}}
    ]}})));
    let pools = &out["spec"]["storage"]["nodeLocalPools"];
    assert_eq!(pools[0]["metadata"]["hostPathType"], "Directory");
    assert_eq!(pools[0]["data"]["hostPathType"], "Directory");
    assert_eq!(
        pools[1]["metadata"]["hostPathType"], "DirectoryOrCreate",
        "explicit type kept"
    );
    assert_eq!(pools[1]["dataPaths"][0]["hostPathType"], "Directory");
}

#[test]
fn unknown_fields_are_never_removed() {
    let mut original = v2(json!({"storage": {"replicas": 0}}));
    original["spec"]["futureField"] = json!("kept");
    let typed: v1beta2::GarageCluster = serde_json::from_value(original.clone()).unwrap();
    let defaulted = serde_json::to_value(default_cluster(&typed)).unwrap();
    let p = patch(&original, &defaulted);
    assert!(
        p.0.iter()
            .all(|op| !matches!(op, PatchOperation::Remove(_)))
    );
    let mut doc = original.clone();
    json_patch::patch(&mut doc, &p.0).unwrap();
    assert_eq!(doc["spec"]["futureField"], "kept");
    assert_eq!(doc["spec"]["layoutPolicy"], "Auto");
}

#[test]
fn an_already_defaulted_object_yields_an_empty_patch() {
    let once = run_v2(v2(json!({"storage": {"replicas": 3}})));
    let typed: v1beta2::GarageCluster = serde_json::from_value(once.clone()).unwrap();
    let twice = serde_json::to_value(default_cluster(&typed)).unwrap();
    assert!(patch(&once, &twice).0.is_empty());
}

#[test]
fn v1beta1_cluster_defaults() {
    let original = json!({"apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageCluster", "metadata": {"name": "g", "namespace": "ns"}, "spec": {"replicas": 3, "network": {"rpcTimeout": "30s"}}});
    let out = run_v1(original);
    let spec = &out["spec"];
    assert_eq!(
        spec["replication"],
        json!({"factor": 3, "consistencyMode": "consistent"})
    );
    assert_eq!(spec["layoutPolicy"], "Auto");
    assert_eq!(
        spec["webApi"],
        json!({"enabled": true, "rootDomain": ".g.ns.svc"})
    );
    assert_eq!(
        spec["network"],
        json!({"rpcTimeout": "30s"}),
        "rpc timeouts untouched"
    );
}

#[test]
fn node_defaults() {
    let original = json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageNode",
        "metadata": {"name": "n", "namespace": "ns", "annotations": {
            "garage.rajsingh.info/acknowledge-lost-source": format!(" {} ", "A".repeat(64)),
            "garage.rajsingh.info/node-local-pool-recovery-node-id": "B".repeat(64),
            "other": "Keep Me"
        }},
        "spec": {"clusterRef": {"name": "g"}, "zone": "z", "nodeId": format!("{}\n", "C".repeat(64)), "external": {"address": "10.0.0.1"}}
    });
    let out = run_node(original);
    assert_eq!(out["spec"]["nodeId"], "c".repeat(64));
    assert_eq!(out["spec"]["external"]["port"], 3901);
    let annotations = &out["metadata"]["annotations"];
    assert_eq!(
        annotations["garage.rajsingh.info/acknowledge-lost-source"],
        "a".repeat(64)
    );
    assert_eq!(
        annotations["garage.rajsingh.info/node-local-pool-recovery-node-id"],
        "b".repeat(64)
    );
    assert_eq!(annotations["other"], "Keep Me");
}

#[test]
fn node_defaults_keep_an_explicit_port_and_add_no_fields() {
    let original = json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageNode",
        "metadata": {"name": "n", "namespace": "ns"},
        "spec": {"clusterRef": {"name": "g"}, "zone": "z", "nodeId": "d".repeat(64), "external": {"address": "h", "port": 4000}}
    });
    let typed: GarageNode = serde_json::from_value(original.clone()).unwrap();
    let defaulted = serde_json::to_value(default_node(&typed)).unwrap();
    assert!(patch(&original, &defaulted).0.is_empty());
    let zero = json!({
        "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageNode",
        "metadata": {"name": "n", "namespace": "ns"},
        "spec": {"clusterRef": {"name": "g"}, "zone": "z", "external": {"address": "h", "port": 0}}
    });
    assert_eq!(
        run_node(zero)["spec"]["external"]["port"],
        3901,
        "port 0 becomes 3901"
    );
}

#[test]
fn the_patch_replaces_arrays_of_another_length_whole() {
    let original = json!({"a": [1, 2], "b": {"c": 1}});
    let defaulted = json!({"a": [1, 2, 3], "b": {"c": 2, "d": 4}});
    assert_patch(&original, &defaulted);
}

fn bucket(spec: Value) -> Value {
    json!({"apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageBucket", "metadata": {"name": "logs", "namespace": "apps"}, "spec": spec})
}

fn key(spec: Value) -> Value {
    json!({"apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageKey", "metadata": {"name": "app-key", "namespace": "apps"}, "spec": spec})
}

#[test]
fn def_gb_global_alias_website_index_and_rule_status() {
    let out = run::<GarageBucket>(
        bucket(json!({
            "clusterRef": {"name": "garage"},
            "website": {"enabled": true},
            "lifecycle": {"rules": [{"id": "a", "expirationDays": 1}, {"id": "b", "status": "Disabled", "expirationDays": 2}]}
        })),
        default_bucket,
    );
    let spec = &out["spec"];
    assert_eq!(
        spec["globalAlias"], "logs",
        "globalAlias from metadata.name"
    );
    assert_eq!(spec["website"]["indexDocument"], "index.html");
    assert_eq!(spec["lifecycle"]["rules"][0]["status"], "Enabled");
    assert_eq!(
        spec["lifecycle"]["rules"][1]["status"], "Disabled",
        "explicit status kept"
    );
}

#[test]
fn def_gb_keeps_explicit_values_and_creates_nothing() {
    let out = run::<GarageBucket>(
        bucket(json!({
            "clusterRef": {"name": "garage"},
            "globalAlias": "shared-logs",
            "website": {"enabled": false}
        })),
        default_bucket,
    );
    let spec = &out["spec"];
    assert_eq!(spec["globalAlias"], "shared-logs");
    assert_eq!(
        spec["website"],
        json!({"enabled": false}),
        "no index for a disabled website"
    );
    assert_eq!(spec.get("lifecycle"), None);
    let explicit = run::<GarageBucket>(
        bucket(
            json!({"clusterRef": {"name": "garage"}, "website": {"enabled": true, "indexDocument": "home.html"}}),
        ),
        default_bucket,
    );
    assert_eq!(explicit["spec"]["website"]["indexDocument"], "home.html");
}

#[test]
fn def_gk_name_and_the_secret_template_fields() {
    let out = run::<GarageKey>(
        key(
            json!({"clusterRef": {"name": "garage"}, "secretTemplate": {"includeCredentialsFile": true}}),
        ),
        default_key,
    );
    let spec = &out["spec"];
    assert_eq!(spec["name"], "app-key");
    assert_eq!(
        spec["secretTemplate"],
        json!({
            "includeCredentialsFile": true,
            "name": "app-key",
            "type": "Opaque",
            "accessKeyIdKey": "access-key-id",
            "secretAccessKeyKey": "secret-access-key",
            "endpointKey": "endpoint",
            "hostKey": "host",
            "schemeKey": "scheme",
            "regionKey": "region",
            "bucketNameKey": "bucket",
            "credentialsFileKey": "credentials",
            "credentialsFileProfile": "default"
        })
    );
}

#[test]
fn def_gk_never_creates_a_template_and_keeps_explicit_values() {
    let out = run::<GarageKey>(
        key(json!({"clusterRef": {"name": "garage"}, "name": "Application Key"})),
        default_key,
    );
    assert_eq!(out["spec"]["name"], "Application Key");
    assert_eq!(out["spec"].get("secretTemplate"), None);
    let out = run::<GarageKey>(
        key(
            json!({"clusterRef": {"name": "garage"}, "secretTemplate": {"name": "creds", "accessKeyIdKey": "AWS_ACCESS_KEY_ID"}}),
        ),
        default_key,
    );
    assert_eq!(out["spec"]["secretTemplate"]["name"], "creds");
    assert_eq!(
        out["spec"]["secretTemplate"]["accessKeyIdKey"],
        "AWS_ACCESS_KEY_ID"
    );
}

#[test]
fn def_gk_rewrites_a_legacy_plain_string_bucket_ref_as_an_object() {
    let out = run::<GarageKey>(
        key(
            json!({"clusterRef": {"name": "garage"}, "name": "app-key", "bucketPermissions": [{"bucketRef": "my-bucket", "read": true}]}),
        ),
        default_key,
    );
    assert_eq!(
        out["spec"]["bucketPermissions"][0]["bucketRef"],
        json!({"name": "my-bucket"})
    );
}
