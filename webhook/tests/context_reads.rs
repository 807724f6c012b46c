//! The server reads the API server's lists only for reviews whose rules read them
//! (`reads_context_lists`). Both sides are pinned here: a review the predicate exempts is judged
//! the same whatever the lists hold, so skipping the read cannot allow what a read would have
//! denied; and a review that needs the lists still fails closed when they cannot be read.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::core::v1::Node;
use serde_json::{Value, json};
use shared_types::garage_cluster::{v1beta1, v1beta2};
use shared_types::garage_node::GarageNode;
use webhook::admission::cluster::{
    reads_context_lists, reads_context_lists_v1beta1, validate_cluster, validate_cluster_v1beta1,
};
use webhook::admission::{Context, Review};
use webhook::cli::manifest;
use webhook::server::context_reader::{ContextSource, Needs, ReadError};
use webhook::server::dispatch::{self, Endpoint, Outcome, Settings};
use webhook::server::router::decode_review;

fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/upstream-samples")
}

/// Every sample object of `kind` written as `api_version`.
fn samples(api_version: &str, kind: &str) -> Vec<Value> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(samples_dir())
        .expect("samples directory")
        .map(|e| e.expect("directory entry").path())
        .collect();
    paths.sort();
    paths
        .iter()
        .flat_map(|p| manifest::load(p).expect("sample parses"))
        .filter(|d| d["apiVersion"] == api_version && d["kind"] == kind)
        .collect()
}

fn has_pools(object: &Value) -> bool {
    object["spec"]["storage"]["nodeLocalPools"]
        .as_array()
        .is_some_and(|p| !p.is_empty())
}

/// An API server that answers nothing: a review that reads a list is denied, one that reads
/// none is served without a call, as by the live reader.
#[derive(Default)]
struct Unreachable {
    reads: AtomicUsize,
}

impl ContextSource for Unreachable {
    async fn read(&self, needs: Needs, _namespace: Option<&str>) -> Result<Context, ReadError> {
        if needs == Needs::default() {
            return Ok(Context::default());
        }
        self.reads.fetch_add(1, Ordering::Relaxed);
        Err(ReadError::new("GarageClusters", "connection refused"))
    }

    async fn garage_cluster(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<v1beta2::GarageCluster>, ReadError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        Err(ReadError::new(
            format!("GarageCluster {namespace}/{name}"),
            "connection refused",
        ))
    }
}

fn admission_review(operation: &str, old: Option<&Value>, new: Option<&Value>) -> Vec<u8> {
    let subject = new.or(old).expect("an object");
    let (group, version) = subject["apiVersion"]
        .as_str()
        .and_then(|v| v.rsplit_once('/'))
        .expect("a grouped apiVersion");
    let kind = subject["kind"].as_str().expect("a kind");
    let resource = format!("{}s", kind.to_lowercase());
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "context-reads",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "name": subject["metadata"]["name"],
            "namespace": subject["metadata"]["namespace"].as_str().unwrap_or("default"),
            "operation": operation,
            "userInfo": {"username": "alice"},
            "object": new,
            "oldObject": old,
        }
    }))
    .expect("encodes")
}

async fn outcome(endpoint: Endpoint, body: &[u8], source: &Unreachable) -> Outcome {
    let request = decode_review(body).expect("an AdmissionReview");
    dispatch::review(endpoint, &request, source, &Settings::default())
        .await
        .outcome
}

#[tokio::test]
async fn garage_clusters_without_pools_are_judged_without_a_read() {
    let clusters = samples("garage.rajsingh.info/v1beta2", "GarageCluster");
    let without: Vec<&Value> = clusters.iter().filter(|c| !has_pools(c)).collect();
    assert!(without.len() >= 5, "the samples cover several shapes");
    for object in without {
        for (operation, old, new) in [
            ("CREATE", None, Some(object)),
            ("UPDATE", Some(object), Some(object)),
            ("DELETE", Some(object), None),
        ] {
            let source = Unreachable::default();
            let body = admission_review(operation, old, new);
            let got = outcome(Endpoint::ValidateClusterV1beta2, &body, &source).await;
            let name = &object["metadata"]["name"];
            assert_ne!(got, Outcome::Unavailable, "{operation} {name}");
            assert_eq!(
                source.reads.load(Ordering::Relaxed),
                0,
                "{operation} {name}"
            );
        }
    }
}

#[tokio::test]
async fn v1beta1_garage_clusters_are_judged_without_a_read() {
    for object in samples("garage.rajsingh.info/v1beta1", "GarageCluster") {
        for (operation, old, new) in [
            ("CREATE", None, Some(&object)),
            ("UPDATE", Some(&object), Some(&object)),
            ("DELETE", Some(&object), None),
        ] {
            let source = Unreachable::default();
            let body = admission_review(operation, old, new);
            let got = outcome(Endpoint::ValidateClusterV1beta1, &body, &source).await;
            assert_ne!(got, Outcome::Unavailable, "{operation}");
            assert_eq!(source.reads.load(Ordering::Relaxed), 0, "{operation}");
        }
    }
}

#[tokio::test]
async fn reviews_that_read_the_lists_still_fail_closed() {
    let pools: Vec<Value> = samples("garage.rajsingh.info/v1beta2", "GarageCluster")
        .into_iter()
        .filter(has_pools)
        .collect();
    assert!(!pools.is_empty(), "a sample declares node-local pools");
    for object in &pools {
        let mut before = object.clone();
        before["spec"]["storage"]["nodeLocalPools"][0]["capacity"] = json!("1Gi");
        for (operation, old) in [("CREATE", None), ("UPDATE", Some(&before))] {
            let source = Unreachable::default();
            let body = admission_review(operation, old, Some(object));
            let got = outcome(Endpoint::ValidateClusterV1beta2, &body, &source).await;
            assert_eq!(got, Outcome::Unavailable, "{operation}");
            assert_eq!(source.reads.load(Ordering::Relaxed), 1, "{operation}");
        }
    }
    for node in samples("garage.rajsingh.info/v1beta1", "GarageNode") {
        let source = Unreachable::default();
        let body = admission_review("CREATE", None, Some(&node));
        let got = outcome(Endpoint::ValidateNode, &body, &source).await;
        assert_eq!(got, Outcome::Unavailable);
    }
}

/// Lists that would make the list-reading rules object: every sample cluster again under
/// another name (so every HostPath overlaps), Manual GarageNodes for every sample cluster and
/// many Nodes carrying every label the samples select on.
fn crowded() -> Context {
    let mut ctx = Context::default();
    let mut labels = serde_json::Map::new();
    for cluster in samples("garage.rajsingh.info/v1beta2", "GarageCluster") {
        for pool in cluster["spec"]["storage"]["nodeLocalPools"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for (key, value) in pool["selector"]["matchLabels"]
                .as_object()
                .into_iter()
                .flatten()
            {
                labels.insert(key.clone(), value.clone());
            }
        }
        let mut twin = cluster.clone();
        twin["metadata"]["name"] = json!("twin");
        ctx.garage_clusters
            .push(serde_json::from_value(twin).expect("a v1beta2 GarageCluster"));
        for i in 0..4 {
            let node: GarageNode = serde_json::from_value(json!({
                "apiVersion": "garage.rajsingh.info/v1beta1",
                "kind": "GarageNode",
                "metadata": {
                    "name": format!("manual-{i}"),
                    "namespace": cluster["metadata"]["namespace"].as_str().unwrap_or("default"),
                },
                "spec": {
                    "clusterRef": {"name": cluster["metadata"]["name"]},
                    "zone": "z",
                    "capacity": "1Ti",
                },
            }))
            .expect("a GarageNode");
            ctx.garage_nodes.push(node);
        }
    }
    for i in 0..300 {
        let node: Node = serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": format!("node-{i}"), "labels": labels},
        }))
        .expect("a Node");
        ctx.nodes.push(node);
    }
    ctx
}

#[test]
fn exempted_verdicts_do_not_depend_on_the_lists() {
    let crowded = crowded();
    let empty = Context::default();
    let mut checked = 0;
    for value in samples("garage.rajsingh.info/v1beta2", "GarageCluster") {
        let object: v1beta2::GarageCluster =
            serde_json::from_value(value).expect("a v1beta2 GarageCluster");
        // A metadata-only write, as the reconciler's finalizer and annotation updates are.
        let mut annotated = object.clone();
        annotated
            .metadata
            .finalizers
            .get_or_insert_default()
            .push("garage.rajsingh.info/finalizer".into());
        annotated
            .metadata
            .labels
            .get_or_insert_default()
            .insert("team".into(), "storage".into());
        for review in [
            Review::create(&object),
            Review::update(&object, &object),
            Review::update(&object, &annotated),
            Review::delete(&object),
        ] {
            if reads_context_lists(&review) {
                continue;
            }
            let operation = review.operation;
            let copy = Review { ..review };
            assert_eq!(
                validate_cluster(review, &empty),
                validate_cluster(copy, &crowded),
                "{operation:?} of {:?}",
                object.metadata.name
            );
            checked += 1;
        }
    }
    for value in samples("garage.rajsingh.info/v1beta1", "GarageCluster") {
        let object: v1beta1::GarageCluster =
            serde_json::from_value(value).expect("a v1beta1 GarageCluster");
        for review in [
            Review::create(&object),
            Review::update(&object, &object),
            Review::delete(&object),
        ] {
            assert!(!reads_context_lists_v1beta1(&review));
            let copy = Review { ..review };
            assert_eq!(
                validate_cluster_v1beta1(review, &empty),
                validate_cluster_v1beta1(copy, &crowded)
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked} reviews compared");
}

#[test]
fn pools_make_the_rules_read_the_lists() {
    let crowded = crowded();
    for value in samples("garage.rajsingh.info/v1beta2", "GarageCluster")
        .into_iter()
        .filter(has_pools)
    {
        let object: v1beta2::GarageCluster =
            serde_json::from_value(value).expect("a v1beta2 GarageCluster");
        assert!(reads_context_lists(&Review::create(&object)));
        assert!(!reads_context_lists(&Review::update(&object, &object)));
        assert!(!reads_context_lists(&Review::delete(&object)));
        // Any spec change reads them, even one the pool rules would not look at.
        let mut changed = object.clone();
        changed.spec.image = Some("dxflrs/garage:v2.3.1".into());
        assert!(reads_context_lists(&Review::update(&object, &changed)));
        // The crowded lists are what the pool rules judge: the twin's HostPaths overlap.
        assert!(
            !validate_cluster(Review::create(&object), &crowded).allowed(),
            "the list-reading rules see the crowded lists"
        );
    }
}

async fn answer(
    endpoint: Endpoint,
    body: &[u8],
    source: &Unreachable,
) -> (Outcome, String, Vec<String>) {
    let request = decode_review(body).expect("an AdmissionReview");
    let answer = dispatch::review(endpoint, &request, source, &Settings::default()).await;
    (
        answer.outcome,
        answer.response.result.message,
        answer.response.warnings.unwrap_or_default(),
    )
}

/// True when a sample references a namespace other than its own.
fn crosses_namespaces(object: &Value) -> bool {
    let own = object["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default");
    let mut namespaces = vec![&object["spec"]["clusterRef"]["namespace"]];
    for list in ["keyPermissions", "bucketPermissions"] {
        for entry in object["spec"][list].as_array().into_iter().flatten() {
            namespaces.push(&entry["keyRef"]["namespace"]);
            namespaces.push(&entry["bucketRef"]["namespace"]);
        }
    }
    namespaces
        .into_iter()
        .filter_map(Value::as_str)
        .any(|ns| !ns.is_empty() && ns != own)
}

#[tokio::test]
async fn buckets_keys_tokens_and_grants_of_one_namespace_are_judged_without_a_read() {
    let mut checked = 0;
    for (kind, endpoint) in [
        ("GarageBucket", Endpoint::ValidateBucket),
        ("GarageKey", Endpoint::ValidateKey),
        ("GarageAdminToken", Endpoint::ValidateAdminToken),
        ("GarageReferenceGrant", Endpoint::ValidateReferenceGrant),
    ] {
        for object in samples("garage.rajsingh.info/v1beta1", kind) {
            if crosses_namespaces(&object) {
                continue;
            }
            let mut operations = vec![
                ("CREATE", None, Some(&object)),
                ("UPDATE", Some(&object), Some(&object)),
            ];
            if kind != "GarageAdminToken" {
                operations.push(("DELETE", Some(&object), None));
            }
            for (operation, old, new) in operations {
                let source = Unreachable::default();
                let body = admission_review(operation, old, new);
                let (got, message, _) = answer(endpoint, &body, &source).await;
                let name = &object["metadata"]["name"];
                assert_eq!(
                    got,
                    Outcome::Allowed,
                    "{operation} {kind} {name}: {message}"
                );
                assert_eq!(
                    source.reads.load(Ordering::Relaxed),
                    0,
                    "{operation} {kind} {name}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "{checked} reviews");
}

#[tokio::test]
async fn cross_namespace_references_fail_closed_when_grants_cannot_be_read() {
    let remote: Vec<Value> = samples("garage.rajsingh.info/v1beta1", "GarageBucket")
        .into_iter()
        .filter(crosses_namespaces)
        .collect();
    assert!(
        !remote.is_empty(),
        "a sample bucket references another namespace"
    );
    for object in &remote {
        let source = Unreachable::default();
        let body = admission_review("CREATE", None, Some(object));
        let (got, message, _) = answer(Endpoint::ValidateBucket, &body, &source).await;
        assert_eq!(got, Outcome::Unavailable, "{message}");
        assert!(
            message.contains("cannot prove the cross-namespace references"),
            "{message}"
        );
        assert!(message.contains("fail closed"), "{message}");
        // A finalizer-only update of the object as stored (defaulted) reads nothing.
        let mut stored = object.clone();
        stored["spec"]["globalAlias"] = object["metadata"]["name"].clone();
        let mut cleaned = stored.clone();
        cleaned["metadata"]["finalizers"] = json!([]);
        let source = Unreachable::default();
        let body = admission_review("UPDATE", Some(&stored), Some(&cleaned));
        let (got, message, _) = answer(Endpoint::ValidateBucket, &body, &source).await;
        assert_ne!(got, Outcome::Unavailable, "{message}");
        assert_eq!(source.reads.load(Ordering::Relaxed), 0);
    }
}

#[tokio::test]
async fn an_admin_token_deletion_fails_closed_when_its_cluster_cannot_be_read() {
    let tokens = samples("garage.rajsingh.info/v1beta1", "GarageAdminToken");
    assert!(!tokens.is_empty());
    for token in &tokens {
        let source = Unreachable::default();
        let body = admission_review("DELETE", Some(token), None);
        let (got, message, _) = answer(Endpoint::ValidateAdminToken, &body, &source).await;
        assert_eq!(got, Outcome::Unavailable, "{message}");
        assert!(message.contains("[AT-D2]"), "{message}");
        assert!(
            message.contains("cannot prove the static bootstrap Secret is unused"),
            "{message}"
        );
        assert_eq!(source.reads.load(Ordering::Relaxed), 1);
    }
}
