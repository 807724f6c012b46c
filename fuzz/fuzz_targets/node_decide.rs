//! Feeds the GarageNode decision (`controller::node::decide::decide`) an arbitrary GarageNode
//! and an arbitrary observed world: its parent (present, absent, refused, being torn down),
//! the parent's drain and rollout records, its StatefulSet, Service, pod and the identity the
//! pod reports, its claims and, for a pool member, its Kubernetes Node.
//!
//! Input: a GarageNode manifest as JSON (the sample manifests are the seeds), a NUL byte, then
//! bytes that describe the world (`NodeWorld` below). No world bytes is a node of a present
//! parent with no workload yet.
//!
//! Invariants, beyond "no panic":
//! - the decision is a function of its input;
//! - the status it publishes settles: fed back as the node's status, the next pass may act
//!   on the identity the first recorded, and the pass after that publishes the same status;
//! - its conditions have distinct types, all among the types it owns;
//! - a node that is not being deleted keeps its finalizer and its workload;
//! - the workload is deleted and the finalizer released only for a node being deleted whose
//!   parent is torn down under `deletionPolicy: Destroy`, or whose drain the parent recorded
//!   as complete for exactly this incarnation and identity (hash-consistent), or that never
//!   ran anything; and the finalizer goes only once no workload is left;
//! - a gateway's workload stops only once its role is out of the layout: the parent's
//!   role-only transaction for exactly this incarnation completed, naming its identity (or it
//!   has no parent or no identity);
//! - a recorded identity is never replaced by another (a pod reporting another ID is a
//!   different identity), except a live gateway's whose old identity the parent's role-only
//!   transaction for it retires; and a pinned `spec.nodeId` is the only identity ever recorded;
//! - an acknowledged lost source recorded by the parent runs no pod: its StatefulSet, if
//!   rendered, has no replica;
//! - a StatefulSet is not rendered again for the recorded rollout actor once the rollout
//!   remembers the maximum of retired incarnations.

#![no_main]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use arbitrary::Arbitrary;
use decide::Config;
use decide::conditions;
use decide::node::decision::{Decision, OWNED, decide};
use decide::node::expansion::{Sized, request_and_capacity};
use decide::node::observed::{Discovered, Observed};
use decide::node::volumes::Claim;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use libfuzzer_sys::fuzz_target;
use operator_fuzz::input;
use operator_fuzz::world::{AckLost, at, id};
use reconciler::desired::{Settings, nodes};
use reconciler::garage::NodeId;
use reconciler::machine::rollout::MAX_RETIRED_WORKLOADS;
use serde_json::json;
use shared_types::drain::{Phase, actor_is_node, hash_consistent, phase, target_hash};
use shared_types::garage_cluster::common::{
    DeletionPolicy, DrainActor, DrainActorKind, StorageDrainStatus, StorageRolloutStatus,
};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{GarageNode, GarageNodeStatus};
use shared_types::keys::annotation::{ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_DRAIN};
use shared_types::keys::finalizer::FINALIZER_NODE;

/// The node's parent.
#[derive(Debug, Clone, Copy, Arbitrary)]
enum Parent {
    Present,
    Absent,
    /// Its spec asks for something this version refuses.
    Refused,
    /// Being deleted, with this policy.
    Deleting {
        destroy: bool,
    },
}

/// The identity recorded on the node.
#[derive(Debug, Clone, Copy, Arbitrary)]
enum Recorded {
    Own,
    None,
    Other,
    Garbage,
    /// Its own, in upper case.
    OwnUpper,
}

/// The identity the pod reports.
#[derive(Debug, Clone, Copy, Arbitrary)]
enum Reports {
    Own,
    Other,
}

#[derive(Debug, Clone, Copy, Arbitrary)]
struct DrainW {
    names_this: bool,
    uid_mismatch: bool,
    completed: bool,
    hash_broken: bool,
    lost: bool,
    other_id: bool,
}

#[derive(Debug, Clone, Copy, Arbitrary)]
struct ClaimW {
    desired: Option<u8>,
    exists: bool,
    bound: bool,
    class: Option<u8>,
    refused: bool,
    /// `(asked, requested, reported)` sizes in Gi (each 1 to 4), and whether a growth of it
    /// was refused.
    size: (u8, u8, u8),
    growth_refused: bool,
}

#[derive(Debug, Clone, Arbitrary)]
struct NodeWorld {
    parent: Parent,
    no_finalizer: bool,
    deleting: bool,
    recorded: Recorded,
    observed_from_pod: bool,
    pinned: bool,
    drain_annotation: bool,
    ack_lost: AckLost,
    pool: bool,
    statefulset: bool,
    service: bool,
    pod: bool,
    discovered: Option<Reports>,
    config_unpublished: bool,
    drain: Option<DrainW>,
    drain_condition: Option<(bool, u8)>,
    rollout_retired: Option<u8>,
    claims: Vec<ClaimW>,
    host: Option<(bool, bool)>,
    /// What was read of the Node for zoneFrom: nothing, unknown, a label, or a refusal.
    zone_host: Option<Option<Option<bool>>>,
}

const OWN: u8 = 0x11;

fn parent(node: &GarageNode, w: &NodeWorld) -> Option<GarageCluster> {
    if matches!(w.parent, Parent::Absent) {
        return None;
    }
    let mut spec = json!({"storage": {"replicas": 3, "metadata": {"size": "100Mi", "storageClassName": "local-sim"}, "data": {"size": "1Gi", "storageClassName": "local-sim"}}});
    if matches!(w.parent, Parent::Refused) {
        spec["gateway"] = json!({"replicas": 1});
    }
    if let Parent::Deleting { destroy } = w.parent {
        spec["deletionPolicy"] = json!(if destroy { "Destroy" } else { "Drain" });
    }
    let mut c: GarageCluster = serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
        "metadata": {"name": node.spec.cluster_ref.name, "namespace": node.namespace(), "uid": "uid-1", "generation": 1},
        "spec": spec,
    }))
    .ok()?;
    if matches!(w.parent, Parent::Deleting { .. }) {
        c.metadata.deletion_timestamp = Some(Time(at(0)));
    }
    let own = id(OWN).to_string();
    let mut status = shared_types::garage_cluster::v1beta2::GarageClusterStatus::default();
    if let Some(d) = w.drain {
        let node_id = if d.other_id {
            id(0x12).to_string()
        } else {
            own.clone()
        };
        let ids = vec![node_id];
        let lost = if d.lost { ids.clone() } else { vec![] };
        status.storage_drain = Some(StorageDrainStatus {
            actor: Some(DrainActor {
                api_version: Some("garage.rajsingh.info/v1beta1".into()),
                kind: Some(DrainActorKind::GarageNode),
                namespace: node.namespace(),
                name: Some(if d.names_this {
                    node.name_any()
                } else {
                    "another".into()
                }),
                uid: Some(if d.uid_mismatch {
                    "uid-earlier".into()
                } else {
                    node.metadata.uid.clone().unwrap_or_default()
                }),
            }),
            target_hash: Some(if d.hash_broken {
                "sha256:broken".into()
            } else {
                target_hash(&ids, &ids, &lost)
            }),
            role_removal_node_ids: Some(ids.clone()),
            removed_storage_node_ids: Some(ids),
            unavailable_source_node_ids: d.lost.then_some(lost),
            completed_at: d.completed.then(|| Time(at(0))),
            ..StorageDrainStatus::default()
        });
    }
    if let Some((status_true, r)) = w.drain_condition {
        let reasons = [
            "ReplicationUnsafe",
            "UnverifiedPeersBlocked",
            "Draining",
            "NodeDrainBlocked",
        ];
        status.conditions =
            Some(vec![serde_json::from_value(json!({
            "type": "StorageDrainReady", "status": if status_true { "True" } else { "False" },
            "reason": reasons[usize::from(r) % reasons.len()], "message": "m",
            "lastTransitionTime": Time(at(0)),
        })).ok()?]);
    }
    if let Some(retired) = w.rollout_retired {
        status.storage_rollout = Some(StorageRolloutStatus {
            garage_node_uid: node.metadata.uid.clone(),
            garage_node_name: Some(node.name_any()),
            retired_workload_uids: Some((0..retired % 40).map(|k| format!("sts-{k}")).collect()),
            ..StorageRolloutStatus::default()
        });
    }
    c.status = Some(status);
    Some(c)
}

fn observed(mut node: GarageNode, w: &NodeWorld) -> Observed {
    let own = id(OWN);
    let name = node.name_any();
    if w.pool {
        node.spec.backing = Some(shared_types::garage_node::NodeBacking::NodeLocalPool);
        node.spec.node_local_pool_name = Some("fast".into());
        node.spec.kubernetes_node_name = Some("worker-1".into());
    }
    if w.pinned {
        node.spec.node_id = Some(own.to_string());
    }
    if !w.no_finalizer {
        node.metadata
            .finalizers
            .get_or_insert_default()
            .push(FINALIZER_NODE.into());
    }
    if w.deleting {
        node.metadata.deletion_timestamp = Some(Time(at(0)));
    }
    let annotations = node.metadata.annotations.get_or_insert_default();
    if w.drain_annotation {
        annotations.insert(ANNOTATION_DRAIN.into(), "true".into());
    }
    if let Some(value) = w.ack_lost.value(&own) {
        annotations.insert(ANNOTATION_ACKNOWLEDGE_LOST_SOURCE.into(), value);
    }
    let recorded = match w.recorded {
        Recorded::Own => Some(own.to_string()),
        Recorded::OwnUpper => Some(own.to_string().to_ascii_uppercase()),
        Recorded::None => None,
        Recorded::Other => Some(id(0x12).to_string()),
        Recorded::Garbage => Some("not-an-id".into()),
    };
    if recorded.is_some() || node.status.is_some() {
        let status = node.status.get_or_insert_with(GarageNodeStatus::default);
        status.node_id = recorded;
        status.observed_pod_uid = w.observed_from_pod.then(|| "pod-uid".to_owned());
    }
    let parent = parent(&node, w);
    let settings = parent.as_ref().map(Settings::from_cluster);
    let pod: Option<Pod> = w.pod.then(|| {
        serde_json::from_value(json!({
            "metadata": {"name": format!("{name}-0"), "namespace": node.namespace(), "uid": "pod-uid"},
            "status": {"phase": "Running", "podIP": "198.18.0.7"},
        }))
        .ok()
    }).flatten();
    let statefulset = w
        .statefulset
        .then(|| serde_json::from_value(json!({"metadata": {"name": name, "uid": "sts-uid"}})).ok())
        .flatten();
    let discovered = w.discovered.filter(|_| pod.is_some()).map(|r| Discovered {
        id: match r {
            Reports::Own => own.clone(),
            Reports::Other => id(0x12),
        },
        pod_uid: "pod-uid".into(),
        ip: "198.18.0.7".into(),
    });
    let gi = |n: u8| format!("{}Gi", n % 4 + 1);
    let claims: Vec<Claim> = w
        .claims
        .iter()
        .take(3)
        .enumerate()
        .map(|(i, c)| Claim {
            name: format!("data-{name}-{i}"),
            desired: c.desired.map(|d| format!("class-{}", d % 3)),
            pvc: c
                .exists
                .then(|| {
                    serde_json::from_value(json!({
                    "metadata": {"name": format!("data-{name}-{i}")},
                    "spec": {
                        "volumeAttributesClassName": c.class.map(|d| format!("class-{}", d % 3)),
                        "resources": {"requests": {"storage": gi(c.size.1)}},
                    },
                    "status": {
                        "phase": if c.bound { "Bound" } else { "Pending" },
                        "capacity": {"storage": gi(c.size.2)},
                    },
                }))
                .ok()
                })
                .flatten(),
            refused: c.refused,
        })
        .collect();
    let expansions = claims
        .iter()
        .zip(&w.claims)
        .map(|(c, cw)| Sized {
            name: c.name.clone(),
            want: Quantity(gi(cw.size.0)),
            pvc: c.pvc.clone(),
            refused: cw.growth_refused.then(|| "refused".to_owned()),
        })
        .collect();
    let host: Option<Node> = w.host.and_then(|(activation, identity)| {
        let mut labels = BTreeMap::new();
        let mut annotations = BTreeMap::new();
        if let Some(Ok(s)) = &settings {
            if activation {
                labels.insert(
                    reconciler::desired::pool::activation_key(s, "fast"),
                    "active".to_owned(),
                );
            }
            if identity {
                annotations.insert(
                    reconciler::desired::pool::node_id_key(s, "fast"),
                    own.to_string(),
                );
            }
        }
        serde_json::from_value(
            json!({"metadata": {"name": "worker-1", "labels": labels, "annotations": annotations}}),
        )
        .ok()
    });
    Observed {
        node: Arc::new(node),
        parent,
        settings,
        config_published: !w.config_unpublished,
        statefulset,
        service_exists: w.service,
        pod,
        discovered,
        host,
        claims,
        expansions,
        zone_host: match w.zone_host {
            None => decide::zone::HostZone::NotRead,
            Some(None) => decide::zone::HostZone::Unknown,
            Some(Some(Some(labelled))) => {
                decide::zone::HostZone::Read(labelled.then(|| "rack-f".to_owned()))
            }
            Some(Some(None)) => decide::zone::HostZone::Forbidden("forbidden".into()),
        },
    }
}

/// The parent's drain record, when it is hash-consistent and names exactly this incarnation,
/// with the identity the node recorded.
fn own_record(o: &Observed) -> Option<(&StorageDrainStatus, &String)> {
    let node = o.node.as_ref();
    let record = o.parent.as_ref()?.status.as_ref()?.storage_drain.as_ref()?;
    let recorded = node.status.as_ref()?.node_id.as_ref()?;
    let uid = node.metadata.uid.as_deref().unwrap_or_default();
    let ns = node.namespace().unwrap_or_default();
    (hash_consistent(record) && actor_is_node(record, &ns, &node.name_any(), uid))
        .then_some((record, recorded))
}

/// The parent's drain record is complete for exactly this incarnation and its identity.
fn drain_proven(o: &Observed) -> bool {
    own_record(o).is_some_and(|(r, id)| {
        phase(Some(r)) == Phase::Completed
            && r.removed_storage_node_ids.iter().flatten().any(|i| i == id)
    })
}

/// A gateway's role is out of the layout, or was never there: its parent is gone, it never
/// recorded an identity, or the parent's completed role-only transaction for exactly this
/// incarnation removed the identity it recorded. A gateway stores no data, so nothing more is
/// proven before its pod stops.
fn gateway_out(o: &Observed) -> bool {
    let recorded = o.node.status.as_ref().and_then(|s| s.node_id.as_ref());
    o.parent.is_none()
        || recorded.is_none()
        || own_record(o).is_some_and(|(r, id)| {
            phase(Some(r)) == Phase::Completed
                && r.removed_storage_node_ids.iter().flatten().next().is_none()
                && r.role_removal_node_ids.iter().flatten().any(|i| i == id)
        })
}

/// The parent's role-only transaction for this live gateway incarnation retires its recorded
/// identity `old`: the one case where a recorded identity gives way to the one its pod reports
/// (a gateway whose metadata was lost swaps its role onto the new identity).
fn swapped(o: &Observed, old: &str) -> bool {
    nodes::is_gateway(o.node.as_ref())
        && o.node.metadata.deletion_timestamp.is_none()
        && own_record(o).is_some_and(|(r, _)| {
            r.removed_storage_node_ids.iter().flatten().next().is_none()
                && r.role_removal_node_ids.iter().flatten().any(|i| i == old)
        })
}

/// The parent recorded this incarnation's identity as a lost source it acknowledges.
fn fenced(o: &Observed) -> bool {
    own_record(o).is_some_and(|(r, id)| {
        o.node
            .annotations()
            .get(ANNOTATION_ACKNOWLEDGE_LOST_SOURCE)
            .is_some_and(|v| v.eq_ignore_ascii_case(id))
            && r.unavailable_source_node_ids
                .iter()
                .flatten()
                .any(|i| i == id)
    })
}

fn check(o: &Observed, d: &Decision) {
    let node = o.node.as_ref();
    let deleting = node.metadata.deletion_timestamp.is_some();
    operator_fuzz::facts::owned_and_distinct(&d.conditions, OWNED);
    grow_only(o, d);

    if !deleting {
        assert!(
            d.finalizer != Some(false) && !d.delete_workload,
            "a live node loses its finalizer or workload"
        );
    }
    if d.finalizer == Some(false) || d.delete_workload {
        assert!(deleting && node.finalizers().iter().any(|f| f == FINALIZER_NODE));
        let destroying = o.parent.as_ref().is_some_and(|c| {
            c.metadata.deletion_timestamp.is_some()
                && c.effective_deletion_policy() == DeletionPolicy::Destroy
        });
        let nothing_ran = nodes::shape(node).is_err() && o.statefulset.is_none() && o.pod.is_none();
        if nodes::is_gateway(node) {
            assert!(
                destroying || gateway_out(o) || nothing_ran,
                "a gateway's workload stops while its role may still be in the layout"
            );
        } else {
            assert!(
                destroying || drain_proven(o) || nothing_ran,
                "a storage identity's workload stops without a teardown or a completed drain"
            );
        }
    }
    if d.finalizer == Some(false) {
        assert!(o.pod.is_none(), "the finalizer goes while the pod runs");
        if !matches!(nodes::shape(node), Ok(nodes::NodeShape::Pool { .. })) {
            assert!(
                o.statefulset.is_none() && !o.service_exists,
                "the finalizer goes before the workload"
            );
        }
    }
    if let Some(status) = &d.status
        && !matches!(nodes::shape(node), Ok(nodes::NodeShape::External { .. }))
    {
        let parse = |v: Option<&String>| v.and_then(|v| v.parse::<NodeId>().ok());
        let before = parse(node.status.as_ref().and_then(|s| s.node_id.as_ref()));
        let after = parse(status.node_id.as_ref());
        if let (Some(b), Some(a)) = (&before, &after)
            && !swapped(o, &b.to_string())
        {
            assert_eq!(a, b, "a recorded identity was replaced");
        }
        let pinned = node
            .spec
            .node_id
            .as_deref()
            .and_then(|p| p.to_ascii_lowercase().parse::<NodeId>().ok());
        if let (Some(p), Some(a)) = (&pinned, &after)
            && before.as_ref() != Some(a)
        {
            assert_eq!(a, p, "an identity other than the pinned one was recorded");
        }
    }
    if fenced(o)
        && let Some(sts) = &d.statefulset
    {
        assert_eq!(
            sts.spec.as_ref().and_then(|s| s.replicas),
            Some(0),
            "a lost source runs again"
        );
    }
    let capped = o
        .parent
        .as_ref()
        .and_then(|c| c.status.as_ref())
        .and_then(|s| s.storage_rollout.as_ref())
        .is_some_and(|r| {
            r.garage_node_uid == node.metadata.uid
                && r.retired_workload_uids.as_ref().map_or(0, Vec::len) >= MAX_RETIRED_WORKLOADS
        });
    if capped && o.statefulset.is_none() {
        assert!(
            d.statefulset.is_none(),
            "a workload is created past the retired-incarnation limit"
        );
    }
}

/// The status act publishes for `d` over the node's current status, or `None` when `d`
/// leaves status alone.
fn published(node: &GarageNode, d: &Decision) -> Option<GarageNodeStatus> {
    let generation = node.metadata.generation;
    let mut out = d.status.clone()?;
    out.observed_generation = generation;
    out.conditions = Some(conditions::merge(
        node.status.as_ref().and_then(|c| c.conditions.as_deref()),
        &d.conditions,
        OWNED,
        generation,
    ));
    Some(out)
}

/// Publishes the decision's status as act would and decides again, twice: the first status
/// may record the identity the pod reports, which the next pass reads (a recorded identity
/// is what a drain record or a lost-source fence is checked against), but the one after
/// that must not change any more.
fn feedback(mut o: Observed, d: &Decision, t: &Config) {
    let mut d = d.clone();
    let mut history = Vec::new();
    for _ in 0..3 {
        let Some(status) = published(&o.node, &d) else {
            assert!(history.is_empty(), "a later pass publishes no status");
            return;
        };
        let mut node = (*o.node).clone();
        node.status = Some(status.clone());
        o.node = Arc::new(node);
        history.push(status);
        d = decide(&o, t).expect("decided once, decides again");
    }
    assert_eq!(
        history[2], history[1],
        "the published status does not settle"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some((manifest, w)) = input::manifest_and::<NodeWorld>(data) else {
        return;
    };
    let Some(node) = input::object::<GarageNode>(manifest, "garage-node-0") else {
        return;
    };
    let o = observed(node, &w);
    let t = Config {
        resync: Duration::from_secs(60),
        short_requeue: Duration::from_secs(5),
        ..Config::default()
    };
    let first = decide(&o, &t);
    assert_eq!(
        format!("{first:?}"),
        format!("{:?}", decide(&o, &t)),
        "the decision is not a function of its input"
    );
    let Ok(d) = first else {
        return;
    };
    check(&o, &d);
    feedback(o, &d, &t);
});

/// A claim is only ever asked for more than it requests, only when bound, and never again
/// while its last growth was refused.
fn grow_only(o: &Observed, d: &Decision) {
    let bytes = |q: &str| reconciler::desired::quantity::to_bytes(q).unwrap_or(0);
    for (name, size) in &d.claim_sizes {
        let c = o
            .expansions
            .iter()
            .find(|c| &c.name == name)
            .expect("a patched claim is one of the node's");
        assert!(c.refused.is_none(), "{name}: asked again after a refusal");
        let pvc = c.pvc.as_ref().expect("a patched claim exists");
        assert_eq!(
            pvc.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Bound"),
            "{name}: patched while unbound"
        );
        let (request, _) = request_and_capacity(pvc);
        assert!(
            request.is_none_or(|r| bytes(&size.0) > r),
            "{name}: shrunk or unchanged"
        );
    }
}
