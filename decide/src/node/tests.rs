//! Table tests of the GarageNode decision: no API server, no Garage.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use shared_types::common::ClusterPhase;
use shared_types::conditions::reason;
use shared_types::garage_cluster::common::{DeletionPolicy, StorageDrainStatus};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{ExternalNodeConfig, GarageNode};

use super::decision::{Decision, decide};
use super::observed::{Discovered, Observed};
use crate::fixtures::*;

fn observed(node: GarageNode, parent: Option<GarageCluster>) -> Observed {
    let settings = parent.as_ref().map(crate::desired::Settings::from_cluster);
    Observed {
        node: Arc::new(node),
        parent,
        settings,
        config_published: true,
        statefulset: None,
        service_exists: false,
        pod: None,
        discovered: None,
        host: None,
        claims: vec![],
        expansions: vec![],
        zone_host: crate::zone::HostZone::NotRead,
    }
}

fn statefulset() -> StatefulSet {
    StatefulSet {
        metadata: ObjectMeta {
            name: Some("manual-a".into()),
            uid: Some("sts".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn ready(d: &Decision) -> (bool, &'static str) {
    ready_of(&d.conditions)
}

#[test]
fn the_finalizer_comes_before_any_workload() {
    let mut node = manual("manual-a", None);
    node.metadata.finalizers = None;
    let d = decide(&observed(node, Some(cluster(3))), &timing()).unwrap();
    assert_eq!(d.finalizer, Some(true));
    assert!(d.statefulset.is_none() && d.service.is_none() && d.status.is_none());
}

#[test]
fn a_manual_node_gets_its_statefulset_and_service() {
    let d = decide(
        &observed(manual("manual-a", None), Some(cluster(3))),
        &timing(),
    )
    .unwrap();
    let sts = d.statefulset.clone().expect("a StatefulSet");
    let spec = sts.spec.unwrap();
    let claims: Vec<String> = spec
        .volume_claim_templates
        .unwrap()
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(claims, ["metadata", "data"]);
    assert_eq!(
        sts.metadata.owner_references.unwrap()[0].uid,
        "uid-manual-a",
        "controlled by the GarageNode"
    );
    assert!(d.service.is_some());
    assert_eq!(ready(&d), (false, reason::REASON_WAITING_FOR_DEPENDENCY));
    assert_eq!(d.requeue, Some(timing().short_requeue));
}

#[test]
fn existing_claims_and_emptydir_are_mounted_as_they_are() {
    let mut node = manual("manual-a", None);
    let storage = node.spec.storage.as_mut().unwrap();
    storage.data.as_mut().unwrap().existing_claim = Some("my-disk".into());
    storage.metadata.as_mut().unwrap().type_ = Some(shared_types::common::VolumeType::EmptyDir);
    let d = decide(&observed(node, Some(cluster(3))), &timing()).unwrap();
    let spec = d.statefulset.unwrap().spec.unwrap();
    assert!(
        spec.volume_claim_templates.is_none(),
        "no template for either volume"
    );
    let volumes = spec.template.spec.unwrap().volumes.unwrap();
    let data = volumes.iter().find(|v| v.name == "data").unwrap();
    assert_eq!(
        data.persistent_volume_claim.as_ref().unwrap().claim_name,
        "my-disk"
    );
    let metadata = volumes.iter().find(|v| v.name == "metadata").unwrap();
    assert!(metadata.empty_dir.is_some());
}

#[test]
fn no_workload_mounts_an_unpublished_config() {
    let mut o = observed(manual("manual-a", None), Some(cluster(3)));
    o.config_published = false;
    let d = decide(&o, &timing()).unwrap();
    assert!(d.statefulset.is_none());
    assert_eq!(d.requeue, Some(timing().short_requeue));
}

#[test]
fn a_discovered_identity_is_recorded_with_its_pod() {
    let mut o = observed(manual("manual-a", None), Some(cluster(3)));
    o.discovered = Some(Discovered {
        id: id(5),
        pod_uid: "pod-7".into(),
        ip: "198.18.0.7".into(),
    });
    let d = decide(&o, &timing()).unwrap();
    let status = d.status.as_ref().unwrap();
    assert_eq!(status.node_id.as_deref(), Some(id(5).as_str()));
    assert_eq!(status.observed_pod_uid.as_deref(), Some("pod-7"));
    assert_eq!(status.address.as_deref(), Some("198.18.0.7:3901"));
    assert_eq!(ready(&d), (true, reason::REASON_RECONCILE_SUCCESS));
    assert_eq!(d.requeue, Some(timing().resync));
}

#[test]
fn a_different_identity_is_never_recorded() {
    // (recorded, pinned): the pod runs id 6 each time. The last case is a pin added after the
    // identity was recorded (a pool member's recovery annotation can be): the record stays.
    for (recorded, pinned) in [(Some(5), None), (None, Some(5)), (Some(5), Some(6))] {
        let mut node = manual("manual-a", recorded.map(id));
        node.spec.node_id = pinned.map(|n| id(n).to_string());
        let mut o = observed(node, Some(cluster(3)));
        o.discovered = Some(Discovered {
            id: id(6),
            pod_uid: "pod-8".into(),
            ip: "198.18.0.8".into(),
        });
        let d = decide(&o, &timing()).unwrap();
        assert_eq!(ready(&d), (false, reason::REASON_IDENTITY_CHANGED));
        let status = d.status.unwrap();
        assert_ne!(status.node_id.as_deref(), Some(id(6).as_str()));
        assert_eq!(status.observed_pod_uid, None);
        assert_eq!(status.phase, Some(ClusterPhase::Failed));
    }
}

/// `manual-a` (identity 5), asking to be drained with its source acknowledged lost.
fn lost_node() -> GarageNode {
    use shared_types::keys::annotation::{ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_DRAIN};
    let mut node = manual("manual-a", Some(id(5)));
    node.metadata.annotations = Some(
        [
            (ANNOTATION_DRAIN.to_string(), "true".to_string()),
            (
                ANNOTATION_ACKNOWLEDGE_LOST_SOURCE.to_string(),
                id(5).to_string(),
            ),
        ]
        .into(),
    );
    node
}

/// The parent's record of [`lost_node`] as a lost source.
fn lost_record() -> StorageDrainStatus {
    use shared_types::garage_cluster::common::{DrainActor, DrainActorKind};
    let ids = vec![id(5).to_string()];
    StorageDrainStatus {
        actor: Some(DrainActor {
            kind: Some(DrainActorKind::GarageNode),
            namespace: Some("ns".into()),
            name: Some("manual-a".into()),
            uid: Some("uid-manual-a".into()),
            ..Default::default()
        }),
        role_removal_node_ids: Some(ids.clone()),
        removed_storage_node_ids: Some(ids.clone()),
        unavailable_source_node_ids: Some(ids.clone()),
        target_hash: Some(shared_types::drain::target_hash(&ids, &ids, &ids)),
        ..Default::default()
    }
}

#[test]
fn an_acknowledged_lost_source_is_fenced_only_once_the_parent_records_it() {
    let node = lost_node();
    let replicas = |d: &Decision| {
        d.statefulset
            .as_ref()
            .and_then(|s| s.spec.as_ref())
            .and_then(|s| s.replicas)
    };
    // The statement alone fences nothing: the parent checks it against Garage first.
    let hash = |d: &Decision| {
        d.statefulset
            .as_ref()
            .and_then(|s| s.metadata.annotations.clone())
            .unwrap_or_default()
            .get(shared_types::keys::annotation::ANNOTATION_RENDERED_HASH)
            .cloned()
    };
    let d = decide(&observed(node.clone(), Some(cluster(3))), &timing()).unwrap();
    assert_eq!(replicas(&d), Some(1));
    let live_hash = hash(&d);
    let ids = vec![id(5).to_string()];
    let mut parent = cluster(3);
    let mut record = lost_record();
    parent
        .status
        .get_or_insert_with(Default::default)
        .storage_drain = Some(record.clone());
    let d = decide(&observed(node.clone(), Some(parent.clone())), &timing()).unwrap();
    assert_eq!(replicas(&d), Some(0), "recorded as lost: fenced");
    assert_ne!(hash(&d), live_hash, "the fence must change what is written");
    assert_eq!(ready(&d), (false, reason::REASON_DRAINING));
    assert_eq!(d.status.unwrap().observed_pod_uid, None);
    // A live-source record for the same node fences nothing.
    record.unavailable_source_node_ids = None;
    record.target_hash = Some(shared_types::drain::target_hash(&ids, &ids, &[]));
    parent
        .status
        .get_or_insert_with(Default::default)
        .storage_drain = Some(record);
    let d = decide(&observed(node, Some(parent)), &timing()).unwrap();
    assert_eq!(replicas(&d), Some(1));
}

#[test]
fn an_external_node_runs_nothing_and_reports_its_declared_identity() {
    let mut node = manual("vm-1", None);
    node.spec.storage = None;
    node.spec.node_id = Some(id(7).to_string());
    node.spec.external = Some(ExternalNodeConfig {
        address: "10.0.0.7".into(),
        ..Default::default()
    });
    let d = decide(&observed(node, Some(cluster(3))), &timing()).unwrap();
    assert!(d.statefulset.is_none() && d.service.is_none());
    let status = d.status.unwrap();
    assert_eq!(status.node_id.as_deref(), Some(id(7).as_str()));
    assert_eq!(status.address.as_deref(), Some("10.0.0.7:3901"));
}

#[test]
fn zone_from_publishes_the_hosts_label_or_reports_a_node_it_may_not_read() {
    let mut node = manual("manual-a", None);
    node.spec.zone_from = Some(shared_types::common::ZoneSource {
        node_label: "example.com/rack".into(),
    });
    let mut o = observed(node, Some(cluster(3)));
    o.zone_host = crate::zone::HostZone::Read(Some("rack-b".into()));
    let d = decide(&o, &timing()).unwrap();
    assert!(d.statefulset.is_some());
    let zone = d.status.as_ref().and_then(|s| s.zone.clone());
    assert_eq!(zone.as_deref(), Some("rack-b"));

    o.zone_host = crate::zone::HostZone::Forbidden("nodes \"n1\" is forbidden".into());
    let d = decide(&o, &timing()).unwrap();
    assert!(
        d.statefulset.is_none(),
        "nothing is rendered for a refused zoneFrom"
    );
    let zone = d.status.as_ref().and_then(|s| s.zone.clone());
    assert_eq!(
        zone.as_deref(),
        Some("zone-m"),
        "nothing was published before"
    );
    let (status, r) = ready(&d);
    assert!(!status);
    assert_eq!(r, reason::REASON_VALIDATION_FAILED, "{:?}", d.conditions);
    assert!(d.conditions[0].message.starts_with("spec.zoneFrom:"));
}

#[test]
fn a_missing_parent_leaves_everything_as_it_is() {
    let d = decide(&observed(manual("manual-a", Some(id(1))), None), &timing()).unwrap();
    assert!(d.statefulset.is_none() && d.finalizer.is_none() && !d.delete_workload);
    assert_eq!(ready(&d), (false, reason::REASON_WAITING_FOR_DEPENDENCY));
}

fn deleting_node() -> GarageNode {
    let mut node = manual("manual-a", Some(id(1)));
    node.metadata.deletion_timestamp = deleting();
    node
}

#[test]
fn a_destroying_parent_stops_the_workload_then_releases_the_node() {
    let mut parent = cluster(3);
    parent.metadata.deletion_timestamp = deleting();
    let mut o = observed(deleting_node(), Some(parent.clone()));
    o.statefulset = Some(statefulset());
    o.service_exists = true;
    let d = decide(&o, &timing()).unwrap();
    assert!(d.delete_workload);
    assert_eq!(
        d.finalizer, None,
        "the finalizer stays while the workload exists"
    );
    o.statefulset = None;
    o.service_exists = false;
    o.pod = Some(pod("manual-a", 9, "sts"));
    let d = decide(&o, &timing()).unwrap();
    assert_eq!(d.finalizer, None, "the pod is still stopping");
    o.pod = None;
    let d = decide(&o, &timing()).unwrap();
    assert_eq!(d.finalizer, Some(false));
}

#[test]
fn a_storage_node_deleted_on_its_own_keeps_its_workload() {
    // Parent alive: only a prepared drain may stop a storage identity.
    let mut o = observed(deleting_node(), Some(cluster(3)));
    o.statefulset = Some(statefulset());
    let d = decide(&o, &timing()).unwrap();
    assert!(!d.delete_workload && d.finalizer.is_none());
    assert_eq!(ready(&d), (false, reason::REASON_NODE_DRAIN_BLOCKED));
    // Parent deleting with Drain: nothing stops either.
    let mut parent = cluster(3);
    parent.metadata.deletion_timestamp = deleting();
    parent.spec.deletion_policy = Some(DeletionPolicy::Drain);
    let mut o = observed(deleting_node(), Some(parent));
    o.statefulset = Some(statefulset());
    let d = decide(&o, &timing()).unwrap();
    assert!(!d.delete_workload && d.finalizer.is_none());
    // Parent gone: the identity keeps its finalizer.
    let mut o = observed(deleting_node(), None);
    o.statefulset = Some(statefulset());
    let d = decide(&o, &timing()).unwrap();
    assert!(!d.delete_workload && d.finalizer.is_none());
    assert!(d.conditions[0].message.contains("Restore the parent"));
}

#[test]
fn a_rollout_that_retired_too_many_workloads_gets_no_new_statefulset() {
    use shared_types::garage_cluster::common::StorageRolloutStatus;
    let node = manual("manual-a", None);
    let mut parent = cluster(3);
    let record = StorageRolloutStatus {
        garage_node_uid: node.metadata.uid.clone(),
        retired_workload_uids: Some((0..32).map(|i| format!("old-{i}")).collect()),
        ..Default::default()
    };
    parent
        .status
        .get_or_insert_with(Default::default)
        .storage_rollout = Some(record.clone());
    let d = decide(&observed(node.clone(), Some(parent.clone())), &timing()).unwrap();
    assert!(
        d.statefulset.is_none(),
        "a workload was created past the cap"
    );
    assert_eq!(ready(&d), (false, reason::REASON_RETIRED_WORKLOAD_LIMIT));
    assert_eq!(
        d.conditions.iter().filter(|c| c.type_ == "Ready").count(),
        1
    );
    // Fenced as a lost source as well: still no workload, and one Ready, the fence's.
    let mut fenced = parent.clone();
    let status = fenced.status.get_or_insert_with(Default::default);
    status.storage_drain = Some(lost_record());
    if let Some(rollout) = status.storage_rollout.as_mut() {
        rollout.garage_node_uid = lost_node().metadata.uid;
    }
    let d = decide(&observed(lost_node(), Some(fenced)), &timing()).unwrap();
    assert!(d.statefulset.is_none());
    assert_eq!(
        d.conditions.iter().filter(|c| c.type_ == "Ready").count(),
        1,
        "{:?}",
        d.conditions
    );
    assert_eq!(ready(&d), (false, reason::REASON_DRAINING));
    // An existing StatefulSet is kept as it is; below the cap one is created.
    let mut o = observed(node.clone(), Some(parent.clone()));
    o.statefulset = Some(statefulset());
    assert!(decide(&o, &timing()).unwrap().statefulset.is_some());
    parent.status.as_mut().unwrap().storage_rollout = Some(StorageRolloutStatus {
        retired_workload_uids: Some(vec!["old".into()]),
        ..record
    });
    assert!(
        decide(&observed(node, Some(parent)), &timing())
            .unwrap()
            .statefulset
            .is_some()
    );
}

#[test]
fn a_node_whose_disks_differ_from_the_shared_config_gets_no_workload() {
    let paths = crate::desired::test_support::paths_cluster(1);
    // One data volume beside a cluster whose garage.toml lists three directories.
    let d = decide(
        &observed(manual("manual-a", None), Some(paths.clone())),
        &timing(),
    )
    .unwrap();
    assert!(d.statefulset.is_none() && d.service.is_none());
    assert_eq!(ready(&d), (false, reason::REASON_UNSUPPORTED));
    assert_eq!(
        d.status.unwrap().phase,
        Some(ClusterPhase::Pending),
        "not a validation failure"
    );
    // The generated node of that cluster fits and mounts each path from its own claim.
    let gn = generated(&paths, 0, None);
    let d = decide(&observed(gn, Some(paths)), &timing()).unwrap();
    let sts = d.statefulset.expect("a StatefulSet");
    assert_eq!(
        crate::desired::test_support::claim_template_names(&sts),
        ["metadata", "data-0", "data-1", "data-2"]
    );
}

#[test]
fn a_refused_node_that_never_ran_is_released_at_once() {
    let paths = crate::desired::test_support::paths_cluster(1);
    let mut node = manual("manual-a", None);
    node.metadata.deletion_timestamp = deleting();
    let d = decide(&observed(node, Some(paths)), &timing()).unwrap();
    assert_eq!(d.finalizer, Some(false));
}

#[test]
fn a_leaving_pool_member_gives_up_its_hostpath_claim_only_after_its_pod() {
    use crate::desired::{hostpath_claim, pool as desired_pool};
    let mut parent = cluster(0);
    let pool: shared_types::garage_cluster::v1beta2::NodeLocalPoolSpec =
        serde_json::from_value(serde_json::json!({
            "name": "local", "capacity": "1Gi",
            "metadata": {"hostPath": "/m"}, "data": {"hostPath": "/d"},
            "selector": {"matchLabels": {"pool": "local"}},
        }))
        .unwrap();
    parent.spec.storage.as_mut().unwrap().node_local_pools = Some(vec![pool.clone()]);
    let s = crate::desired::Settings::from_cluster(&parent).unwrap();
    let keys = [
        desired_pool::activation_key(&s, "local"),
        desired_pool::node_id_key(&s, "local"),
        hostpath_claim::key(&s, "local"),
    ];
    let mut member = desired_pool::member_node(&parent, &s, &pool, "n1", None).unwrap();
    member.metadata.finalizers = Some(vec![shared_types::keys::finalizer::FINALIZER_NODE.into()]);
    member.metadata.deletion_timestamp = deleting();
    parent.metadata.deletion_timestamp = deleting();
    let mut o = observed(member, Some(parent));
    o.host = Some(
        serde_json::from_value(serde_json::json!({"metadata": {"name": "n1",
            "labels": {keys[0].clone(): "true"},
            "annotations": {keys[1].clone(): id(1), keys[2].clone(): "{}"}}}))
        .unwrap(),
    );
    o.pod = Some(pod("n1", 7, "ds"));
    // The pod still runs: activation and record go, the claim stays.
    let d = decide(&o, &timing()).unwrap();
    assert_eq!(d.unbind, Some(("n1".into(), keys[..2].to_vec())));
    assert_eq!(d.finalizer, None);
    // The pod is gone: the claim goes, and only then the finalizer.
    o.pod = None;
    o.host = Some(
        serde_json::from_value(serde_json::json!({"metadata": {"name": "n1",
            "annotations": {keys[2].clone(): "{}"}}}))
        .unwrap(),
    );
    let d = decide(&o, &timing()).unwrap();
    assert_eq!(d.unbind, Some(("n1".into(), vec![keys[2].clone()])));
    assert_eq!(d.finalizer, None);
    o.host = Some(serde_json::from_value(serde_json::json!({"metadata": {"name": "n1"}})).unwrap());
    assert_eq!(decide(&o, &timing()).unwrap().finalizer, Some(false));
}

fn claim(name: &str, finalizers: &[&str], annotations: &[(&str, &str)]) -> super::volumes::Claim {
    let pvc = k8s_openapi::api::core::v1::PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("3".into()),
            finalizers: Some(finalizers.iter().map(|f| f.to_string()).collect()),
            annotations: Some(
                annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    };
    super::volumes::Claim {
        name: name.into(),
        desired: None,
        pvc: Some(pvc),
        refused: false,
    }
}

#[test]
fn a_node_whose_claims_hold_a_retired_identity_gets_no_statefulset() {
    use shared_types::keys::annotation::ANNOTATION_RETIRED_NODE_ID;
    let retired = id(4).to_string();
    let mut o = observed(manual("manual-a", None), Some(cluster(3)));
    o.claims = vec![
        claim(
            "metadata-manual-a-0",
            &[],
            &[(ANNOTATION_RETIRED_NODE_ID, &retired)],
        ),
        claim(
            "data-manual-a-0",
            &[],
            &[(ANNOTATION_RETIRED_NODE_ID, &retired)],
        ),
    ];
    let d = decide(&o, &timing()).unwrap();
    assert!(
        d.statefulset.is_none(),
        "never started on a retired identity"
    );
    assert!(d.claim_patches.is_empty());
    assert_eq!(ready(&d), (false, reason::REASON_RETIRED_CLAIMS));
    let readies = d.conditions.iter().filter(|c| c.type_ == "Ready").count();
    assert_eq!(readies, 1, "one Ready condition");
    // The user deleted them: the StatefulSet comes, and its new claims get reserved later.
    o.claims.clear();
    let d = decide(&o, &timing()).unwrap();
    assert!(d.statefulset.is_some());
}

#[test]
fn a_live_nodes_claims_are_reserved_and_record_the_identity_its_pod_proved() {
    use shared_types::keys::annotation::{ANNOTATION_GARAGE_NODE_UID, ANNOTATION_NODE_ID};
    use shared_types::keys::finalizer::FINALIZER_PVC_RESERVATION;
    let mut o = observed(manual("manual-a", None), Some(cluster(3)));
    o.claims = vec![claim(
        "data-manual-a-0",
        &["kubernetes.io/pvc-protection"],
        &[],
    )];
    let d = decide(&o, &timing()).unwrap();
    let [p] = d.claim_patches.as_slice() else {
        panic!("{:?}", d.claim_patches)
    };
    assert!(
        p.finalizers
            .contains(&FINALIZER_PVC_RESERVATION.to_string())
    );
    assert_eq!(
        p.annotations
            .get(ANNOTATION_GARAGE_NODE_UID)
            .map(String::as_str),
        Some("uid-manual-a")
    );
    assert!(
        !p.annotations.contains_key(ANNOTATION_NODE_ID),
        "identity not known yet"
    );
    // Its pod proves identity 7: recorded on the claim too.
    o.discovered = Some(Discovered {
        id: id(7),
        pod_uid: "pod-uid".into(),
        ip: "10.0.0.7".into(),
    });
    let d = decide(&o, &timing()).unwrap();
    assert_eq!(
        d.claim_patches[0]
            .annotations
            .get(ANNOTATION_NODE_ID)
            .map(String::as_str),
        Some(id(7).to_string().as_str())
    );
    // A pod reporting another identity than the recorded one records nothing on the claim.
    let mut o2 = observed(manual("manual-a", Some(id(5))), Some(cluster(3)));
    o2.claims = o.claims.clone();
    o2.discovered = o.discovered.clone();
    let d = decide(&o2, &timing()).unwrap();
    assert!(
        !d.claim_patches[0]
            .annotations
            .contains_key(ANNOTATION_NODE_ID)
    );
}

#[test]
fn a_finalized_node_releases_its_claims_before_its_finalizer_and_marks_them_after_a_proof() {
    use shared_types::keys::annotation::ANNOTATION_RETIRED_NODE_ID;
    use shared_types::keys::finalizer::FINALIZER_PVC_RESERVATION;
    let reserved = || vec![claim("data-manual-a-0", &[FINALIZER_PVC_RESERVATION], &[])];
    // Destroy: released, not marked; the finalizer waits for the release.
    let mut parent = cluster(3);
    parent.metadata.deletion_timestamp = deleting();
    let mut o = observed(deleting_node(), Some(parent));
    o.claims = reserved();
    let d = decide(&o, &timing()).unwrap();
    assert_eq!(d.finalizer, None);
    let [p] = d.claim_patches.as_slice() else {
        panic!("{:?}", d.claim_patches)
    };
    assert!(p.finalizers.is_empty());
    assert!(p.annotations.is_empty());
    // While the workload still runs, the reservation stays.
    o.pod = Some(pod("manual-a", 9, "sts"));
    assert!(decide(&o, &timing()).unwrap().claim_patches.is_empty());
    // A proven drain of exactly this incarnation: released and marked with its identity.
    let mut node = deleting_node();
    node.metadata.annotations = Some(
        [(
            shared_types::keys::annotation::ANNOTATION_DRAIN.to_string(),
            "true".to_string(),
        )]
        .into(),
    );
    let mut parent = cluster(3);
    let mut record = lost_record();
    record.unavailable_source_node_ids = None;
    let ids = vec![id(1).to_string()];
    record.role_removal_node_ids = Some(ids.clone());
    record.removed_storage_node_ids = Some(ids.clone());
    record.target_hash = Some(shared_types::drain::target_hash(&ids, &ids, &[]));
    record.completed_at = Some(deleting().unwrap());
    parent
        .status
        .get_or_insert_with(Default::default)
        .storage_drain = Some(record);
    let mut o = observed(node, Some(parent));
    o.claims = reserved();
    let d = decide(&o, &timing()).unwrap();
    let [p] = d.claim_patches.as_slice() else {
        panic!("not released after the proof: {:?}", d)
    };
    assert_eq!(
        p.annotations
            .get(ANNOTATION_RETIRED_NODE_ID)
            .map(String::as_str),
        Some(id(1).to_string().as_str())
    );
    // Released and marked: the finalizer goes.
    o.claims = vec![claim(
        "data-manual-a-0",
        &[],
        &[(ANNOTATION_RETIRED_NODE_ID, &id(1).to_string())],
    )];
    assert_eq!(decide(&o, &timing()).unwrap().finalizer, Some(false));
}

#[test]
fn a_suspended_node_writes_nothing_but_its_suspended_condition() {
    let mut held = cluster(3);
    held.spec.maintenance = Some(shared_types::common::MaintenanceConfig {
        suspended: Some(true),
    });
    let mut own = manual("manual-a", Some(id(1)));
    own.spec.maintenance = held.spec.maintenance.clone();
    let cases = [
        (own, cluster(3), reason::REASON_MAINTENANCE_SUSPENDED),
        (
            manual("manual-a", Some(id(1))),
            held,
            reason::REASON_CLUSTER_MAINTENANCE_SUSPENDED,
        ),
    ];
    for (node, parent, why) in cases {
        let before = node.status.clone().unwrap_or_default();
        let mut o = observed(node, Some(parent));
        // A new identity and a workload to render: both would be written if not suspended.
        o.discovered = Some(Discovered {
            id: id(2),
            pod_uid: "pod-9".into(),
            ip: "198.18.0.9".into(),
        });
        let d = decide(&o, &timing()).unwrap();
        assert!(d.suspended, "{why}");
        assert!(d.statefulset.is_none() && d.service.is_none() && !d.delete_workload);
        assert!(d.claim_classes.is_empty() && d.claim_sizes.is_empty());
        assert!(d.claim_patches.is_empty() && d.unbind.is_none());
        assert_eq!(d.finalizer, None);
        assert_eq!(d.status, Some(before), "status is left as it was");
        let c: Vec<(&str, bool, &str)> = d
            .conditions
            .iter()
            .map(|c| (c.type_, c.status, c.reason))
            .collect();
        assert_eq!(c, [("Suspended", true, why)]);
        assert_eq!(d.requeue, Some(timing().resync));
    }
}

#[test]
fn a_suspended_node_can_still_be_torn_down_with_its_parent() {
    let mut parent = cluster(3);
    parent.metadata.deletion_timestamp = deleting();
    parent.spec.maintenance = Some(shared_types::common::MaintenanceConfig {
        suspended: Some(true),
    });
    let mut node = deleting_node();
    node.spec.maintenance = parent.spec.maintenance.clone();
    let mut o = observed(node, Some(parent));
    o.statefulset = Some(statefulset());
    let d = decide(&o, &timing()).unwrap();
    assert!(d.delete_workload && !d.suspended);
}

mod gateways;
