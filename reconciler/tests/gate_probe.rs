//! The scheduling-gate probe against a real kube-apiserver and kube-scheduler: the gated
//! probe pod is reported `SchedulingGated`, the capability is proven, the probe pod is
//! removed afterwards, and a second probe within thirty seconds reuses the proof without
//! creating anything.
//!
//! `cargo test -p reconciler --test gate_probe`

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};

use decide::pools::capability::{EvidenceCache, Verdict};
use k8s_openapi::api::core::v1::{Namespace, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use localcluster::{LocalCluster, Options};
use reconciler::controller::pools::probe;
use serde_json::json;
use shared_types::garage_cluster::v1beta2::GarageCluster;

const NS: &str = "probe";

async fn install_cluster_crd(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds/garageclusters.yaml");
    let crd: CustomResourceDefinition =
        serde_saphyr::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let name = crd.metadata.name.clone().unwrap();
    crds.patch(
        &name,
        &PatchParams::apply("gate-probe-test").force(),
        &Patch::Apply(&crd),
    )
    .await
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let established = crds
            .get(&name)
            .await
            .ok()
            .and_then(|c| c.status)
            .is_some_and(|s| {
                s.conditions
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
        if established {
            break;
        }
        assert!(Instant::now() < deadline, "CRD {name} not Established");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_gate_is_proven_on_a_real_scheduler_and_the_proof_is_reused() {
    let cluster = LocalCluster::start(Options {
        name: "gate-probe".into(),
        ..Options::default()
    })
    .await
    .expect("the local control plane (run `cargo xtask tools` once to build it)");
    let client = cluster.client().await.unwrap();
    install_cluster_crd(&client).await;
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap(),
        )
        .await
        .unwrap();
    let mut manifest = kubesim::three_node_garage_cluster("garage");
    manifest["metadata"]["namespace"] = json!(NS);
    let gc: GarageCluster = serde_json::from_value(manifest).unwrap();
    let gc = Api::<GarageCluster>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &gc)
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let cache = EvidenceCache::default();
    let metrics = reconciler::controller::Metrics::default();

    let deadline = Instant::now() + Duration::from_secs(60);
    let mut pending = 0;
    let proven_at = loop {
        match probe::probe(&client, &gc, "garage:probe", &cache, &metrics)
            .await
            .unwrap()
        {
            Verdict::Proven(at) => break at,
            Verdict::Pending(why) => {
                pending += 1;
                assert!(Instant::now() < deadline, "still pending: {why}");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => panic!("the real control plane was judged unable: {other:?}"),
        }
    };
    println!("proven after {pending} pending look(s), at {proven_at}");
    assert!(
        pods.get_opt(&probe::probe_pod_name(&gc))
            .await
            .unwrap()
            .is_none()
            || pods
                .get(&probe::probe_pod_name(&gc))
                .await
                .unwrap()
                .metadata
                .deletion_timestamp
                .is_some(),
        "the probe pod is removed after its proof"
    );
    // Reused: no new probe pod while the proof is fresh.
    let again = probe::probe(&client, &gc, "garage:probe", &cache, &metrics)
        .await
        .unwrap();
    assert_eq!(again, Verdict::Proven(proven_at));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        pods.get_opt(&probe::probe_pod_name(&gc))
            .await
            .unwrap()
            .is_none(),
        "a fresh proof creates nothing"
    );
}
