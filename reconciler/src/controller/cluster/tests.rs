//! Table tests of the GarageCluster decision: no API server, no Garage.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use shared_types::conditions::reason;
use shared_types::garage_cluster::common::LayoutPolicy;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{ExternalNodeConfig, GarageNode};

use super::decide::{Decision, OWNED, RECONNECT_GRACE, decide, refuse};
use super::observe::{GarageRead, GarageView, Observed};
use crate::controller::conditions;
use crate::controller::fixtures::*;
use crate::desired::DesiredError;
use crate::garage::{NodeId, RoleChange};
use crate::layout::tags::storage_role_tags;

/// A cluster of three Auto members, each with a running pod; `ids` says which are known.
fn auto(
    c: &GarageCluster,
    known: &[bool],
) -> (
    BTreeMap<u32, GarageNode>,
    Vec<k8s_openapi::api::core::v1::Pod>,
) {
    let mut generated = BTreeMap::new();
    let mut pods = Vec::new();
    for (i, k) in known.iter().enumerate() {
        let ordinal = u32::try_from(i).unwrap();
        let gn = generated_node(c, ordinal, *k);
        pods.push(pod(&gn.name_any(), 10 + ordinal as u8, "sts"));
        generated.insert(ordinal, gn);
    }
    (generated, pods)
}

fn generated_node(c: &GarageCluster, ordinal: u32, known: bool) -> GarageNode {
    generated(c, ordinal, known.then(|| id(ordinal as u8)))
}

/// The role the cluster wants for member `name` with identity `n`.
fn auto_role(name: &str, n: &NodeId) -> serde_json::Value {
    let tags = storage_role_tags("garage", "ns", "uid-1", &[format!("{name}-0")]);
    role(n, "default", 1 << 30, &tags)
}

fn observed(
    c: GarageCluster,
    generated: BTreeMap<u32, GarageNode>,
    user_nodes: Vec<GarageNode>,
    pods: Vec<k8s_openapi::api::core::v1::Pod>,
    garage: GarageView,
) -> Observed {
    // Every member's StatefulSet was rendered from the current configuration and has
    // observed its template; its revision is the pods'.
    let config_hash = crate::desired::Settings::from_cluster(&c)
        .ok()
        .and_then(|s| crate::desired::config::revision(&c, &s).ok())
        .map(|r| r.revision[..16].to_owned())
        .unwrap_or_default();
    let statefulsets = generated
        .values()
        .chain(user_nodes.iter())
        .map(|gn| {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": gn.name_any(), "uid": format!("sts-{}", gn.name_any()), "generation": 1},
                "spec": {"selector": {}, "serviceName": "x", "template": {
                    "metadata": {"annotations": {
                        shared_types::keys::annotation::ANNOTATION_CONFIG_HASH: config_hash,
                    }},
                    "spec": {"containers": [], "volumes": [{"name": "admin-token", "secret": {"secretName": "garage-admin-token"}}]},
                }},
                "status": {"replicas": 1, "observedGeneration": 1, "updateRevision": "rev-1"},
            }))
            .unwrap()
        })
        .collect();
    Observed {
        cluster: Arc::new(c),
        generated,
        user_nodes,
        pool_members: vec![],
        daemonsets: vec![],
        config_maps: vec![],
        k8s_nodes: vec![],
        foreign_paths: vec![],
        pods,
        garage,
        admin: None,
        token: None,
        statefulsets,
        proof: None,
        now: k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        transaction_id: "tx".into(),
    }
}

fn read(layout: crate::garage::ClusterLayout, up: &[&NodeId], health: bool) -> GarageView {
    let version = layout.version;
    GarageView::Read(Box::new(GarageRead {
        status: status(version, up),
        history: settled(version),
        layout,
        health: health.then(|| healthy(3)),
        every_view_healthy: health,
    }))
}

fn ready(d: &Decision) -> (bool, &'static str) {
    ready_of(&d.conditions)
}

/// A converged three-member cluster: every role in place, everyone up, healthy.
fn converged() -> Observed {
    let c = cluster(3);
    let (generated, pods) = auto(&c, &[true, true, true]);
    let roles: Vec<_> = (0..3u8)
        .map(|n| auto_role(&format!("garage-storage-{n}"), &id(n)))
        .collect();
    let ids = [id(0), id(1), id(2)];
    let up: Vec<&NodeId> = ids.iter().collect();
    observed(
        c,
        generated,
        vec![],
        pods,
        read(layout(1, &roles, &[]), &up, true),
    )
}

#[test]
fn creation_makes_every_slot_and_the_secrets_at_once() {
    let c = cluster(3);
    let o = observed(
        c,
        BTreeMap::new(),
        vec![],
        vec![],
        GarageView::Unavailable("admin token Secret garage-admin-token is not readable yet".into()),
    );
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.rpc_secret && d.admin_token);
    let names: Vec<String> = d.create_nodes.iter().map(|n| n.name_any()).collect();
    assert_eq!(
        names,
        ["garage-storage-0", "garage-storage-1", "garage-storage-2"]
    );
    assert_eq!(d.services.len(), 2);
    assert!(d.layout.is_none());
    assert_eq!(ready(&d), (false, reason::REASON_NOT_ALL_REPLICAS_READY));
    assert_eq!(d.requeue, Duration::from_millis(500));
}

/// Three known members of `c` with running pods and an empty layout, as at bootstrap.
fn bootstrapping(c: GarageCluster) -> Observed {
    let (generated, pods) = auto(&c, &[true, true, true]);
    observed(
        c,
        generated,
        vec![],
        pods,
        read(layout(0, &[], &[]), &[], false),
    )
}

#[test]
fn bootstrap_applies_every_known_member_in_one_version() {
    let o = bootstrapping(cluster(3));
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let change = d.layout.expect("a layout change");
    assert!(change.bootstrap);
    assert_eq!((change.version, change.intended.len()), (1, 3));
    assert!(d.create_nodes.is_empty());
    // Garage does not see the members yet: each is pointed at its pod address.
    assert_eq!(d.reconnect.len(), 3);
    assert!(
        d.reconnect[0].ends_with("@198.18.0.10:3901"),
        "{:?}",
        d.reconnect
    );
    // New members are dialled from one side only.
    assert!(d.rejoin.is_empty());
}

#[test]
fn a_paths_cluster_places_its_summed_capacity_and_refuses_a_single_disk_node_beside_it() {
    let mut o = bootstrapping(crate::desired::test_support::paths_cluster(3));
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let change = d.layout.expect("a layout change");
    // 600Mi declared on one directory, a 2Gi volume on another, nothing for the read-only.
    let sum = (600u64 << 20) + (2 << 30);
    assert_eq!(change.intended.len(), 3);
    for r in &change.intended {
        assert!(
            matches!(r, RoleChange::Assign { capacity: Some(c), .. } if *c == sum),
            "{r:?}"
        );
    }
    // A user-written node on one data volume would get a garage.toml listing directories
    // it does not mount: reported, not planned.
    o.pods.push(pod("manual-a", 30, "sts-m"));
    o.user_nodes.push(manual("manual-a", Some(id(9))));
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(ready(&d), (false, reason::REASON_UNSUPPORTED));
    let planned = d.layout.map(|l| l.intended).unwrap_or_default();
    assert!(
        planned
            .iter()
            .all(|r| !matches!(r, RoleChange::Assign { id: n, .. } if *n == id(9))),
        "{planned:?}"
    );
}

#[test]
fn a_member_seen_at_its_old_address_is_reconnected_from_both_sides() {
    let mut o = converged();
    if let GarageView::Read(r) = &mut o.garage {
        let stale = r.status.nodes.iter_mut().find(|n| n.id == id(1)).unwrap();
        stale.addr = Some("198.18.0.99:3901".into());
    }
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(d.reconnect, vec![format!("{}@198.18.0.11:3901", id(1))]);
    assert_eq!(d.rejoin.len(), 1);
    assert_eq!(d.rejoin[0].0, "198.18.0.11");
    assert_eq!(
        d.rejoin[0].1,
        vec![
            format!("{}@198.18.0.10:3901", id(0)),
            format!("{}@198.18.0.12:3901", id(2))
        ]
    );
}

#[test]
fn steady_state_changes_nothing_and_publishes_the_same_status() {
    let mut o = converged();
    let s = settings(&o.cluster);
    let d = decide(&o, &s, &timing()).unwrap();
    assert!(d.create_nodes.is_empty() && d.layout.is_none() && d.reconnect.is_empty());
    assert!(d.rejoin.is_empty(), "a converged pass calls no member");
    assert_eq!(ready(&d), (true, reason::REASON_CLUSTER_READY));
    assert_eq!(d.requeue, timing().resync);
    assert!(d.notes.is_empty(), "a converged pass publishes no Event");
    // Feed the published status back: the next decision yields the identical status, so
    // act's comparison writes nothing.
    let mut published = d.status.clone();
    published.observed_generation = o.cluster.metadata.generation;
    published.conditions = Some(conditions::merge(None, &d.conditions, OWNED, Some(1)));
    let mut c = (*o.cluster).clone();
    c.status = Some(published.clone());
    o.cluster = Arc::new(c);
    let again = decide(&o, &s, &timing()).unwrap();
    let mut next = again.status.clone();
    next.observed_generation = Some(1);
    next.conditions = Some(conditions::merge(
        published.conditions.as_deref(),
        &again.conditions,
        OWNED,
        Some(1),
    ));
    assert_eq!(next, published);
}

#[test]
fn a_manual_node_joins_through_the_same_coordinator() {
    let mut o = converged();
    let m = manual("manual-a", Some(id(9)));
    o.pods.push(pod("manual-a", 30, "sts-m"));
    o.user_nodes.push(m);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let change = d.layout.clone().expect("the manual member is added");
    let tags = storage_role_tags("garage", "ns", "uid-1", &[]);
    assert_eq!(
        change.intended,
        vec![RoleChange::storage(
            id(9),
            String::from("zone-m"),
            2 << 30,
            tags
        )]
    );
    assert!(!change.bootstrap);
    assert!(!ready(&d).0);
    let statuses = d.status.nodes.unwrap();
    assert_eq!(statuses.len(), 4);
    assert_eq!(statuses[3].pod_name.as_deref(), Some("manual-a-0"));
}

#[test]
fn an_unproven_identity_is_not_planned() {
    // The recorded ID came from an older pod: the member waits for rediscovery.
    let mut o = converged();
    let mut m = manual("manual-a", Some(id(9)));
    m.status.as_mut().unwrap().observed_pod_uid = Some("an-older-pod".into());
    o.pods.push(pod("manual-a", 30, "sts-m"));
    o.user_nodes.push(m);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.layout.is_none());
    assert_eq!(ready(&d), (false, reason::REASON_NOT_ALL_REPLICAS_READY));
}

#[test]
fn an_external_node_joins_by_its_declared_address_and_id() {
    let mut o = converged();
    let mut ext = manual("vm-1", None);
    ext.spec.storage = None;
    ext.spec.node_id = Some(id(7).to_string().to_ascii_uppercase());
    ext.spec.external = Some(ExternalNodeConfig {
        address: "10.0.0.7".into(),
        port: Some(3999),
        ..Default::default()
    });
    o.user_nodes.push(ext);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(d.reconnect, vec![format!("{}@10.0.0.7:3999", id(7))]);
    let change = d.layout.expect("the external member is added");
    assert!(matches!(&change.intended[0], RoleChange::Assign { id: i, .. } if *i == id(7)));
    let statuses = d.status.nodes.unwrap();
    assert_eq!(statuses[3].pod_name, None, "external members have no pod");
}

#[test]
fn an_unsupported_node_shape_is_reported_not_planned() {
    let mut o = converged();
    let mut gw = manual("gw", Some(id(8)));
    gw.spec.gateway = Some(true);
    o.user_nodes.push(gw);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.layout.is_none());
    let (status, r) = ready(&d);
    assert!(!status);
    assert_eq!(r, reason::REASON_UNSUPPORTED);
}

#[test]
fn foreign_staged_changes_hold_the_layout_with_a_warning() {
    let mut o = converged();
    if let GarageView::Read(r) = &mut o.garage {
        r.layout = layout(
            1,
            &(0..3u8)
                .map(|n| auto_role(&format!("garage-storage-{n}"), &id(n)))
                .collect::<Vec<_>>(),
            &[serde_json::json!({"id": id(0).as_str(), "remove": true})],
        );
    }
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.layout.is_none());
    assert_eq!(ready(&d), (false, reason::REASON_FOREIGN_STAGED_CHANGES));
    assert!(
        d.notes
            .iter()
            .any(|n| n.warning && n.reason == reason::REASON_FOREIGN_STAGED_CHANGES)
    );
}

#[test]
fn a_lowered_replica_count_drains_the_highest_slot_first() {
    let mut o = converged();
    let mut c = (*o.cluster).clone();
    c.spec.storage.as_mut().unwrap().replicas = Some(2);
    o.cluster = Arc::new(c);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.layout.is_none() && d.create_nodes.is_empty() && d.delete_nodes.is_empty());
    assert_eq!(d.annotate_drain, vec!["garage-storage-2".to_string()]);
    assert_eq!(d.update_nodes.len(), 2, "the extra slot is not updated");
    // Asked to drain: at replication factor 3, three roles cannot become two.
    let slot = o.generated.get_mut(&2).unwrap();
    slot.metadata.annotations = Some(BTreeMap::from([(
        shared_types::keys::annotation::ANNOTATION_DRAIN.to_string(),
        "true".to_string(),
    )]));
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.annotate_drain.is_empty() && d.drain.is_none() && d.layout.is_none());
    let blocked = d
        .conditions
        .iter()
        .find(|c| {
            c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_SCALE_DOWN_BLOCKED
        })
        .expect("the scale-down says why it waits");
    assert_eq!(blocked.reason, reason::REASON_REPLICATION_UNSAFE);
    assert!(blocked.message.contains("garage-storage-2"));
}

/// Four converged members at factor 3, the fourth asking to drain (it may go).
fn fourth_asks_to_drain() -> Observed {
    let c = cluster(4);
    let (mut generated, pods) = auto(&c, &[true, true, true, true]);
    generated.get_mut(&3).unwrap().metadata.annotations = Some(BTreeMap::from([(
        shared_types::keys::annotation::ANNOTATION_DRAIN.to_string(),
        "true".to_string(),
    )]));
    let roles: Vec<_> = (0..4u8)
        .map(|n| auto_role(&format!("garage-storage-{n}"), &id(n)))
        .collect();
    let ids = [id(0), id(1), id(2), id(3)];
    let up: Vec<&NodeId> = ids.iter().collect();
    let mut garage = read(layout(1, &roles, &[]), &up, true);
    if let GarageView::Read(r) = &mut garage {
        r.health = Some(healthy(4));
    }
    observed(c, generated, vec![], pods, garage)
}

#[test]
fn a_drain_is_recorded_before_the_role_is_removed() {
    let o = fourth_asks_to_drain();
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let Some(crate::machine::drain::Step::Record(record)) = &d.drain else {
        panic!("expected the intent record, got {:?}", d.drain)
    };
    assert_eq!(
        record.removed_storage_node_ids,
        Some(vec![id(3).to_string()])
    );
    assert!(
        d.layout.is_none(),
        "no other layout change in the same pass"
    );
    assert_eq!(d.requeue, Duration::from_millis(500));
}

#[test]
fn switching_to_manual_hands_members_over_and_drains_none() {
    let mut o = converged();
    let mut c = (*o.cluster).clone();
    c.spec.storage.as_mut().unwrap().layout_policy = Some(LayoutPolicy::Manual);
    o.cluster = Arc::new(c);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(d.eject.len(), 3);
    assert!(d.annotate_drain.is_empty() && d.delete_nodes.is_empty() && d.drain.is_none());
    assert!(d.update_nodes.is_empty() && d.create_nodes.is_empty() && d.layout.is_none());
}

#[test]
fn the_manual_policy_generates_no_members() {
    let mut c = cluster(3);
    c.spec.storage.as_mut().unwrap().layout_policy = Some(LayoutPolicy::Manual);
    let o = observed(
        c,
        BTreeMap::new(),
        vec![],
        vec![],
        GarageView::Unavailable("x".into()),
    );
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.create_nodes.is_empty());
    assert_eq!(ready(&d), (false, reason::REASON_WAITING_FOR_MEMBERS));
}

#[test]
fn unsupported_settings_are_not_validation_failures() {
    let o = converged();
    let (status, wanted, _) = refuse(&o, &DesiredError::Unsupported("spec.gateway"), &timing());
    assert_eq!(wanted[0].reason, reason::REASON_UNSUPPORTED);
    assert!(wanted[0].message.contains("spec.gateway"));
    assert_ne!(
        status.phase,
        Some(shared_types::common::ClusterPhase::Failed)
    );
    let (status, wanted, _) = refuse(
        &o,
        &DesiredError::Invalid {
            field: "spec.storage.replicas",
            message: "must not be negative".into(),
        },
        &timing(),
    );
    assert_eq!(wanted[0].reason, reason::REASON_VALIDATION_FAILED);
    assert_eq!(
        status.phase,
        Some(shared_types::common::ClusterPhase::Failed)
    );
}

/// A converged cluster with a Manual member joining, while Garage still sees member 1 at an
/// old address; returns the pod of member 1.
fn seen_at_an_old_address(o: &mut Observed) -> &mut k8s_openapi::api::core::v1::Pod {
    o.user_nodes.push(manual("manual-a", Some(id(9))));
    o.pods.push(pod("manual-a", 30, "sts-m"));
    if let GarageView::Read(r) = &mut o.garage {
        r.status
            .nodes
            .iter_mut()
            .find(|n| n.id == id(1))
            .unwrap()
            .addr = Some("198.18.0.99:3901".into());
    }
    o.pods
        .iter_mut()
        .find(|p| p.metadata.name.as_deref() == Some("garage-storage-1-0"))
        .unwrap()
}

#[test]
fn a_restarted_member_still_seen_at_its_old_address_holds_layout_changes() {
    let mut o = converged();
    let now = o.now;
    seen_at_an_old_address(&mut o).metadata.creation_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(
        d.layout.is_none(),
        "no layout change over a stale connection"
    );
    assert!(!ready(&d).0);
    assert_eq!(
        d.rejoin.iter().map(|(h, _)| h.as_str()).collect::<Vec<_>>(),
        ["198.18.0.11"],
        "only the restarted member is asked to dial out"
    );
    // Two minutes later the hold ends even if Garage never updates the address.
    o.now += RECONNECT_GRACE;
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.layout.is_some());
}

#[test]
fn a_recent_restart_does_not_make_a_converged_cluster_unready() {
    let mut o = converged();
    for p in &mut o.pods {
        p.metadata.creation_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(o.now));
    }
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(ready(&d), (true, reason::REASON_CLUSTER_READY));
}

#[test]
fn an_unreadable_garage_mid_drain_removes_nothing_and_says_so() {
    let c = cluster(4);
    let (mut generated, pods) = auto(&c, &[true, true, true, true]);
    generated.get_mut(&3).unwrap().metadata.annotations = Some(BTreeMap::from([(
        shared_types::keys::annotation::ANNOTATION_DRAIN.to_string(),
        "true".to_string(),
    )]));
    let o = observed(
        c,
        generated,
        vec![],
        pods,
        GarageView::Unavailable("GetClusterStatus: HTTP 500".into()),
    );
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.drain.is_none() && d.delete_nodes.is_empty() && d.layout.is_none());
    let drain = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_DRAIN_READY)
        .unwrap();
    assert!(!drain.status);
    assert_eq!(drain.reason, reason::REASON_GARAGE_API_ERROR);
    assert!(drain.message.contains("HTTP 500"), "{}", drain.message);
}

#[test]
fn whole_site_retirement_is_reported_unsupported_and_removes_nothing() {
    let mut o = converged();
    let mut cluster = (*o.cluster).clone();
    cluster.metadata.annotations = Some(BTreeMap::from([(
        shared_types::keys::annotation::ANNOTATION_DRAIN.to_string(),
        "true".to_string(),
    )]));
    o.cluster = std::sync::Arc::new(cluster);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.drain.is_none() && d.layout.is_none() && d.delete_nodes.is_empty());
    let drain = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_DRAIN_READY)
        .unwrap();
    assert_eq!(
        (drain.status, drain.reason),
        (false, reason::REASON_UNSUPPORTED)
    );
}

fn with_statefulset_revision(o: &mut Observed, member: &str, revision: &str) {
    let sts = o
        .statefulsets
        .iter_mut()
        .find(|s| s.name_any() == member)
        .unwrap();
    sts.status.as_mut().unwrap().update_revision = Some(revision.into());
}

#[test]
fn a_changed_template_rolls_one_pod_recorded_first_and_holds_layout_writers() {
    let mut o = converged();
    let s = settings(&o.cluster);
    with_statefulset_revision(&mut o, "garage-storage-1", "rev-2");
    with_statefulset_revision(&mut o, "garage-storage-2", "rev-2");
    let d = decide(&o, &s, &timing()).unwrap();
    let Some(crate::machine::rollout::Step::Record(r)) = &d.rollout else {
        panic!("expected a rollout record, got {:?}", d.rollout);
    };
    assert_eq!(r.garage_node_name.as_deref(), Some("garage-storage-1"));
    assert_eq!(r.previous_pod_uid.as_deref(), Some("pod-garage-storage-1"));
    let rollout = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_ROLLOUT_READY)
        .unwrap();
    assert_eq!(
        (rollout.status, rollout.reason),
        (false, reason::REASON_STORAGE_ROLLING_OUT)
    );
    // With the record written, the next pass deletes exactly that pod, and nothing else of
    // the layout moves meanwhile.
    let mut c = (*o.cluster).clone();
    c.status.get_or_insert_default().storage_rollout = Some((**r).clone());
    o.cluster = Arc::new(c);
    let d = decide(&o, &s, &timing()).unwrap();
    assert_eq!(
        d.rollout,
        Some(crate::machine::rollout::Step::DeletePod {
            name: "garage-storage-1-0".into(),
            uid: "pod-garage-storage-1".into()
        })
    );
    assert!(d.layout.is_none());
}

#[test]
fn old_config_revisions_go_only_once_the_rollout_converged_and_nothing_mounts_them() {
    let mut o = converged();
    let s = settings(&o.cluster);
    let cm = |name: &str| -> k8s_openapi::api::core::v1::ConfigMap {
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap()
    };
    let revision = crate::desired::config::revision(&o.cluster, &s).unwrap();
    let current = revision.name;
    let hash16 = revision.revision[..16].to_owned();
    o.config_maps = vec![cm(&current), cm("garage-config-000000000000"), cm("other")];
    let d = decide(&o, &s, &timing()).unwrap();
    assert_eq!(
        d.prune_configs,
        vec!["garage-config-000000000000".to_owned()]
    );
    // A template that still mounts it keeps it.
    let mut kept = o.statefulsets[0].clone();
    kept.spec = Some(serde_json::from_value(serde_json::json!({
        "selector": {}, "serviceName": "x",
        "template": {
            "metadata": {"annotations": {shared_types::keys::annotation::ANNOTATION_CONFIG_HASH: &hash16}},
            "spec": {"containers": [], "volumes": [
                {"name": "config", "configMap": {"name": "garage-config-000000000000"}},
                {"name": "admin-token", "secret": {"secretName": "garage-admin-token"}},
            ]},
        },
    })).unwrap());
    o.statefulsets[0] = kept;
    assert!(decide(&o, &s, &timing()).unwrap().prune_configs.is_empty());
    // While pods still run an old revision, nothing is pruned.
    let mut o = converged();
    o.config_maps = vec![cm("garage-config-000000000000")];
    with_statefulset_revision(&mut o, "garage-storage-0", "rev-2");
    assert!(decide(&o, &s, &timing()).unwrap().prune_configs.is_empty());
}

#[test]
fn a_node_that_shares_its_id_with_another_is_never_drained() {
    // As in the drain test above, but the fourth member reports the third member's ID (a
    // copied metadata directory): removing that role would take it from the third too.
    let c = cluster(4);
    let (mut generated, pods) = auto(&c, &[true, true, true, true]);
    generated.get_mut(&3).unwrap().metadata.annotations = Some(BTreeMap::from([(
        shared_types::keys::annotation::ANNOTATION_DRAIN.to_string(),
        "true".to_string(),
    )]));
    let copied = generated[&2].status.clone();
    generated.get_mut(&3).unwrap().status = copied;
    let roles: Vec<_> = (0..3u8)
        .map(|n| auto_role(&format!("garage-storage-{n}"), &id(n)))
        .collect();
    let ids = [id(0), id(1), id(2)];
    let up: Vec<&NodeId> = ids.iter().collect();
    let o = observed(
        c,
        generated,
        vec![],
        pods,
        read(layout(1, &roles, &[]), &up, true),
    );
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.drain.is_none(), "nothing is drained: {:?}", d.drain);
    let drain = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_DRAIN_READY)
        .unwrap();
    assert_eq!(
        (drain.status, drain.reason),
        (false, reason::REASON_IDENTITY_COLLISION)
    );
}

#[test]
fn a_spec_change_not_yet_rendered_into_every_workload_is_not_converged() {
    // The cluster's new spec has not reached garage-storage-1 yet (its rendered hash is the
    // old one): its StatefulSet still shows the old revision, which must not count as current.
    let mut o = converged();
    let s = settings(&o.cluster);
    o.generated
        .get_mut(&1)
        .unwrap()
        .metadata
        .annotations
        .get_or_insert_default()
        .insert(
            shared_types::keys::annotation::ANNOTATION_RENDERED_HASH.into(),
            "from-an-older-spec".into(),
        );
    let d = decide(&o, &s, &timing()).unwrap();
    let rollout = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_ROLLOUT_READY)
        .unwrap();
    assert!(!rollout.status, "{}", rollout.message);
    assert!(
        rollout.message.contains("garage-storage-1"),
        "{}",
        rollout.message
    );
    assert!(
        d.rollout.is_none(),
        "nothing is replaced before the workload is rendered"
    );
}

/// What a pass starts: a layout change, a drain (its intent record), a pod replacement (its
/// rollout record).
fn started(d: &Decision) -> (bool, bool, bool) {
    (
        d.layout.is_some(),
        matches!(d.drain, Some(crate::machine::drain::Step::Record(_))),
        matches!(d.rollout, Some(crate::machine::rollout::Step::Record(_))),
    )
}

#[test]
fn a_pass_starts_one_transaction_at_most() {
    // A drain asked for and a changed template at once: the second member's StatefulSet
    // wants a new revision.
    let mut o = fourth_asks_to_drain();
    with_statefulset_revision(&mut o, "garage-storage-1", "rev-2");
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(started(&d), (false, true, false), "the drain starts alone");

    // A drifted role and a changed template at once.
    let mut o = converged();
    if let GarageView::Read(r) = &mut o.garage {
        let mut roles: Vec<_> = (0..3u8)
            .map(|n| auto_role(&format!("garage-storage-{n}"), &id(n)))
            .collect();
        roles[0]["zone"] = "elsewhere".into();
        r.layout = layout(1, &roles, &[]);
    }
    with_statefulset_revision(&mut o, "garage-storage-1", "rev-2");
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert_eq!(
        started(&d),
        (true, false, false),
        "the layout change goes alone"
    );
    let rollout = d
        .conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_ROLLOUT_READY)
        .unwrap();
    assert_eq!(rollout.reason, reason::REASON_STORAGE_ROLLOUT_WAITING);
}

#[test]
fn the_reconnect_grace_follows_the_api_servers_clock_not_the_nodes() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::SignedDuration;
    // Created just now, on a Node whose clock is an hour behind or ahead: still held.
    for skew in [-3600, 3600] {
        let mut o = converged();
        let now = o.now;
        let p = seen_at_an_old_address(&mut o);
        p.metadata.creation_timestamp = Some(Time(now));
        p.status.as_mut().unwrap().start_time = Some(Time(now + SignedDuration::from_secs(skew)));
        let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
        assert!(d.layout.is_none(), "skew {skew}: a fresh pod held nothing");
    }
    // Created long ago, though its Node's clock says it started just now: nothing to wait for.
    let mut o = converged();
    let now = o.now;
    let p = seen_at_an_old_address(&mut o);
    p.metadata.creation_timestamp = Some(Time(now - RECONNECT_GRACE * 2));
    p.status.as_mut().unwrap().start_time = Some(Time(now));
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(
        d.layout.is_some(),
        "an old pod's skewed start time held the layout"
    );
}
