//! Garage pods against a real kube-apiserver's Pod Security admission: the pod a storage
//! StatefulSet renders, with the operator's default hardening, is admitted in a namespace that
//! enforces `restricted`; the same pod with a template that asks for privilege is refused
//! there, so the check can fail. The pod is created with `dryRun=All`: admission runs in full
//! and nothing is stored.
//!
//! `cargo test -p reconciler --test pod_security`

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use k8s_openapi::api::core::v1::{
    Namespace, PersistentVolumeClaimVolumeSource, Pod, SecurityContext, Volume,
};
use kube::api::PostParams;
use kube::{Api, Client};
use localcluster::{LocalCluster, Options};
use reconciler::desired::secrets::{admin_token_source, rpc_secret_source};
use reconciler::desired::statefulset::{NodeInputs, statefulset};
use reconciler::desired::{Settings, config, nodes};
use serde_json::json;
use shared_types::garage_cluster::v1beta2::GarageCluster;

const NS: &str = "restricted";

/// The pod the first Auto member's StatefulSet would create for `gc`.
fn storage_pod(gc: &GarageCluster) -> Pod {
    let s = Settings::from_cluster(gc).unwrap();
    let mut node = nodes::auto_storage_node(gc, &s, 0).unwrap();
    node.metadata.uid = Some("node-uid".into());
    let rev = config::revision(gc, &s).unwrap();
    let sts = statefulset(NodeInputs {
        fenced: false,
        cluster: gc,
        settings: &s,
        node: &node,
        config: &rev,
        rpc_secret: &rpc_secret_source(gc, &s),
        admin_token: &admin_token_source(gc, &s),
    })
    .unwrap();
    let spec = sts.spec.unwrap();
    let mut template = spec.template;
    // What the StatefulSet controller adds: one claim volume per claim template.
    let pod_spec = template.spec.as_mut().unwrap();
    for claim in spec.volume_claim_templates.unwrap_or_default() {
        let name = claim.metadata.name.unwrap();
        pod_spec.volumes.get_or_insert_default().push(Volume {
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: format!("{name}-garage-0"),
                read_only: None,
            }),
            name,
            ..Default::default()
        });
    }
    let mut metadata = template.metadata.unwrap_or_default();
    metadata.name = Some("garage-0".into());
    metadata.namespace = Some(NS.into());
    Pod {
        metadata,
        spec: template.spec,
        status: None,
    }
}

fn cluster() -> GarageCluster {
    let mut manifest = kubesim::three_node_garage_cluster("garage");
    manifest["metadata"]["namespace"] = json!(NS);
    manifest["metadata"]["uid"] = json!("cluster-uid");
    serde_json::from_value(manifest).unwrap()
}

async fn dry_run(client: &Client, pod: &Pod) -> Result<(), String> {
    let params = PostParams {
        dry_run: true,
        ..Default::default()
    };
    Api::<Pod>::namespaced(client.clone(), NS)
        .create(&params, pod)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread")]
async fn default_garage_pods_satisfy_pod_security_restricted() {
    let local = LocalCluster::start(Options {
        name: "pod-security".into(),
        ..Options::default()
    })
    .await
    .expect("the local control plane (run `cargo xtask tools` once to build it)");
    let client = local.client().await.unwrap();
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {
                "name": NS,
                "labels": {"pod-security.kubernetes.io/enforce": "restricted"},
            }}))
            .unwrap(),
        )
        .await
        .unwrap();

    dry_run(&client, &storage_pod(&cluster()))
        .await
        .expect("the default storage pod is admitted under restricted");

    // A template that asks for more is passed through, and the API server refuses it: the
    // admission check is real.
    let mut privileged = cluster();
    privileged
        .spec
        .storage
        .as_mut()
        .unwrap()
        .container_security_context = Some(SecurityContext {
        allow_privilege_escalation: Some(true),
        ..Default::default()
    });
    let refused = dry_run(&client, &storage_pod(&privileged))
        .await
        .expect_err("a pod that allows privilege escalation is refused under restricted");
    assert!(
        refused.contains("restricted"),
        "refused by Pod Security: {refused}"
    );
}
