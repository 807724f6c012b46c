//! The cycle's steps, one pass at a time, from what each pass observes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use garage_api_types::NodeId;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::jiff::Timestamp;
use shared_types::garage_cluster::common::{DrainActor, DrainActorKind, StorageDrainStatus};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNodeStatus;
use shared_types::keys::annotation::ANNOTATION_DRAIN;
use shared_types::keys::label::value::MANAGED_BY_GENERATED_NODE;

use super::*;
use crate::cluster::members;
use crate::cluster::observed::GarageView;
use crate::fixtures::*;

const SOURCE: &str = "garage-storage-1";
const SIBLING: &str = "garage-storage-1-cycle";

/// A pass over a converged 3-member cluster whose `garage-storage-1` asks to cycle, with
/// `extra` GarageNodes (the sibling) beside it. `in_layout` lists the IDs holding a role.
struct Pass {
    cluster: GarageCluster,
    generated: BTreeMap<u32, GarageNode>,
    user: Vec<GarageNode>,
    pods: Vec<Pod>,
    roles: Vec<NodeId>,
    settled: bool,
}

impl Pass {
    fn new() -> Pass {
        let c = cluster(3);
        let mut generated = BTreeMap::new();
        let mut pods = Vec::new();
        for n in 0..3u32 {
            let gn = generated_node(&c, n);
            pods.push(pod(&gn.name_any(), n as u8 + 10, "sts"));
            generated.insert(n, gn);
        }
        let source = generated.get_mut(&1).unwrap();
        annotate(source, ANNOTATION_CYCLE, "true");
        Pass {
            cluster: c,
            generated,
            user: Vec::new(),
            pods,
            roles: vec![id(0), id(1), id(2)],
            settled: true,
        }
    }

    fn source(&mut self) -> &mut GarageNode {
        self.generated.get_mut(&1).unwrap()
    }

    /// The sibling as the first step made it, with its pod Ready and identity 9 proven when
    /// `running`.
    fn with_sibling(mut self, running: bool) -> Pass {
        let first = self
            .decide()
            .create
            .expect("the first step creates the sibling");
        let mut sib = first;
        sib.metadata.uid = Some("uid-sibling".into());
        sib.metadata.resource_version = Some("7".into());
        if running {
            sib.status = Some(GarageNodeStatus {
                node_id: Some(id(9).to_string()),
                observed_pod_uid: Some(format!("pod-{SIBLING}")),
                ..Default::default()
            });
            self.pods.push(pod(SIBLING, 19, "sts"));
        }
        self.user.push(sib);
        self.source_status(Some(CyclePhase::Provisioning), None);
        self
    }

    fn source_status(&mut self, phase: Option<CyclePhase>, sibling_id: Option<NodeId>) {
        let st = self.source().status.get_or_insert_with(Default::default);
        st.cycle_phase = phase;
        st.cycle_sibling_name = phase.map(|_| SIBLING.to_owned());
        st.cycle_sibling_node_id = sibling_id.map(|i| i.to_string());
    }

    fn observed(&self) -> Observed {
        Observed {
            generated: self.generated.clone(),
            user_nodes: self.user.clone(),
            pods: self.pods.clone(),
            ..observed_cluster(self.cluster.clone(), self.garage())
        }
    }

    fn garage(&self) -> GarageView {
        let roles: Vec<_> = self
            .roles
            .iter()
            .map(|i| role(i, "default", 1 << 30, &[]))
            .collect();
        let up: Vec<NodeId> = self.roles.iter().cloned().chain([id(9)]).collect();
        let up: Vec<&NodeId> = up.iter().collect();
        let mut history = settled(3);
        if !self.settled {
            history = serde_json::from_value(serde_json::json!({
                "currentVersion": 3, "minAck": 2,
                "versions": [
                    {"version": 2, "status": "Draining", "storageNodes": 3, "gatewayNodes": 0},
                    {"version": 3, "status": "Current", "storageNodes": 4, "gatewayNodes": 0}
                ],
                "updateTrackers": {}
            }))
            .unwrap();
        }
        GarageView::Read(Box::new(GarageRead {
            status: status(3, &up),
            history,
            layout: layout(3, &roles, &[]),
            health: Some(healthy(3)),
            every_view_healthy: true,
            build: None,
            worker_variables: BTreeMap::new(),
        }))
    }

    fn decide(&self) -> Cycle {
        let o = self.observed();
        let s = settings(&self.cluster);
        let views: Vec<MemberView> = o
            .generated
            .values()
            .map(|gn| members::member(gn, &o.pods, &s, true).unwrap())
            .chain(
                o.user_nodes
                    .iter()
                    .map(|gn| members::member(gn, &o.pods, &s, false).unwrap()),
            )
            .collect();
        let read = match &o.garage {
            GarageView::Read(r) => Some(r.as_ref().clone()),
            GarageView::Unavailable(_) => None,
        };
        decide(&o, &s, &views, read.as_ref()).unwrap()
    }
}

fn generated_node(c: &GarageCluster, n: u32) -> GarageNode {
    let mut gn = generated(c, n, Some(id(n as u8)));
    gn.metadata.namespace = Some("ns".into());
    gn
}

fn annotate(n: &mut GarageNode, key: &str, value: &str) {
    n.metadata
        .annotations
        .get_or_insert_with(Default::default)
        .insert(key.into(), value.into());
}

/// The one status write of `c`, for the source.
fn written(c: &Cycle) -> &SourceStatus {
    assert_eq!(c.status.len(), 1, "{:?}", c.status);
    &c.status[0]
}

/// The `Cycling` message of `st`.
fn message(st: &SourceStatus) -> &str {
    &st.condition.as_ref().expect("a Cycling condition").message
}

fn cycling(st: &SourceStatus) -> (bool, &'static str) {
    let c = st.condition.as_ref().expect("a Cycling condition");
    (c.status, c.reason)
}

/// The cluster's record of a drain of the source that removed identity 1, complete when
/// `completed`, its proof covering `verified`.
fn record(completed: bool, verified: &[NodeId]) -> StorageDrainStatus {
    let removed = vec![id(1).to_string()];
    StorageDrainStatus {
        actor: Some(DrainActor {
            kind: Some(DrainActorKind::GarageNode),
            namespace: Some("ns".into()),
            name: Some(SOURCE.into()),
            uid: Some(format!("uid-{SOURCE}")),
            ..Default::default()
        }),
        role_removal_node_ids: Some(removed.clone()),
        removed_storage_node_ids: Some(removed.clone()),
        target_hash: Some(shared_types::drain::target_hash(&removed, &removed, &[])),
        verification_node_ids: Some(verified.iter().map(|i| i.to_string()).collect()),
        completed_at: completed.then_some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            Timestamp::UNIX_EPOCH,
        )),
        ..Default::default()
    }
}

#[test]
fn the_first_step_creates_a_labelled_sibling_owned_by_its_source() {
    let c = Pass::new().decide();
    let sib = c.create.as_ref().expect("sibling");
    assert_eq!(sib.name_any(), SIBLING);
    let labels = sib.labels();
    assert_eq!(labels[label::LABEL_CYCLE_SIBLING], "true");
    assert_eq!(labels[label::LABEL_AUTO_NODE_SLOT], SOURCE);
    assert!(
        !labels.contains_key(label::LABEL_APP_MANAGED_BY),
        "Auto slot management must leave an unpromoted sibling alone"
    );
    let owner = &sib.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("GarageNode", "uid-garage-storage-1", Some(true))
    );
    assert!(sib.spec.node_id.is_none());
    assert!(
        sib.spec
            .tags
            .as_ref()
            .unwrap()
            .contains(&format!("{SIBLING}-0")),
        "the sibling's role names its own pod"
    );
    let st = written(&c);
    assert_eq!(
        (st.cycle_phase, st.cycle_sibling_name.as_deref()),
        (Some(CyclePhase::Provisioning), Some(SIBLING))
    );
    assert_eq!(cycling(st), (true, reason::REASON_CYCLE_PROVISIONING));
    assert!(c.drain.is_none() && c.promote.is_none() && c.delete.is_none());
}

#[test]
fn a_start_is_held_without_writing_anything_while_it_is_unsafe() {
    type Setup = fn(&mut Pass);
    let cases: [(&str, Setup, &str); 5] = [
        (
            "a drain recorded",
            |p| {
                p.cluster
                    .status
                    .get_or_insert_with(Default::default)
                    .storage_drain = Some(record(false, &[]));
            },
            "waits for the drain of garage-storage-1",
        ),
        (
            "a rollout recorded",
            |p| {
                p.cluster
                    .status
                    .get_or_insert_with(Default::default)
                    .storage_rollout = Some(Default::default());
            },
            "storage rollout",
        ),
        (
            "the source not in the layout",
            |p| p.roles.retain(|r| *r != id(1)),
            "committed in the layout",
        ),
        (
            "the source's pod replaced since its identity was read",
            |p| {
                p.pods[1].metadata.uid = Some("another".into());
            },
            "proven from its running pod",
        ),
        (
            "the source suspended",
            |p| {
                p.source().spec.maintenance =
                    Some(serde_json::from_value(serde_json::json!({"suspended": true})).unwrap());
            },
            "suspended",
        ),
    ];
    for (name, setup, why) in cases {
        let mut p = Pass::new();
        setup(&mut p);
        let c = p.decide();
        assert!(c.create.is_none(), "{name}: nothing is created");
        let st = written(&c);
        assert_eq!(st.cycle_phase, None, "{name}");
        assert_eq!(cycling(st), (false, reason::REASON_CYCLE_BLOCKED), "{name}");
        let message = &message(st);
        assert!(message.contains(why), "{name}: {message}");
        assert!(c.busy, "{name}: a held cycle is looked at again");
    }
}

#[test]
fn a_profile_that_cannot_be_cloned_is_refused_by_name() {
    let mut p = Pass::new();
    let mut manual_node = manual("manual-a", Some(id(5)));
    manual_node
        .spec
        .storage
        .as_mut()
        .unwrap()
        .data
        .as_mut()
        .unwrap()
        .existing_claim = Some("mine".into());
    annotate(&mut manual_node, ANNOTATION_CYCLE, "true");
    p.source().metadata.annotations = None;
    p.user.push(manual_node);
    let c = p.decide();
    assert!(c.create.is_none());
    let st = written(&c);
    assert_eq!(cycling(st), (false, reason::REASON_CYCLE_BLOCKED));
    assert!(message(st).contains("spec.storage.data.existingClaim"));
}

#[test]
fn the_sibling_is_waited_for_then_synced_then_the_source_is_asked_to_drain() {
    // No pod yet: Provisioning.
    let p = Pass::new().with_sibling(false);
    let c = p.decide();
    assert!(
        c.create.is_none(),
        "an existing sibling is never made again"
    );
    let st = written(&c);
    assert_eq!(st.cycle_phase, Some(CyclePhase::Provisioning));
    assert!(message(st).contains("waiting for sibling"));
    // Ready with identity 9, not in the layout yet: Syncing, the identity recorded.
    let p = Pass::new().with_sibling(true);
    let c = p.decide();
    let st = written(&c);
    assert_eq!(st.cycle_phase, Some(CyclePhase::Syncing));
    assert_eq!(st.cycle_sibling_node_id, Some(id(9).to_string()));
    assert_eq!(cycling(st), (true, reason::REASON_CYCLE_SYNCING));
    assert!(c.drain.is_none());
    // In the layout but the history not settled: still Syncing.
    let mut p = Pass::new().with_sibling(true);
    p.roles.push(id(9));
    p.settled = false;
    assert_eq!(written(&p.decide()).cycle_phase, Some(CyclePhase::Syncing));
    // Settled: Draining, and the source asked to drain.
    p.settled = true;
    let c = p.decide();
    let st = written(&c);
    assert_eq!(st.cycle_phase, Some(CyclePhase::Draining));
    assert_eq!(cycling(st), (true, reason::REASON_DRAINING));
    assert_eq!(c.drain.as_deref(), Some(SOURCE));
    assert!(c.promote.is_none() && c.delete.is_none());
}

#[test]
fn a_sibling_that_changed_identity_or_is_not_owned_blocks_the_cycle() {
    let mut p = Pass::new().with_sibling(true);
    p.source_status(Some(CyclePhase::Syncing), Some(id(8)));
    let st = written(&p.decide()).clone();
    assert_eq!(cycling(&st), (false, reason::REASON_CYCLE_BLOCKED));
    assert!(
        st.condition
            .unwrap()
            .message
            .contains("changed its Garage identity")
    );

    let mut p = Pass::new().with_sibling(true);
    p.user[0].metadata.owner_references = None;
    let c = p.decide();
    assert!(c.drain.is_none() && c.create.is_none());
    assert!(message(written(&c)).contains("is not this node's cycle sibling"));
}

/// A pass in Draining with the source's drain asked and `record` on the cluster.
fn draining(record: Option<StorageDrainStatus>) -> Pass {
    let mut p = Pass::new().with_sibling(true);
    p.roles.push(id(9));
    p.source_status(Some(CyclePhase::Draining), Some(id(9)));
    annotate(p.source(), ANNOTATION_DRAIN, "true");
    p.cluster
        .status
        .get_or_insert_with(Default::default)
        .storage_drain = record;
    p
}

#[test]
fn while_the_source_drains_nothing_is_promoted_and_the_drain_is_asked_again_if_lost() {
    let c = draining(Some(record(false, &[id(9)]))).decide();
    assert!(c.promote.is_none() && c.delete.is_none() && c.drain.is_none());
    assert_eq!(cycling(written(&c)), (true, reason::REASON_DRAINING));
    // A status write landed but the annotation did not: asked again.
    let mut p = draining(None);
    p.source()
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .remove(ANNOTATION_DRAIN);
    assert_eq!(p.decide().drain.as_deref(), Some(SOURCE));
}

#[test]
fn a_complete_proof_covering_the_sibling_promotes_it_and_deletes_the_source() {
    let c = draining(Some(record(true, &[id(0), id(2), id(9)]))).decide();
    let p = c.promote.expect("promotion");
    assert_eq!(p.sibling, SIBLING);
    assert_eq!(p.resource_version.as_deref(), Some("7"));
    assert_eq!(p.labels[label::LABEL_CYCLE_SIBLING], None);
    assert_eq!(
        p.labels[label::LABEL_APP_MANAGED_BY].as_deref(),
        Some(MANAGED_BY_GENERATED_NODE)
    );
    assert_eq!(
        p.labels[label::LABEL_AUTO_NODE_SLOT].as_deref(),
        Some(SOURCE)
    );
    assert_eq!(p.owner_references.len(), 1);
    assert_eq!(
        (
            p.owner_references[0].kind.as_str(),
            p.owner_references[0].uid.as_str()
        ),
        ("GarageCluster", "uid-1")
    );
    assert_eq!(c.delete, Some((SOURCE.to_owned(), format!("uid-{SOURCE}"))));
    assert!(!p.drop_cycle_request);
    // A request the sibling carried while it could not be honoured goes with the promotion.
    let mut pass = draining(Some(record(true, &[id(0), id(2), id(9)])));
    annotate(&mut pass.user[0], ANNOTATION_CYCLE, "true");
    assert!(pass.decide().promote.unwrap().drop_cycle_request);
}

#[test]
fn no_promotion_without_a_proof_that_names_the_sibling_running_that_identity() {
    type Setup = fn(&mut Pass);
    let cases: [(&str, Setup, &str); 3] = [
        (
            "the proof does not cover the sibling",
            |p| {
                p.cluster.status.as_mut().unwrap().storage_drain =
                    Some(record(true, &[id(0), id(2)]));
            },
            "does not name sibling",
        ),
        (
            "the sibling's pod was replaced",
            |p| {
                p.pods.last_mut().unwrap().metadata.uid = Some("another".into());
            },
            "its pod is not Ready with that identity",
        ),
        (
            "the record names another source",
            |p| {
                let rec = p
                    .cluster
                    .status
                    .as_mut()
                    .unwrap()
                    .storage_drain
                    .as_mut()
                    .unwrap();
                rec.actor.as_mut().unwrap().uid = Some("uid-other".into());
            },
            "the source drains through the prepared drain",
        ),
    ];
    for (name, setup, why) in cases {
        let mut p = draining(Some(record(true, &[id(0), id(2), id(9)])));
        setup(&mut p);
        let c = p.decide();
        assert!(c.promote.is_none() && c.delete.is_none(), "{name}");
        let message = &message(written(&c));
        assert!(message.contains(why), "{name}: {message}");
    }
}

#[test]
fn a_manual_source_keeps_its_sibling_user_owned() {
    let mut p = Pass::new();
    p.source().metadata.annotations = None;
    let mut m = manual("manual-a", Some(id(5)));
    annotate(&mut m, ANNOTATION_CYCLE, "true");
    p.pods.push(pod("manual-a", 30, "sts"));
    p.roles.push(id(5));
    p.user.push(m);
    let c = p.decide();
    let sib = c.create.expect("sibling");
    assert_eq!(sib.name_any(), "manual-a-cycle");
    assert_eq!(sib.spec.zone, "zone-m");
    assert!(sib.spec.node_id.is_none());
    assert!(!sib.labels().contains_key(label::LABEL_AUTO_NODE_SLOT));
    assert_eq!(sib.owner_references()[0].uid, "uid-manual-a");
}

#[test]
fn removing_the_request_cancels_only_while_no_sibling_holds_a_place() {
    let mut p = Pass::new().with_sibling(true);
    p.source_status(Some(CyclePhase::Syncing), Some(id(9)));
    p.source().metadata.annotations = None;
    let c = p.decide();
    let st = written(&c);
    assert_eq!(cycling(st), (false, reason::REASON_CANCELLATION_BLOCKED));
    assert_eq!(
        st.cycle_phase,
        Some(CyclePhase::Syncing),
        "the record stays until the sibling is gone"
    );
    assert!(c.drain.is_none());
    p.user.clear();
    let st = written(&p.decide()).clone();
    assert_eq!(
        (st.cycle_phase, st.cycle_sibling_name, st.condition),
        (None, None, None)
    );
}

#[test]
fn one_cycle_runs_at_a_time() {
    let mut p = Pass::new().with_sibling(false);
    annotate(p.generated.get_mut(&0).unwrap(), ANNOTATION_CYCLE, "true");
    let c = p.decide();
    assert!(c.create.is_none(), "the second request creates nothing");
    let waiting = c
        .status
        .iter()
        .find(|s| s.node == "garage-storage-0")
        .expect("the waiting one reports");
    assert_eq!(cycling(waiting), (false, reason::REASON_CYCLE_BLOCKED));
    assert!(
        waiting
            .condition
            .as_ref()
            .unwrap()
            .message
            .contains("waits for the cycle of garage-storage-1")
    );
}

#[test]
fn a_cycle_the_status_already_reports_writes_nothing() {
    let mut p = Pass::new().with_sibling(true);
    let first = written(&p.decide()).clone();
    let st = p.source().status.get_or_insert_with(Default::default);
    st.cycle_phase = first.cycle_phase;
    st.cycle_sibling_node_id = first.cycle_sibling_node_id.clone();
    let c = first.condition.unwrap();
    st.conditions = Some(vec![
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
            type_: c.type_.into(),
            status: "True".into(),
            reason: c.reason.into(),
            message: c.message,
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                Timestamp::UNIX_EPOCH,
            ),
            observed_generation: None,
        },
    ]);
    assert!(p.decide().status.is_empty());
}

#[test]
fn an_unpromoted_sibling_asking_to_cycle_is_held_and_left_alone() {
    let mut p = Pass::new().with_sibling(true);
    p.source_status(Some(CyclePhase::Syncing), Some(id(9)));
    annotate(&mut p.user[0], ANNOTATION_CYCLE, "true");
    let c = p.decide();
    assert!(c.create.is_none() && c.drain.is_none());
    // The source's cycle runs first; the sibling's request waits behind it and then is
    // refused for what it is, never carried out.
    let sib = c
        .status
        .iter()
        .find(|s| s.node == SIBLING)
        .expect("the sibling reports");
    assert_eq!(cycling(sib), (false, reason::REASON_CYCLE_BLOCKED));
    let mut alone = Pass::new().with_sibling(true);
    alone.source().metadata.annotations = None;
    alone.source_status(None, None);
    alone.user[0].metadata.owner_references = None;
    annotate(&mut alone.user[0], ANNOTATION_CYCLE, "true");
    let c = alone.decide();
    assert!(c.create.is_none());
    let st = written(&c);
    assert!(message(st).contains("cannot be cycled before it is promoted"));
}

#[test]
fn a_cycle_the_go_operator_left_half_done_resumes_from_its_status_and_sibling() {
    // The shape the Go operator leaves: the source's status at Syncing with the sibling's
    // name and identity, the sibling labelled `cycle-sibling`, `cluster` and `auto-node-slot`
    // (no managed-by), controlled by the source; its role committed in a settled layout.
    let mut p = Pass::new();
    let c = p.cluster.clone();
    let mut sib = generated(&c, 1, Some(id(9)));
    sib.metadata.name = Some(SIBLING.into());
    sib.metadata.namespace = Some("ns".into());
    sib.metadata.labels = Some(
        [
            (label::LABEL_CYCLE_SIBLING, "true"),
            (label::LABEL_CLUSTER, "garage"),
            (label::LABEL_AUTO_NODE_SLOT, SOURCE),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into(),
    );
    sib.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "garage.rajsingh.info/v1beta1".into(),
        kind: "GarageNode".into(),
        name: SOURCE.into(),
        uid: format!("uid-{SOURCE}"),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    sib.status.as_mut().unwrap().observed_pod_uid = Some(format!("pod-{SIBLING}"));
    p.pods.push(pod(SIBLING, 19, "sts"));
    p.user.push(sib);
    p.roles.push(id(9));
    p.source_status(Some(CyclePhase::Syncing), Some(id(9)));
    let c = p.decide();
    assert!(c.create.is_none(), "no second sibling");
    assert_eq!(c.drain.as_deref(), Some(SOURCE));
    assert_eq!(written(&c).cycle_phase, Some(CyclePhase::Draining));
}

#[test]
fn a_drain_asked_outside_the_cycle_or_a_shared_parent_address_holds_it() {
    let mut p = Pass::new().with_sibling(true);
    p.source_status(Some(CyclePhase::Syncing), Some(id(9)));
    annotate(p.source(), ANNOTATION_DRAIN, "true");
    let c = p.decide();
    assert!(c.drain.is_none() && c.promote.is_none());
    let st = written(&c);
    assert_eq!(cycling(st), (false, reason::REASON_CYCLE_BLOCKED));
    assert!(message(st).contains("set outside the cycle"));

    let mut p = Pass::new();
    p.cluster.spec.storage.as_mut().unwrap().rpc_public_addr = Some("garage.example:3901".into());
    let c = p.decide();
    assert!(c.create.is_none());
    assert!(message(written(&c)).contains("spec.storage.rpcPublicAddr"));
}

#[test]
fn a_source_deleted_after_its_proof_lets_go_of_its_sibling_once() {
    // Deleted by hand once DrainPrepared was True, before the cycle promoted the sibling:
    // the sibling is promoted (never taken by the garbage collector), nothing deleted again,
    // even when the proof does not name the sibling.
    for verified in [vec![id(0), id(2), id(9)], vec![id(0), id(2)]] {
        let mut p = draining(Some(record(true, &verified)));
        p.source().metadata.deletion_timestamp = deleting();
        let c = p.decide();
        assert!(c.promote.is_some(), "{verified:?}");
        assert!(c.delete.is_none(), "{verified:?}");
    }
    let mut p = draining(Some(record(true, &[id(0), id(2), id(9)])));
    p.source().metadata.deletion_timestamp = deleting();
    let c = p.decide();
    // Promoted already (the sibling fills the slot, the source retires): nothing to write.
    let mut p = draining(Some(record(true, &[id(0), id(2), id(9)])));
    p.source().metadata.deletion_timestamp = deleting();
    let promoted = c.promote.unwrap();
    let sib = &mut p.user[0];
    for (k, v) in &promoted.labels {
        let labels = sib.metadata.labels.get_or_insert_with(Default::default);
        match v {
            Some(v) => labels.insert(k.clone(), v.clone()),
            None => labels.remove(k),
        };
    }
    sib.metadata.owner_references = Some(promoted.owner_references);
    let c = p.decide();
    assert!(c.promote.is_none() && c.delete.is_none() && c.drain.is_none());
}

#[test]
fn in_draining_a_node_named_like_the_sibling_but_not_promoted_by_the_cycle_is_refused() {
    let mut p = draining(Some(record(true, &[id(0), id(2), id(9)])));
    // Relabelled by hand: not a sibling, not controlled by the cluster with the source's slot.
    let sib = &mut p.user[0];
    sib.metadata
        .labels
        .as_mut()
        .unwrap()
        .remove(label::LABEL_CYCLE_SIBLING);
    sib.metadata.owner_references = None;
    let c = p.decide();
    assert!(c.promote.is_none() && c.delete.is_none());
    assert!(message(written(&c)).contains("is not this node's cycle sibling"));
}
