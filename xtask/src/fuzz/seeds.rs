//! Seeds of the reconciler's and the Admin API client's fuzz targets: the sample manifests
//! each decision reads, the objects and Garage answers of the unit tests' fixtures
//! (`decide/src/fixtures.rs`, the drain and bucket plan tests), and a few
//! byte patterns for the structured parts, which libFuzzer grows from.

use anyhow::{Result, bail};
use serde_json::{Value, json};

/// The seeds of `target` (one of the non-webhook targets), from the sample manifests
/// `samples`.
pub fn for_target(target: &str, samples: &[Value]) -> Result<Vec<Vec<u8>>> {
    Ok(match target {
        "admin_api_responses" => {
            let mut seeds: Vec<Vec<u8>> = garage_answers()
                .iter()
                .map(|a| serde_json::to_vec(a).unwrap_or_default())
                .collect();
            // The empty body (decoded as `null`) and text that is no JSON at all.
            seeds.push(Vec::new());
            seeds.push(b"<html>502 Bad Gateway</html>".to_vec());
            // A leading 0xFF makes the target build a document in the answers' shape.
            seeds.extend(structured(0xFF));
            seeds
        }
        "cluster_decide" => {
            let mut manifests = of_kind(samples, "GarageCluster");
            manifests.push(fixture_cluster(3));
            manifests.push(fixture_cluster(4));
            with_worlds(&manifests)
        }
        "node_decide" => {
            let mut manifests = of_kind(samples, "GarageNode");
            manifests.push(fixture_manual_node());
            with_worlds(&manifests)
        }
        // The first byte picks the machine: drain, rollout, teardown.
        "transactions" => (0..3).flat_map(structured).collect(),
        "resource_plans" => {
            let mut seeds = with_worlds(&of_kind(samples, "GarageBucket"));
            // A leading 0x01 makes the rest describe keys, buckets and grants.
            seeds.extend(structured(0x01));
            seeds
        }
        other => bail!("no seeds for fuzz target {other}"),
    })
}

/// Byte patterns behind a leading `first` byte: none, uniform, counting, scattered.
fn structured(first: u8) -> Vec<Vec<u8>> {
    let patterns: [Vec<u8>; 5] = [
        Vec::new(),
        vec![0x01; 48],
        vec![0xFF; 48],
        (0..=255).collect(),
        (0..128u16).map(|i| (i * 37 % 251) as u8).collect(),
    ];
    patterns
        .into_iter()
        .map(|p| std::iter::once(first).chain(p).collect())
        .collect()
}

/// The documents of `samples` of kind `kind`.
fn of_kind(samples: &[Value], kind: &str) -> Vec<Value> {
    samples
        .iter()
        .filter(|d| d["kind"] == kind)
        .cloned()
        .collect()
}

/// Each manifest alone (the converged world), and followed by a NUL byte and two world
/// patterns.
fn with_worlds(manifests: &[Value]) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for m in manifests {
        let Ok(json) = serde_json::to_vec(m) else {
            continue;
        };
        seeds.push(json.clone());
        for world in [
            vec![0x01; 32],
            (0..64u8).map(|i| i.wrapping_mul(29)).collect(),
        ] {
            let mut seed = json.clone();
            seed.push(0);
            seed.extend(world);
            seeds.push(seed);
        }
    }
    seeds
}

/// The decide tests' cluster: `garage` in `ns` with `replicas` Auto members on claims.
fn fixture_cluster(replicas: u32) -> Value {
    json!({
        "apiVersion": "garage.rajsingh.info/v1beta2",
        "kind": "GarageCluster",
        "metadata": {"name": "garage", "namespace": "ns", "uid": "uid-1", "generation": 1},
        "spec": {"storage": {
            "replicas": replicas,
            "metadata": {"size": "100Mi", "storageClassName": "local-sim"},
            "data": {"size": "1Gi", "storageClassName": "local-sim"},
        }},
    })
}

/// The decide tests' user-written storage GarageNode.
fn fixture_manual_node() -> Value {
    let volume = |size: &str| json!({"size": size, "storageClassName": "local-sim"});
    json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageNode",
        "metadata": {"name": "manual-a", "namespace": "ns", "uid": "uid-manual-a", "generation": 1},
        "spec": {
            "clusterRef": {"name": "garage"},
            "zone": "zone-m",
            "capacity": "2Gi",
            "storage": {"metadata": volume("100Mi"), "data": volume("2Gi")},
        },
    })
}

/// Garage answers as the unit tests build them: status, layout, history, health, a bucket,
/// a key, node-local envelopes and an error body.
fn garage_answers() -> Vec<Value> {
    let a = "aa00000000000000000000000000000000000000000000000000000000000000";
    let b = "bb00000000000000000000000000000000000000000000000000000000000000";
    let tags = json!(["cluster:garage/ns", "cluster-uid:uid-1", "tier:storage"]);
    let role =
        |id: &str| json!({"id": id, "zone": "default", "capacity": 1u64 << 30, "tags": tags});
    let layout = json!({
        "version": 1, "roles": [role(a), role(b)], "parameters": {"zoneRedundancy": "maximum"},
        "partitionSize": 0, "stagedRoleChanges": [{"id": b, "remove": true}],
        "stagedParameters": {"zoneRedundancy": {"atLeast": 2}},
    });
    let worker = |id: u64, name: &str, state: Value| {
        json!({"id": id, "name": name, "state": state, "errors": 0, "consecutiveErrors": 0,
            "queueLength": 0, "persistentErrors": 0, "freeform": []})
    };
    vec![
        json!({"layoutVersion": 1, "nodes": [
            {"id": a, "isUp": true, "draining": false, "addr": "198.18.0.10:3901",
             "role": {"zone": "default", "tags": tags, "capacity": 1u64 << 30}},
            {"id": b, "isUp": false, "draining": true, "lastSeenSecsAgo": 40},
        ]}),
        layout.clone(),
        json!({"message": ["applied"], "layout": layout}),
        json!({"message": ["ok"], "newLayout": layout}),
        json!({"error": "not enough zones"}),
        json!({"currentVersion": 3, "minAck": 2,
            "versions": [{"version": 3, "status": "Current", "storageNodes": 2, "gatewayNodes": 0},
                         {"version": 2, "status": "Draining", "storageNodes": 3, "gatewayNodes": 0}],
            "updateTrackers": {a: {"ack": 3, "sync": 2, "syncAck": 2}}}),
        json!({"status": "healthy", "knownNodes": 3, "connectedNodes": 3, "storageNodes": 3,
            "storageNodesUp": 3, "partitions": 256, "partitionsQuorum": 256, "partitionsAllOk": 256}),
        json!({"id": "b1", "created": "2026-01-01T00:00:00Z", "globalAliases": ["b"],
            "websiteAccess": true, "websiteConfig": {"indexDocument": "index.html", "errorDocument": "404.html",
                "routingRules": [{"Condition": {"KeyPrefixEquals": "old/"}, "Redirect": {"ReplaceKeyPrefixWith": "new/"}}]},
            "keys": [{"accessKeyId": "GK1", "name": "k", "permissions": {"read": true}, "bucketLocalAliases": []}],
            "objects": 0, "bytes": 0, "unfinishedUploads": 0, "unfinishedMultipartUploads": 0,
            "unfinishedMultipartUploadParts": 0, "unfinishedMultipartUploadBytes": 0,
            "quotas": {"maxSize": 1048576, "maxObjects": null},
            "corsRules": [{"AllowedOrigin": ["*"], "AllowedMethod": ["GET"]}],
            "lifecycleRules": [{"ID": "old", "Status": "Enabled", "Filter": {"Prefix": "logs/"},
                "Expiration": {"Days": 30}, "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 2}}]}),
        json!({"accessKeyId": "GK1", "name": "k", "expired": false, "secretAccessKey": "s3cr3t-secret-key",
            "permissions": {"createBucket": false},
            "buckets": [{"id": "b1", "globalAliases": ["b"], "localAliases": [], "permissions": {"read": true, "write": true}}]}),
        json!({"id": "tok", "name": "t", "expired": false, "scope": ["*"], "secretToken": "s3cr3t-admin-token"}),
        json!({"success": {a: [worker(3, "Block repair worker", json!("done")),
                               worker(1, "Block resync worker #1", json!({"throttled": {"durationSecs": 0.5}}))]},
               "error": {b: "Remote error: timeout"}}),
        json!({"success": {a: {"nodeId": a, "garageVersion": "v2.5.0", "rustVersion": "1.89", "dbEngine": "lmdb"}}, "error": {}}),
        json!({"success": {a: [{"blockHash": "00", "refcount": 1, "errorCount": 2, "lastTrySecsAgo": 5, "nextTryInSecs": 60}]}, "error": {}}),
        json!({"code": "NoSuchBucket", "message": "Bucket not found: b", "region": "garage", "path": "/v2/GetBucketInfo"}),
        json!([{"success": true}, {"success": false, "error": "connection refused"}]),
    ]
}
