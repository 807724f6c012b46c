//! Table tests of the GarageNode decision for gateways: the identity swap, the workload on a
//! metadata claim, and the stop once the role is retired.

use super::*;

/// A parent status whose role-only transaction for the gateway GarageNode `gw` retires
/// `old`, completed or not.
fn retiring(
    old: &garage_api_types::NodeId,
    completed: bool,
) -> shared_types::garage_cluster::v1beta2::GarageClusterStatus {
    use shared_types::garage_cluster::common::{DrainActor, DrainActorKind, StorageDrainStatus};
    let ids = vec![old.to_string()];
    shared_types::garage_cluster::v1beta2::GarageClusterStatus {
        storage_drain: Some(StorageDrainStatus {
            actor: Some(DrainActor {
                kind: Some(DrainActorKind::GarageNode),
                namespace: Some("ns".into()),
                name: Some("gw".into()),
                uid: Some("uid-gw".into()),
                ..Default::default()
            }),
            target_hash: Some(shared_types::drain::target_hash(&ids, &[], &[])),
            role_removal_node_ids: Some(ids),
            removed_storage_node_ids: Some(vec![]),
            completed_at: completed.then_some(
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ),
            ),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn a_gateway_takes_its_new_identity_only_once_the_parent_swaps_the_old_one_out() {
    let mut node = manual("gw", Some(id(5)));
    node.spec.gateway = Some(true);
    let seen = Discovered {
        id: id(6),
        pod_uid: "pod-9".into(),
        ip: "198.18.0.9".into(),
    };
    let mut o = observed(node.clone(), Some(cluster(3)));
    o.discovered = Some(seen.clone());
    let d = decide(&o, &timing()).unwrap();
    assert_eq!(ready(&d), (false, reason::REASON_IDENTITY_CHANGED));
    let status = d.status.unwrap();
    assert_eq!(
        status.node_id.as_deref(),
        Some(id(5).as_str()),
        "kept until the swap"
    );
    assert_eq!(status.phase, Some(ClusterPhase::Pending));
    // The parent's role-only transaction retiring 5 for this incarnation: 6 is recorded.
    let mut parent = cluster(3);
    parent.status = Some(retiring(&id(5), false));
    let mut o = observed(node.clone(), Some(parent.clone()));
    o.discovered = Some(seen.clone());
    let status = decide(&o, &timing()).unwrap().status.unwrap();
    assert_eq!(status.node_id.as_deref(), Some(id(6).as_str()));
    // A record whose hash does not match its node sets was not written by the cluster's
    // transaction: the identity stays.
    let mut tampered = parent.clone();
    if let Some(r) = tampered
        .status
        .as_mut()
        .and_then(|st| st.storage_drain.as_mut())
    {
        r.target_hash = Some(shared_types::drain::target_hash(&[], &[], &[]));
    }
    let mut o = observed(node.clone(), Some(tampered));
    o.discovered = Some(seen.clone());
    let status = decide(&o, &timing()).unwrap().status.unwrap();
    assert_eq!(status.node_id.as_deref(), Some(id(5).as_str()));
    // A storage node under the same record shape is never switched.
    let mut storage = node;
    storage.spec.gateway = None;
    let mut o = observed(storage, Some(parent));
    o.discovered = Some(seen);
    let status = decide(&o, &timing()).unwrap().status.unwrap();
    assert_eq!(status.node_id.as_deref(), Some(id(5).as_str()));
}

#[test]
fn a_gateway_runs_on_a_metadata_claim_and_scratch_data() {
    let mut node = manual("gw", None);
    node.spec.gateway = Some(true);
    node.spec.capacity = None;
    let d = decide(&observed(node, Some(cluster(3))), &timing()).unwrap();
    let sts = d.statefulset.expect("a gateway runs");
    let spec = sts.spec.unwrap();
    let claims: Vec<String> = spec
        .volume_claim_templates
        .iter()
        .flatten()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert_eq!(claims, ["metadata"], "no data claim");
    let pod = spec.template.spec.unwrap();
    let volumes = pod.volumes.unwrap();
    assert!(
        volumes
            .iter()
            .any(|v| v.name == "data" && v.empty_dir.is_some())
    );
    let marker = volumes.iter().find(|v| v.name == "gateway-marker").unwrap();
    assert!(marker.downward_api.is_some());
    let mounts = pod.containers[0].volume_mounts.clone().unwrap();
    assert!(
        mounts
            .iter()
            .any(|m| m.mount_path == "/data/data/garage-marker"
                && m.sub_path.as_deref() == Some("garage-marker"))
    );
    let labels = spec.template.metadata.unwrap();
    assert_eq!(
        labels.labels.unwrap()[shared_types::keys::label::LABEL_TIER],
        "gateway"
    );
    assert_eq!(
        labels.annotations.unwrap()[shared_types::keys::annotation::ANNOTATION_GATEWAY_DATA_MARKER],
        ""
    );
    let probe = pod.containers[0].readiness_probe.clone().unwrap();
    assert!(
        probe.tcp_socket.is_some(),
        "a gateway is ready while its S3 port answers"
    );
}

#[test]
fn a_deleting_gateway_stops_only_once_its_role_is_retired() {
    let mut node = manual("gw", Some(id(8)));
    node.spec.gateway = Some(true);
    node.metadata.deletion_timestamp = crate::fixtures::deleting();
    let parent = cluster(3);
    let mut o = observed(node.clone(), Some(parent.clone()));
    o.statefulset = Some(Default::default());
    let d = decide(&o, &timing()).unwrap();
    assert!(!d.delete_workload, "the role is still in the layout");
    assert_eq!(d.finalizer, None);
    let mut done = parent.clone();
    done.status = Some(retiring(&id(8), true));
    let mut o = observed(node, Some(done));
    o.statefulset = Some(Default::default());
    assert!(decide(&o, &timing()).unwrap().delete_workload);
}

#[test]
fn a_gateway_of_a_discovering_cluster_gets_no_api_token_and_no_discovery() {
    let mut parent = cluster(3);
    parent.spec.discovery =
        Some(serde_json::from_value(serde_json::json!({"kubernetes": {"enabled": true}})).unwrap());
    let pod_of = |gateway: bool| {
        let mut node = manual("gw", None);
        node.spec.gateway = Some(gateway);
        let d = decide(&observed(node, Some(parent.clone())), &timing()).unwrap();
        d.statefulset
            .and_then(|s| s.spec)
            .and_then(|s| s.template.spec)
            .expect("a pod template")
    };
    assert_eq!(
        pod_of(false).automount_service_account_token,
        Some(true),
        "a storage member runs discovery with a token"
    );
    assert_eq!(
        pod_of(true).automount_service_account_token,
        Some(false),
        "a gateway runs neither"
    );
}
