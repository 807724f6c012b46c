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
use shared_types::keys::annotation::ANNOTATION_PAUSE_RECONCILE;

use super::decision::{Decision, OWNED, RECONNECT_GRACE, decide, refuse};
use super::observed::{GarageRead, GarageView, Observed};
use crate::conditions;
use crate::config::Config;
use crate::desired::DesiredError;
use crate::fixtures::*;
use crate::layout::tags::storage_role_tags;
use garage_api_types::{NodeId, RoleChange};

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
        generated,
        user_nodes,
        pods,
        statefulsets,
        ..observed_cluster(c, garage)
    }
}

fn read(layout: garage_api_types::ClusterLayout, up: &[&NodeId], health: bool) -> GarageView {
    let version = layout.version;
    GarageView::Read(Box::new(GarageRead {
        status: status(version, up),
        history: settled(version),
        layout,
        health: health.then(|| healthy(3)),
        every_view_healthy: health,
        build: None,
        worker_variables: BTreeMap::new(),
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
    let services: Vec<String> = d.services.iter().map(|v| v.name_any()).collect();
    assert_eq!(services, ["garage-headless", "garage", "garage-admin"]);
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
fn a_garage_node_behind_the_recorded_layout_is_never_written_through() {
    // The layout was seen at version 2; the node answering now has an empty one, as a pod
    // that has just started answers before it has joined its peers.
    let with_recorded = |version: i64| {
        let mut c = cluster(3);
        c.status.get_or_insert_with(Default::default).layout_version = Some(version);
        bootstrapping(c)
    };
    let o = with_recorded(2);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(
        d.layout.is_none(),
        "a layout written through a node behind the cluster"
    );
    assert_eq!(
        d.status.layout_version,
        Some(2),
        "the recorded version went back"
    );
    let held = d
        .conditions
        .iter()
        .find(|c| c.type_ == "LayoutReady" || c.message.contains("has not caught up"));
    assert!(
        held.is_some_and(|c| c.message.contains("has not caught up")),
        "no condition says why: {:?}",
        d.conditions
    );
    // Caught up, the same members plan normally.
    let o = with_recorded(0);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.layout.is_some_and(|c| c.bootstrap));
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
fn a_suspended_member_gets_no_layout_change() {
    for annotation in [None, Some(ANNOTATION_PAUSE_RECONCILE)] {
        let mut o = converged();
        let mut m = manual("manual-a", Some(id(9)));
        match annotation {
            Some(a) => {
                m.metadata
                    .annotations
                    .get_or_insert_default()
                    .insert(a.into(), "true".into());
            }
            None => {
                m.spec.maintenance = Some(shared_types::common::MaintenanceConfig {
                    suspended: Some(true),
                });
            }
        }
        o.pods.push(pod("manual-a", 30, "sts-m"));
        o.user_nodes.push(m);
        let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
        assert!(d.layout.is_none(), "{annotation:?}: {:?}", d.layout);
    }
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

#[test]
fn a_scale_down_waits_for_a_suspended_slot_instead_of_draining_it() {
    let mut o = converged();
    let mut c = (*o.cluster).clone();
    c.spec.storage.as_mut().unwrap().replicas = Some(2);
    o.cluster = Arc::new(c);
    o.generated.get_mut(&2).unwrap().spec.maintenance =
        Some(shared_types::common::MaintenanceConfig {
            suspended: Some(true),
        });
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.annotate_drain.is_empty() && d.drain.is_none() && d.layout.is_none());
    let blocked: Vec<_> = d
        .conditions
        .iter()
        .filter(|c| {
            c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_SCALE_DOWN_BLOCKED
        })
        .collect();
    assert_eq!(blocked.len(), 1);
    assert_eq!(blocked[0].reason, reason::REASON_MAINTENANCE_SUSPENDED);
    assert!(blocked[0].message.contains("garage-storage-2"));
}

fn ask_to_cycle(n: &mut GarageNode) {
    n.metadata.annotations = Some(BTreeMap::from([(
        shared_types::keys::annotation::ANNOTATION_CYCLE.to_string(),
        "true".to_string(),
    )]));
}

#[test]
fn a_slot_in_a_cycle_is_neither_drained_by_a_scale_down_nor_re_rendered() {
    let mut o = converged();
    let mut c = (*o.cluster).clone();
    c.spec.storage.as_mut().unwrap().replicas = Some(2);
    o.cluster = Arc::new(c);
    ask_to_cycle(o.generated.get_mut(&2).unwrap());
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(d.annotate_drain.is_empty() && d.delete_nodes.is_empty());
    let blocked = d
        .conditions
        .iter()
        .find(|c| {
            c.type_ == shared_types::conditions::cluster::CONDITION_STORAGE_SCALE_DOWN_BLOCKED
        })
        .expect("the scale-down says why it waits");
    assert_eq!(blocked.reason, reason::REASON_CYCLE_BLOCKED);
    // Below the replica count, a cycling slot keeps the spec its sibling was cloned from:
    // admission would refuse a change to it, failing the whole pass.
    let mut o = converged();
    ask_to_cycle(o.generated.get_mut(&1).unwrap());
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let names: Vec<String> = d.update_nodes.iter().map(|n| n.name_any()).collect();
    assert_eq!(names, ["garage-storage-0", "garage-storage-2"]);
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
fn a_drain_that_only_waits_is_looked_at_on_its_own_cadence() {
    let mut o = fourth_asks_to_drain();
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    let Some(crate::machine::drain::Step::Record(record)) = d.drain else {
        panic!("expected the intent record")
    };
    let mut c = (*o.cluster).clone();
    c.status.get_or_insert_with(Default::default).storage_drain = Some(record);
    o.cluster = Arc::new(c);
    // Garage does not answer: the recorded drain waits, and nothing else is going on.
    o.garage = GarageView::Unavailable("no pod answers".into());
    let t = Config {
        drain_requeue: Duration::from_secs(7),
        ..timing()
    };
    let d = decide(&o, &settings(&o.cluster), &t).unwrap();
    assert_eq!(d.requeue, Duration::from_secs(7));
    // A shorter cadence than the short requeue never polls faster than it.
    let t = Config {
        drain_requeue: Duration::from_secs(1),
        ..timing()
    };
    let d = decide(&o, &settings(&o.cluster), &t).unwrap();
    assert_eq!(d.requeue, timing().short_requeue);
}

#[test]
fn a_requested_recovery_runs_in_a_pass_of_its_own_before_the_drain_step() {
    let mut o = fourth_asks_to_drain();
    let mut c = (*o.cluster).clone();
    c.metadata.annotations.get_or_insert_default().insert(
        shared_types::keys::annotation::ANNOTATION_SKIP_DEAD_NODES.to_string(),
        "true".to_string(),
    );
    o.cluster = Arc::new(c);
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    // The recovery removes its annotations, which moves the resourceVersion the drain
    // record is written against: the record waits for the next pass.
    assert_eq!(d.skip_dead_nodes, Some(false));
    assert!(
        d.drain.is_none(),
        "drain step beside the recovery: {:?}",
        d.drain
    );
    // Once the annotation is gone, the same world records the drain.
    let o = fourth_asks_to_drain();
    let d = decide(&o, &settings(&o.cluster), &timing()).unwrap();
    assert!(matches!(
        d.drain,
        Some(crate::machine::drain::Step::Record(_))
    ));
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

mod gateways;
mod transitions;

mod capacity_gates;

/// Every Auto member asks for 2Gi (its spec and its data volume) while its role has 1Gi.
fn grown(claims: Vec<k8s_openapi::api::core::v1::PersistentVolumeClaim>) -> Observed {
    let mut o = converged();
    for gn in o.generated.values_mut() {
        gn.spec.capacity = Some(k8s_openapi::apimachinery::pkg::api::resource::Quantity(
            "2Gi".into(),
        ));
        let storage = gn.spec.storage.as_mut().unwrap();
        storage.data.as_mut().unwrap().size = Some(
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("2Gi".into()),
        );
    }
    o.claims = claims;
    o
}

#[test]
fn a_larger_size_reaches_the_layout_only_after_the_claims_and_one_member_at_a_time() {
    // The defect: the layout followed the asked size while the disks had not grown.
    let d = decide(&grown(vec![]), &settings(&converged().cluster), &timing()).unwrap();
    assert!(d.layout.is_none(), "capacity staged ahead of the disks");
    assert!(d.conditions.iter().any(|c| c.type_
        == shared_types::conditions::cluster::CONDITION_STORAGE_EXPANSION_IN_PROGRESS
        && c.reason == reason::REASON_CAPACITY_HELD));
    let proven = (0..3)
        .map(|n| {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("data-garage-storage-{n}-0")},
                "spec": {"resources": {"requests": {"storage": "2Gi"}}},
                "status": {"phase": "Bound", "capacity": {"storage": "2Gi"}},
            }))
            .unwrap()
        })
        .collect();
    let d = decide(&grown(proven), &settings(&converged().cluster), &timing()).unwrap();
    let change = d.layout.expect("the grown disks reach the layout");
    assert_eq!(change.stage.len(), 1, "one member's capacity per version");
}

#[test]
fn a_factor_the_running_pods_cannot_take_is_refused_until_set_back() {
    use k8s_openapi::api::core::v1::{ConfigMap, ConfigMapVolumeSource, Volume};
    let mut o = converged();
    let s = settings(&o.cluster);
    let config = config_map_running(&mut o, "garage-config-a", 3);
    o.config_maps.push(config);
    assert!(super::factor::refused_change(&o, 3).is_none());
    let e = super::factor::refused_change(&o, 2).expect("refused");
    assert_eq!(e.reported_as().0, reason::REASON_UNSUPPORTED);
    let text = e.to_string();
    assert!(
        text.contains("spec.replication.factor") && text.contains("back to 3"),
        "{text}"
    );
    // Before the first layout nothing is persisted: the factor may still change.
    let mut fresh = converged();
    let config = config_map_running(&mut fresh, "garage-config-a", 3);
    fresh.config_maps.push(config);
    if let GarageView::Read(r) = &mut fresh.garage {
        r.layout.version = 0;
    }
    assert!(super::factor::refused_change(&fresh, 2).is_none());
    // No pod runs yet and no workload renders one: nothing to compare with.
    let mut empty = converged();
    empty.pods.clear();
    empty.statefulsets.clear();
    assert!(super::factor::refused_change(&empty, s.replication_factor + 1).is_none());
    // Every pod down, but the workloads would start them on the running factor.
    let mut down = converged();
    let config = config_map_running(&mut down, "garage-config-a", 3);
    down.config_maps.push(config);
    let volumes = down.pods[0].spec.as_ref().unwrap().volumes.clone();
    for sts in &mut down.statefulsets {
        sts.spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .volumes = volumes.clone();
    }
    down.pods.clear();
    down.garage = GarageView::Unavailable("no pod answers".into());
    assert!(super::factor::refused_change(&down, 2).is_some());

    fn config_map_running(o: &mut Observed, name: &str, factor: u32) -> ConfigMap {
        for p in &mut o.pods {
            p.spec.get_or_insert_default().volumes = Some(vec![Volume {
                name: "config".into(),
                config_map: Some(ConfigMapVolumeSource {
                    name: name.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }]);
        }
        ConfigMap {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            data: Some(BTreeMap::from([(
                "garage.toml".to_owned(),
                format!("metadata_dir = \"/data/metadata\"\nreplication_factor = {factor}\n"),
            )])),
            ..Default::default()
        }
    }
}
