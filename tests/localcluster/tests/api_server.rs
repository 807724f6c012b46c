//! The generated CRDs against a real kube-apiserver: they install, the
//! VolumeAttributesClass markers and CEL rules are enforced by the server, and
//! the Go operator's sample manifests are accepted.

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client};
use localcluster::{LocalCluster, Options};
use serde_json::{Value, json};

const GROUP: &str = "garage.rajsingh.info";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

async fn install_crds(client: &Client) -> Vec<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut names = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(repo().join("crds"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for file in files {
        let crd: CustomResourceDefinition =
            serde_saphyr::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let name = crd.metadata.name.clone().unwrap();
        crds.patch(
            &name,
            &PatchParams::apply("api-server-test").force(),
            &Patch::Apply(&crd),
        )
        .await
        .unwrap_or_else(|e| panic!("{} does not install: {e}", file.display()));
        names.push(name);
    }
    for name in &names {
        wait(&format!("CRD {name} Established"), || async {
            crds.get(name)
                .await
                .ok()
                .and_then(|c| c.status)
                .is_some_and(|s| {
                    s.conditions
                        .unwrap_or_default()
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        })
        .await;
    }
    names
}

async fn wait<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn api(client: &Client, version: &str, kind: &str, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, version, kind));
    Api::namespaced_with(client.clone(), namespace, &resource)
}

async fn ensure_namespace(client: &Client, name: &str) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    namespaces
        .patch(
            name,
            &PatchParams::apply("api-server-test"),
            &Patch::Apply(&ns),
        )
        .await
        .unwrap();
}

/// Server-side dry-run create; Ok or the API server's message.
async fn dry_run(client: &Client, object: &Value) -> Result<(), String> {
    let (group_version, kind) = (
        object["apiVersion"].as_str().unwrap(),
        object["kind"].as_str().unwrap(),
    );
    let version = group_version.rsplit('/').next().unwrap();
    let namespace = object["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default");
    let typed: DynamicObject = serde_json::from_value(object.clone()).unwrap();
    let params = PostParams {
        dry_run: true,
        field_manager: None,
    };
    api(client, version, kind, namespace)
        .create(&params, &typed)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn cluster_with_data(data: Value) -> Value {
    json!({
        "apiVersion": "garage.rajsingh.info/v1beta2",
        "kind": "GarageCluster",
        "metadata": {"name": "vac", "namespace": "vac"},
        "spec": {
            "replication": {"factor": 3},
            "storage": {"replicas": 3, "metadata": {"size": "1Gi"}, "data": data}
        }
    })
}

fn node_with_data(data: Value) -> Value {
    json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageNode",
        "metadata": {"name": "vac-node", "namespace": "vac"},
        "spec": {
            "clusterRef": {"name": "vac"},
            "zone": "a",
            "capacity": "10Gi",
            "storage": {"data": data}
        }
    })
}

fn assert_rejected(result: Result<(), String>, case: &str, expected: &[&str]) {
    let message = match result {
        Ok(()) => panic!("{case}: accepted, expected a rejection"),
        Err(message) => message,
    };
    for part in expected {
        assert!(
            message.contains(part),
            "{case}: message {message:?} lacks {part:?}"
        );
    }
}

async fn volume_attributes_class_rules(client: &Client) {
    ensure_namespace(client, "vac").await;
    for class in ["fast-pool-3", "a.b-c"] {
        let object = cluster_with_data(json!({"size": "10Gi", "volumeAttributesClassName": class}));
        dry_run(client, &object)
            .await
            .unwrap_or_else(|e| panic!("class {class:?} rejected: {e}"));
    }
    let paths = json!({"paths": [{"path": "/data/a", "volume": {"size": "10Gi", "volumeAttributesClassName": "gold-tier"}}]});
    dry_run(client, &cluster_with_data(paths))
        .await
        .expect("a path volume with a class is accepted");

    let empty = cluster_with_data(json!({"size": "10Gi", "volumeAttributesClassName": ""}));
    assert_rejected(
        dry_run(client, &empty).await,
        "empty class",
        &["volumeAttributesClassName", "at least 1"],
    );
    let upper = cluster_with_data(json!({"size": "10Gi", "volumeAttributesClassName": "Gold"}));
    assert_rejected(
        dry_run(client, &upper).await,
        "Gold",
        &["volumeAttributesClassName", "should match"],
    );
    let empty_dir =
        cluster_with_data(json!({"type": "EmptyDir", "volumeAttributesClassName": "fast"}));
    assert_rejected(
        dry_run(client, &empty_dir).await,
        "EmptyDir with a class",
        &["volumeAttributesClassName is only valid for PersistentVolumeClaim volumes"],
    );

    let node_ok = node_with_data(json!({"size": "10Gi", "volumeAttributesClassName": "fast"}));
    dry_run(client, &node_ok)
        .await
        .expect("a GarageNode PVC volume with a class is accepted");
    let node_claim =
        node_with_data(json!({"existingClaim": "mine", "volumeAttributesClassName": "fast"}));
    assert_rejected(
        dry_run(client, &node_claim).await,
        "existingClaim with a class",
        &["cannot be combined with existingClaim"],
    );
    let node_empty_claim =
        node_with_data(json!({"existingClaim": "", "volumeAttributesClassName": "fast"}));
    dry_run(client, &node_empty_claim)
        .await
        .expect("an empty existingClaim counts as unset");
    let node_empty_dir =
        node_with_data(json!({"type": "EmptyDir", "volumeAttributesClassName": "fast"}));
    assert_rejected(
        dry_run(client, &node_empty_dir).await,
        "GarageNode EmptyDir with a class",
        &["only valid for PersistentVolumeClaim volumes"],
    );
    let node_paths = json!({"dataPaths": [{"path": "/d/0", "size": "5Gi", "existingClaim": "x", "volumeAttributesClassName": "fast"}]});
    let mut node_paths_object = node_with_data(json!(null));
    node_paths_object["spec"]["storage"] = node_paths;
    assert_rejected(
        dry_run(client, &node_paths_object).await,
        "dataPaths entry with existingClaim and a class",
        &["cannot be combined with existingClaim"],
    );
}

/// Dry-run creates every sample of our kinds. v1beta1 GarageClusters need the
/// conversion webhook to reach the storage version, so until it runs they
/// must fail with a conversion error; they are listed as waiting.
async fn samples_are_accepted(client: &Client) {
    let dir = repo().join("tests/fixtures/upstream-samples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let (mut accepted, mut waiting) = (Vec::new(), Vec::new());
    for file in files {
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(&std::fs::read_to_string(&file).unwrap()).unwrap();
        for (index, doc) in docs.into_iter().enumerate() {
            let ours = doc["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with(GROUP));
            if !ours {
                continue;
            }
            let name = format!("{}#{index}", file.file_name().unwrap().to_string_lossy());
            ensure_namespace(
                client,
                doc["metadata"]["namespace"].as_str().unwrap_or("default"),
            )
            .await;
            let result = dry_run(client, &doc).await;
            let needs_conversion = doc["apiVersion"] == "garage.rajsingh.info/v1beta1"
                && doc["kind"] == "GarageCluster";
            match (result, needs_conversion) {
                (Ok(()), false) => accepted.push(name),
                (Err(e), true) if e.contains("conversion webhook") => waiting.push(name),
                (Ok(()), true) => {
                    panic!("{name}: a v1beta1 GarageCluster was stored without conversion")
                }
                (Err(e), _) => panic!("{name} rejected: {e}"),
            }
        }
    }
    println!(
        "samples accepted by server-side dry-run: {}",
        accepted.len()
    );
    println!("samples waiting for the conversion webhook: {waiting:?}");
    assert!(
        accepted.len() >= 30,
        "only {} samples were checked",
        accepted.len()
    );
}

#[tokio::test]
async fn crds_install_and_the_api_server_enforces_their_rules() {
    let cluster = LocalCluster::start(Options {
        name: "api-server-tests".into(),
        ..Options::default()
    })
    .await
    .unwrap_or_else(|e| panic!("local cluster: {e}"));
    println!(
        "control plane up in {:.1}s",
        cluster.started_in().as_secs_f64()
    );
    let client = cluster.client().await.unwrap();

    let names = install_crds(&client).await;
    assert_eq!(names.len(), 6, "one CRD per kind installed and Established");
    volume_attributes_class_rules(&client).await;
    samples_are_accepted(&client).await;
}
