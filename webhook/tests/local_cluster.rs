//! The webhook server against a real kube-apiserver (tests/localcluster): admission and
//! conversion through the API server, self-managed certificates with caBundle injection, a
//! serving-certificate rotation under load, and the certificate Secret deleted under load.
//!
//! The local cluster has no kubelet, so the server runs in this process on 127.0.0.1 and the
//! webhook configurations point at it by URL; the caBundle is written by the server itself
//! (self-managed mode), exactly as in a real install.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "local_cluster/deleted_secret.rs"]
mod deleted_secret;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use certs::{InstallLabel, Lifetimes, Mode, SelfManagedConfig};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{Namespace, Node};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client};
use localcluster::{LocalCluster, Options};
use serde_json::{Value, json};
use shared_types::keys::label::LABEL_APP_INSTANCE;
use webhook::admission::shared::selector;
use webhook::server::context_reader::{ContextSource, LiveReader, Needs};
use webhook::server::dispatch::{Endpoint, Settings};
use webhook::server::limits::Limits;
use webhook::server::{Running, ServeConfig, start};

const GROUP: &str = "garage.rajsingh.info";
const INSTALL: &str = "webhook-test";
const CRD: &str = "garageclusters.garage.rajsingh.info";
const MANAGER: &str = "webhook-local-cluster-test";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

async fn wait<F, Fut>(what: &str, timeout: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn apply<K>(api: &Api<K>, name: &str, object: &Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .unwrap_or_else(|e| panic!("applying {name}: {e}"));
}

async fn namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    apply(
        &api,
        name,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    )
    .await;
}

fn label() -> Value {
    json!({ LABEL_APP_INSTANCE: INSTALL })
}

/// Every CRD from crds/, the GarageCluster one labelled as this install's and pointed at the
/// in-process server by URL.
async fn install_crds(client: &Client, base: &str) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut files: Vec<_> = std::fs::read_dir(repo().join("crds"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    for file in files {
        let mut crd: Value =
            serde_saphyr::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let name = crd["metadata"]["name"].as_str().unwrap().to_owned();
        if name == CRD {
            crd["metadata"]["labels"] = label();
            crd["spec"]["conversion"]["webhook"]["clientConfig"] =
                json!({"url": format!("{base}/convert")});
        }
        apply(&api, &name, &crd).await;
        wait(
            &format!("{name} Established"),
            Duration::from_secs(60),
            || async {
                api.get(&name)
                    .await
                    .ok()
                    .and_then(|c| c.status)
                    .is_some_and(|s| {
                        s.conditions
                            .unwrap_or_default()
                            .iter()
                            .any(|c| c.type_ == "Established" && c.status == "True")
                    })
            },
        )
        .await;
    }
}

fn hook(
    name: &str,
    base: &str,
    endpoint: Endpoint,
    versions: &[&str],
    resource: &str,
    operations: &[&str],
) -> Value {
    json!({
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
        "clientConfig": {"url": format!("{base}{}", endpoint.path())},
        "rules": [{"apiGroups": [GROUP], "apiVersions": versions, "resources": [resource], "operations": operations}]
    })
}

async fn install_webhooks(client: &Client, base: &str) {
    let cu = ["CREATE", "UPDATE"];
    let cud = ["CREATE", "UPDATE", "DELETE"];
    let mutating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "garage-webhook-test-mutating", "labels": label()},
        "webhooks": [
            hook("mgaragecluster.kb.io", base, Endpoint::MutateClusterV1beta2, &["v1beta2"], "garageclusters", &cu),
            hook("mgarageclusterv1beta1.kb.io", base, Endpoint::MutateClusterV1beta1, &["v1beta1"], "garageclusters", &cu),
            hook("mgaragenode.kb.io", base, Endpoint::MutateNode, &["v1beta1"], "garagenodes", &cu),
            hook("mgaragebucket.kb.io", base, Endpoint::MutateBucket, &["v1beta1"], "garagebuckets", &cu),
            hook("mgaragekey.kb.io", base, Endpoint::MutateKey, &["v1beta1"], "garagekeys", &cu),
        ]
    });
    let validating = json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "garage-webhook-test-validating", "labels": label()},
        "webhooks": [
            hook("vgaragecluster.kb.io", base, Endpoint::ValidateClusterV1beta2, &["v1beta2"], "garageclusters", &cud),
            hook("vgarageclusterv1beta1.kb.io", base, Endpoint::ValidateClusterV1beta1, &["v1beta1"], "garageclusters", &cud),
            hook("vgarageclusterscale.kb.io", base, Endpoint::ValidateClusterScale, &["v1beta1", "v1beta2"], "garageclusters/scale", &["UPDATE"]),
            hook("vgaragenode.kb.io", base, Endpoint::ValidateNode, &["v1beta1"], "garagenodes", &cud),
            hook("vgaragebucket.kb.io", base, Endpoint::ValidateBucket, &["v1beta1"], "garagebuckets", &cu),
            hook("vgaragekey.kb.io", base, Endpoint::ValidateKey, &["v1beta1"], "garagekeys", &cu),
            hook("vgarageadmintoken.kb.io", base, Endpoint::ValidateAdminToken, &["v1beta1"], "garageadmintokens", &cud),
            hook("vgaragereferencegrant.kb.io", base, Endpoint::ValidateReferenceGrant, &["v1beta1"], "garagereferencegrants", &cu),
        ]
    });
    let m: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    apply(&m, "garage-webhook-test-mutating", &mutating).await;
    let v: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    apply(&v, "garage-webhook-test-validating", &validating).await;
}

async fn bundles_injected(client: &Client) -> bool {
    let m: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let v: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let c: Api<CustomResourceDefinition> = Api::all(client.clone());
    let (Ok(m), Ok(v), Ok(c)) = (
        m.get("garage-webhook-test-mutating").await,
        v.get("garage-webhook-test-validating").await,
        c.get(CRD).await,
    ) else {
        return false;
    };
    let hooks_ok = m
        .webhooks
        .iter()
        .flatten()
        .all(|w| w.client_config.ca_bundle.is_some())
        && v.webhooks
            .iter()
            .flatten()
            .all(|w| w.client_config.ca_bundle.is_some());
    let crd_ok = c
        .spec
        .conversion
        .and_then(|c| c.webhook)
        .and_then(|w| w.client_config)
        .is_some_and(|cc| cc.ca_bundle.is_some());
    hooks_ok && crd_ok
}

/// The caBundle of the first validating webhook of the test install.
async fn first_ca_bundle(client: &Client) -> Vec<u8> {
    let v: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let hooks = v.get("garage-webhook-test-validating").await.unwrap();
    let bundle = hooks.webhooks.unwrap()[0].client_config.ca_bundle.clone();
    bundle.unwrap().0
}

fn api(client: &Client, version: &str, kind: &str, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(GROUP, version, kind));
    Api::namespaced_with(client.clone(), namespace, &resource)
}

fn cluster(name: &str) -> Value {
    json!({
        "apiVersion": "garage.rajsingh.info/v1beta2",
        "kind": "GarageCluster",
        "metadata": {"name": name, "namespace": "garage"},
        "spec": {
            "replication": {"factor": 3, "consistencyMode": "consistent"},
            "storage": {"replicas": 3, "metadata": {"size": "1Gi"}, "data": {"size": "10Gi"}},
            "gateway": {"replicas": 2}
        }
    })
}

async fn create(client: &Client, object: &Value, dry_run: bool) -> Result<DynamicObject, String> {
    let version = object["apiVersion"]
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();
    let kind = object["kind"].as_str().unwrap();
    let namespace = object["metadata"]["namespace"].as_str().unwrap();
    let typed: DynamicObject = serde_json::from_value(object.clone()).unwrap();
    let params = PostParams {
        dry_run,
        field_manager: None,
    };
    api(client, version, kind, namespace)
        .create(&params, &typed)
        .await
        .map_err(|e| e.to_string())
}

async fn start_server(client: &Client) -> Running {
    let config = ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        certificates: Mode::SelfManaged(SelfManagedConfig {
            secret_namespace: "garage-operator".into(),
            secret_name: "garage-webhook-cert".into(),
            service_name: "garage-operator-webhook".into(),
            service_namespace: "garage-operator".into(),
            extra_sans: vec!["127.0.0.1".into()],
            // A short serving lifetime so that rotations happen while the test runs.
            lifetimes: Lifetimes {
                ca: Duration::from_secs(24 * 3600),
                serving: Duration::from_secs(15),
                ..Lifetimes::default()
            },
            install_label: InstallLabel::parse(&format!("{LABEL_APP_INSTANCE}={INSTALL}")).unwrap(),
            check_interval: Duration::from_secs(5),
            bundle_propagation: Duration::from_secs(2),
        }),
        settings: Settings {
            controller_username: "system:serviceaccount:garage-operator:garage-reconciler".into(),
            ..Settings::default()
        },
        limits: Limits::default(),
    };
    start(config, client.clone()).await.unwrap()
}

/// The upstream node-local pool sample (first document), renamed and moved.
fn pooled_cluster(namespace: &str, name: &str, root: &str, pool_label: &str) -> Value {
    let text = std::fs::read_to_string(repo().join(
        "tests/fixtures/upstream-samples/garage_v1beta2_garagecluster_node_local_pools.yaml",
    ))
    .unwrap();
    let mut c: Value = serde_saphyr::from_multiple(&text)
        .unwrap()
        .into_iter()
        .next()
        .unwrap();
    c["metadata"] = json!({"name": name, "namespace": namespace});
    let pool = &mut c["spec"]["storage"]["nodeLocalPools"][0];
    pool["metadata"]["hostPath"] = json!(format!("{root}/metadata"));
    pool["data"]["hostPath"] = json!(format!("{root}/data"));
    pool["selector"]["matchLabels"]["storage.garage.example/pool"] = json!(pool_label);
    c
}

/// The Node reads narrowed by label-selector queries return exactly the Nodes
/// `selector::matches` accepts, operator by operator, so the limit rules count what they would
/// count over every Node.
async fn selector_queries_match_like_the_rules(client: &Client, reader: &LiveReader) {
    let nodes: Api<Node> = Api::all(client.clone());
    let label_sets = [
        json!({"pool": "a", "zone": "x"}),
        json!({"pool": "a", "zone": "y", "example.com/disk": "nvme"}),
        json!({"pool": "b", "zone": "z", "tier": "edge"}),
        json!({"zone": "x", "cordoned": "true"}),
        json!({}),
    ];
    for (i, labels) in label_sets.iter().enumerate() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": format!("sel-{i}"), "labels": labels}
        }))
        .unwrap();
        nodes.create(&PostParams::default(), &node).await.unwrap();
    }
    let selectors = [
        json!({"matchLabels": {"pool": "a"}}),
        json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["x", "z"]}]}),
        json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["edge"]}]}),
        json!({"matchExpressions": [{"key": "example.com/disk", "operator": "Exists"}]}),
        json!({"matchExpressions": [{"key": "cordoned", "operator": "DoesNotExist"}],
               "matchLabels": {"zone": "x"}}),
        json!({"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["a"]},
                                    {"key": "zone", "operator": "Exists"}]}),
    ];
    let all = reader
        .read(
            Needs {
                nodes: true,
                ..Needs::default()
            },
            None,
        )
        .await
        .unwrap()
        .nodes;
    for selector in &selectors {
        let selector: LabelSelector = serde_json::from_value(selector.clone()).unwrap();
        let query = selector::query(&selector).unwrap();
        let names = |nodes: Vec<Node>| -> Vec<String> {
            let mut names: Vec<String> = nodes
                .into_iter()
                .filter_map(|n| n.metadata.name)
                .filter(|n| n.starts_with("sel-"))
                .collect();
            names.sort();
            names
        };
        let expected = names(
            all.iter()
                .filter(|n| {
                    selector::matches(&selector, &n.metadata.labels.clone().unwrap_or_default())
                })
                .cloned()
                .collect(),
        );
        let needs = Needs {
            nodes: true,
            node_queries: Some(vec![query.clone()]),
            ..Needs::default()
        };
        let got = names(reader.read(needs, None).await.unwrap().nodes);
        assert_eq!(got, expected, "query {query:?}");
        assert!(!expected.is_empty(), "query {query:?} selects no test Node");
    }
    for i in 0..label_sets.len() {
        nodes
            .delete(&format!("sel-{i}"), &Default::default())
            .await
            .unwrap();
    }
}

/// The rules that read other objects get them live from the API server: a HostPath that
/// overlaps another namespace's pool is refused through the API, and Nodes are read as
/// metadata only (their labels, none of their status).
async fn node_local_pools_read_live(client: &Client) {
    let first = pooled_cluster("garage", "pools-a", "/var/lib/garage/a", "a");
    create(client, &first, false)
        .await
        .unwrap_or_else(|e| panic!("the node-local pool cluster is refused: {e}"));
    let mut overlapping = pooled_cluster("garage-operator", "pools-b", "/var/lib/garage/b", "b");
    overlapping["spec"]["storage"]["nodeLocalPools"][0]["data"]["hostPath"] =
        json!("/var/lib/garage/a/data/nested");
    let message = create(client, &overlapping, true)
        .await
        .expect_err("a HostPath inside another namespace's pool was accepted");
    assert!(message.contains("[GC-NLP-OVERLAP]"), "{message}");
    // Another namespace's cluster and paths are not named to the requester.
    assert!(!message.contains("pools-a"), "{message}");
    assert!(message.contains("another namespace"), "{message}");
    let distinct = pooled_cluster("garage-operator", "pools-c", "/var/lib/garage/c", "c");
    create(client, &distinct, true)
        .await
        .unwrap_or_else(|e| panic!("a pool with distinct HostPaths is refused: {e}"));

    let nodes: Api<Node> = Api::all(client.clone());
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": "worker-a", "labels": {"storage.garage.example/pool": "a"}}
    }))
    .unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    let status =
        json!({"status": {"images": [{"names": ["registry.example/big:1"], "sizeBytes": 1}]}});
    nodes
        .patch_status("worker-a", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
    let needs = Needs {
        nodes: true,
        garage_clusters: true,
        ..Needs::default()
    };
    // One slot: reads queue for it rather than fail.
    let reader = LiveReader::with_concurrency(client.clone(), 1);
    let (a, b) = tokio::join!(
        reader.read(needs.clone(), None),
        reader.read(needs.clone(), None)
    );
    for context in [a.unwrap(), b.unwrap()] {
        let worker = context
            .nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some("worker-a"))
            .expect("the Node is missing from the live read");
        assert_eq!(
            worker.metadata.labels.as_ref().unwrap()["storage.garage.example/pool"],
            "a"
        );
        assert!(worker.status.is_none(), "the Node's status was read");
        assert!(
            context
                .garage_clusters
                .iter()
                .any(|c| c.metadata.name.as_deref() == Some("pools-a"))
        );
    }
    nodes.delete("worker-a", &Default::default()).await.unwrap();
    selector_queries_match_like_the_rules(client, &reader).await;
    api(client, "v1beta2", "GarageCluster", "garage")
        .delete("pools-a", &Default::default())
        .await
        .unwrap();
}

/// GarageBucket, GarageKey and GarageAdminToken admission through the API server: the grants
/// of the referenced namespace are listed and a selector grant's Namespace labels read live,
/// the defaulting patch lands, and a token's deletion reads its cluster live.
async fn buckets_keys_and_tokens_through_the_api(client: &Client) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let tenant = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "tenant-b", "labels": {"garage.example.com/tenant": "b"}}});
    apply(&namespaces, "tenant-b", &tenant).await;
    let bucket = json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageBucket",
        "metadata": {"name": "tenant-data", "namespace": "tenant-b"},
        "spec": {"clusterRef": {"name": "shared", "namespace": "garage"}, "quotas": {"maxSize": "5Gi"}}
    });
    let message = create(client, &bucket, true)
        .await
        .expect_err("a cross-namespace bucket without a grant was accepted");
    assert!(message.contains("[GB-X1]"), "{message}");
    let grant = json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageReferenceGrant",
        "metadata": {"name": "tenants", "namespace": "garage"},
        "spec": {
            "from": [{"kind": "GarageBucket", "namespaceSelector": {"matchLabels": {"garage.example.com/tenant": "b"}}}],
            "to": [{"kind": "GarageCluster", "name": "shared"}]
        }
    });
    create(client, &grant, false)
        .await
        .unwrap_or_else(|e| panic!("the selector grant is refused: {e}"));
    let admitted = create(client, &bucket, true)
        .await
        .unwrap_or_else(|e| panic!("the granted bucket is refused: {e}"));
    assert_eq!(
        admitted.data["spec"]["globalAlias"], "tenant-data",
        "defaulted"
    );

    let key = json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageKey",
        "metadata": {"name": "imported", "namespace": "garage"},
        "spec": {"clusterRef": {"name": "shared"}, "importKey": {}}
    });
    let message = create(client, &key, true)
        .await
        .expect_err("an empty importKey was accepted");
    assert!(message.contains("[GK-IK]"), "{message}");

    let mut consumer = cluster("token-consumer");
    consumer["spec"]["admin"] =
        json!({"adminTokenSecretRef": {"name": "bootstrap", "key": "admin-token"}});
    create(client, &consumer, false)
        .await
        .unwrap_or_else(|e| panic!("the consuming cluster is refused: {e}"));
    let token = json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageAdminToken",
        "metadata": {"name": "bootstrap", "namespace": "garage"},
        "spec": {"clusterRef": {"name": "token-consumer"}}
    });
    create(client, &token, false)
        .await
        .unwrap_or_else(|e| panic!("the admin token is refused: {e}"));
    let message = api(client, "v1beta1", "GarageAdminToken", "garage")
        .delete("bootstrap", &DeleteParams::default())
        .await
        .map(|_| ())
        .expect_err("a consumed admin token was deleted")
        .to_string();
    assert!(message.contains("[AT-D3]"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn webhook_through_a_real_api_server() {
    certs::install_default_provider();
    let begin = Instant::now();
    let cluster_handle = LocalCluster::start(Options {
        name: "webhook-tests".into(),
        ..Options::default()
    })
    .await
    .unwrap();
    let client = cluster_handle.client().await.unwrap();
    for ns in ["garage-operator", "garage", "garage-operator-system"] {
        namespace(&client, ns).await;
    }
    let server = start_server(&client).await;
    let base = format!("https://127.0.0.1:{}", server.local_addr().port());
    install_crds(&client, &base).await;
    install_webhooks(&client, &base).await;
    wait("caBundles injected", Duration::from_secs(60), || {
        bundles_injected(&client)
    })
    .await;
    assert!(server.resolver().is_ready());
    // The API server picks webhook configurations up through an informer; wait until a valid
    // object passes the whole chain.
    wait("admission chain ready", Duration::from_secs(60), || async {
        create(&client, &cluster("probe"), true).await.is_ok()
    })
    .await;
    println!("setup took {:?}", begin.elapsed());

    // An invalid object is rejected through the API with the rule's message.
    let mut invalid = cluster("invalid");
    invalid["spec"]["storage"]["replicas"] = json!(3);
    invalid["spec"].as_object_mut().unwrap().remove("gateway");
    invalid["spec"]["connectTo"] = json!({"clusterRef": {"name": "other"}});
    let message = create(&client, &invalid, true)
        .await
        .expect_err("the invalid cluster was accepted");
    // Both GarageCluster validators run (matchPolicy Equivalent) in parallel; whichever
    // answers first is the one the API server reports.
    assert!(
        message.contains("[GC-C14]") || message.contains("[G1-C14]"),
        "{message}"
    );
    assert!(message.contains("spec.connectTo"), "{message}");

    // A v1beta2 object read as v1beta1 and written back is unchanged.
    let stored = create(&client, &cluster("roundtrip"), false).await.unwrap();
    let hub = api(&client, "v1beta2", "GarageCluster", "garage");
    let spoke = api(&client, "v1beta1", "GarageCluster", "garage");
    let as_v1beta1 = spoke.get("roundtrip").await.unwrap();
    assert_eq!(
        as_v1beta1.types.as_ref().unwrap().api_version,
        "garage.rajsingh.info/v1beta1"
    );
    spoke
        .replace("roundtrip", &PostParams::default(), &as_v1beta1)
        .await
        .unwrap();
    let after = hub.get("roundtrip").await.unwrap();
    assert_eq!(
        after.data["spec"], stored.data["spec"],
        "spec changed by a v1beta1 round trip"
    );
    assert_eq!(
        after.metadata.annotations, stored.metadata.annotations,
        "annotations changed by a v1beta1 round trip"
    );

    // The Go operator's v1beta1 sample is accepted now that conversion runs.
    let sample: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(
            repo().join("tests/fixtures/upstream-samples/garage_v1beta1_garagecluster.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    create(&client, &sample, true)
        .await
        .unwrap_or_else(|e| panic!("the v1beta1 sample is refused: {e}"));

    node_local_pools_read_live(&client).await;
    buckets_keys_and_tokens_through_the_api(&client).await;

    // 2,000 admission requests while the serving certificate rotates: none fails.
    let generation_before = server.resolver().generation();
    let sent = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(std::sync::Mutex::new(Vec::new()));
    let stream_started = Instant::now();
    let mut workers = Vec::new();
    for worker in 0..16 {
        let client = client.clone();
        let sent = sent.clone();
        let failures = failures.clone();
        let resolver = server.resolver().clone();
        workers.push(tokio::spawn(async move {
            loop {
                let done = sent.load(Ordering::SeqCst);
                let rotated = resolver.generation() >= generation_before + 2;
                if done >= 2000 && rotated {
                    break;
                }
                if stream_started.elapsed() > Duration::from_secs(300) {
                    break;
                }
                let n = sent.fetch_add(1, Ordering::SeqCst);
                if let Err(e) = create(&client, &cluster(&format!("load-{worker}-{n}")), true).await
                {
                    failures.lock().unwrap().push(format!("request {n}: {e}"));
                }
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let total = sent.load(Ordering::SeqCst);
    let rotations = server.resolver().generation() - generation_before;
    println!(
        "{total} admission requests in {:?}, {rotations} certificate rotations",
        stream_started.elapsed()
    );
    let failures = failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "{} of {total} failed, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert!(total >= 2000);
    assert!(rotations >= 2, "no rotation happened during the stream");

    // Someone overwrites a caBundle: the webhook puts it back (watch-triggered).
    let v: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    let tamper = json!([{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": "Z2FyYmFnZQ=="}]);
    v.patch(
        "garage-webhook-test-validating",
        &PatchParams::default(),
        &Patch::<()>::Json(serde_json::from_value(tamper).unwrap()),
    )
    .await
    .unwrap();
    let tampered_at = Instant::now();
    wait(
        "the tampered caBundle restored",
        Duration::from_secs(30),
        || async { first_ca_bundle(&client).await != b"garbage" },
    )
    .await;
    println!("caBundle restored after {:?}", tampered_at.elapsed());
    create(&client, &cluster("after-tamper"), true)
        .await
        .unwrap();

    deleted_secret::deleted_secret_keeps_every_ca_in_use(&client, &server).await;

    let metrics = server.metrics().render();
    assert!(
        metrics.contains("garage_webhook_requests_total"),
        "{metrics}"
    );
    server.stop().await;
    println!("total {:?}", begin.elapsed());
}
