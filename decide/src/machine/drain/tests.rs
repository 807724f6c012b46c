//! Table tests of the drain transaction.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde_json::json;
use shared_types::conditions::reason;

use super::*;
use crate::fixtures::{healthy, id, layout, role, settled};
use garage_api_types::RoleChange;

fn storage_layout(version: u64, ids: &[u8]) -> ClusterLayout {
    let roles: Vec<_> = ids
        .iter()
        .map(|n| role(&id(*n), "z", 1 << 30, &[]))
        .collect();
    layout(version, &roles, &[])
}

fn candidate(n: u8) -> Candidate {
    Candidate {
        namespace: "ns".into(),
        name: format!("g-storage-{n}"),
        uid: format!("uid-{n}"),
        node_id: Some(id(n)),
        pod_uid: Some(format!("pod-{n}")),
        lost: LostFacts {
            recorded_id: Some(id(n)),
            pod: Some(format!("g-storage-{n}-0")),
            ..LostFacts::default()
        },
        gateway: false,
        swap: None,
        serving: false,
    }
}

fn worker(wid: u64, name: &str, state: &str, extra: serde_json::Value) -> WorkerInfo {
    let mut v = json!({"id": wid, "name": name, "state": state, "errors": 0,
        "consecutiveErrors": 0, "freeform": []});
    if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
        o.extend(e.clone());
    }
    serde_json::from_value(v).unwrap()
}

struct World {
    layout: ClusterLayout,
    history: LayoutHistory,
    health: ClusterHealth,
    candidates: Vec<Candidate>,
    up: Vec<NodeId>,
    proof: ProofObservation,
    actor_requests: bool,
    now: Timestamp,
}

impl World {
    fn new(ids: &[u8]) -> Self {
        World {
            layout: storage_layout(3, ids),
            history: settled(3),
            health: healthy(ids.len() as u64),
            candidates: vec![candidate(3)],
            up: ids.iter().map(|n| id(*n)).collect(),
            proof: ProofObservation::default(),
            actor_requests: true,
            now: Timestamp::from_second(1_000_000).unwrap(),
        }
    }

    fn step(&self, record: Option<&StorageDrainStatus>) -> Step {
        step(&Observed {
            record,
            candidates: &self.candidates,
            actor_requests: self.actor_requests,
            layout: &self.layout,
            history: &self.history,
            health: Some(&self.health),
            up: &self.up,
            consistent: true,
            replication_factor: 3,
            unverified_peers: None,
            requires_empty_queue: false,
            proof: Some(&self.proof),
            now: self.now,
            quiet: Duration::from_secs(10),
            rpc_timeout: Duration::from_secs(5),
            new_transaction_id: "tx-1",
        })
    }

    /// Every node answers with `workers` (the same list on each).
    fn answer(&mut self, nodes: &[u8], workers: &[WorkerInfo], errors: usize) {
        for n in nodes {
            self.proof.workers.insert(id(*n), workers.to_vec());
            self.proof.block_errors.insert(id(*n), errors);
        }
    }
}

fn recorded(step: Step) -> StorageDrainStatus {
    match step {
        Step::Record(r) | Step::LaunchRepairs { record: r, .. } => r,
        other => panic!("expected a record, got {other:?}"),
    }
}

#[test]
fn intent_is_recorded_before_anything_else() {
    let w = World::new(&[0, 1, 2, 3]);
    let r = recorded(w.step(None));
    assert_eq!(r.removed_storage_node_ids, Some(vec![id(3).to_string()]));
    assert_eq!(r.role_removal_node_ids, r.removed_storage_node_ids);
    assert!(shared_types::drain::hash_consistent(&r));
    assert_eq!(r.actor.as_ref().unwrap().uid.as_deref(), Some("uid-3"));
    assert_eq!(
        r.managed_pod_uids,
        Some(BTreeMap::from([(id(3).to_string(), "pod-3".to_string())]))
    );
    assert_eq!(r.completed_at, None);
    // Every field the CRD requires is present from the first write.
    for field in [
        "errorCount",
        "queueLength",
        "requiresEmptyQueue",
        "layoutVersion",
        "startedAt",
        "transactionId",
    ] {
        assert!(
            serde_json::to_value(&r).unwrap().get(field).is_some(),
            "{field} missing"
        );
    }
    // Next pass: the role is still there, so it goes, in exactly the next version.
    assert_eq!(
        w.step(Some(&r)),
        Step::RemoveRole {
            id: id(3),
            version: 4
        }
    );
}

#[test]
fn nothing_starts_below_the_replication_factor_or_while_unhealthy() {
    let w = World::new(&[0, 1, 3]);
    assert!(matches!(
        w.step(None),
        Step::Wait { reason: r, .. } if r == reason::REASON_REPLICATION_UNSAFE
    ));
    let mut w = World::new(&[0, 1, 2, 3]);
    w.health.storage_nodes_up = 3;
    assert!(matches!(
        w.step(None),
        Step::Wait { reason: r, .. } if r == reason::REASON_WAITING_FOR_CLUSTER_HEALTH
    ));
    let mut w = World::new(&[0, 1, 2, 3]);
    w.candidates[0].node_id = None;
    assert!(matches!(w.step(None), Step::Wait { .. }));
}

#[test]
fn cancelling_is_safe_only_before_the_removal() {
    let mut w = World::new(&[0, 1, 2, 3]);
    let r = recorded(w.step(None));
    w.actor_requests = false;
    assert_eq!(w.step(Some(&r)), Step::Clear, "role still present: cancel");
    // Role removed: the proof continues even though the annotation is gone.
    w.layout = storage_layout(4, &[0, 1, 2]);
    w.history = settled(4);
    w.answer(&[0, 1, 2, 3], &[], 0);
    assert!(matches!(w.step(Some(&r)), Step::LaunchRepairs { .. }));
}

#[test]
fn the_proof_launches_adopts_waits_and_completes_after_the_quiet_period() {
    let mut w = World::new(&[0, 1, 2, 3]);
    let mut r = recorded(w.step(None));
    w.layout = storage_layout(4, &[0, 1, 2]);
    w.history = settled(4);
    let resync = worker(
        1,
        "Block resync worker #1",
        "idle",
        json!({"queueLength": 0, "persistentErrors": 0}),
    );
    w.answer(&[0, 1, 2, 3], std::slice::from_ref(&resync), 0);
    // Snapshot: baselines, then a repair on every destination and the live source.
    let Step::LaunchRepairs { record, nodes } = w.step(Some(&r)) else {
        panic!("expected launches")
    };
    assert_eq!(nodes, vec![id(0), id(1), id(2), id(3)]);
    assert_eq!(record.repair_baselines.as_ref().unwrap()[id(0).as_str()], 1);
    r = record;
    // The repairs appear: adopted into the record.
    let busy = worker(2, REPAIR_WORKER, "busy", json!({}));
    w.answer(&[0, 1, 2, 3], &[resync.clone(), busy], 0);
    r = recorded(w.step(Some(&r)));
    assert_eq!(r.repair_worker_ids.as_ref().unwrap().len(), 4);
    assert!(
        matches!(w.step(Some(&r)), Step::Wait { .. }),
        "repairs running"
    );
    // Done, but a block error remains: no quiet period starts.
    let done = worker(2, REPAIR_WORKER, "done", json!({}));
    w.answer(&[0, 1, 2, 3], &[resync.clone(), done.clone()], 1);
    r = recorded(w.step(Some(&r)));
    assert_eq!(r.error_count, Some(4));
    assert!(r.quiet_since.is_none());
    // Clean: the quiet period starts, then completes.
    w.answer(&[0, 1, 2, 3], &[resync, done], 0);
    r = recorded(w.step(Some(&r)));
    assert!(r.quiet_since.is_some() && r.completed_at.is_none());
    assert!(matches!(w.step(Some(&r)), Step::Wait { .. }));
    // The configured ten seconds are not enough: a node checks a block it learns of only
    // after twice the RPC timeout (5 s here), so the window is at least 40 s.
    w.now += Duration::from_secs(11);
    let quiet = w.step(Some(&r));
    assert!(
        matches!(&quiet, Step::Wait { message, .. } if message.contains("(40s window)")),
        "a quiet window shorter than Garage's resync delay proves nothing: {quiet:?}"
    );
    // The message names moments, not a count: a pass later it is the same, so the status
    // is not written again (each write would wake the controllers for one more pass).
    w.now += Duration::from_secs(1);
    assert_eq!(
        w.step(Some(&r)),
        quiet,
        "the waiting message changed from one pass to the next"
    );
    // Quiet long enough, but a live source hands over blocks only it holds when Garage
    // garbage-collects them: nothing completes before that moment has passed.
    w.now += Duration::from_secs(29);
    let gate = w.step(Some(&r));
    assert!(
        matches!(&gate, Step::Wait { message, .. } if message.contains("after the role was removed")),
        "{gate:?}"
    );
    w.now += Duration::from_secs(7);
    assert_eq!(
        w.step(Some(&r)),
        gate,
        "the waiting message changed from one pass to the next"
    );
    w.now = r.started_at.as_ref().unwrap().0 + GC_GATE;
    r = recorded(w.step(Some(&r)));
    assert!(r.completed_at.is_some());
    assert_eq!(shared_types::drain::phase(Some(&r)), Phase::Completed);
    // Released once the actor is gone.
    w.actor_requests = false;
    assert_eq!(w.step(Some(&r)), Step::Clear);
}

#[test]
fn the_source_must_stay_up_and_every_node_must_answer() {
    let mut w = World::new(&[0, 1, 2, 3]);
    let r = recorded(w.step(None));
    w.layout = storage_layout(4, &[0, 1, 2]);
    w.history = settled(4);
    w.answer(&[0, 1, 2], &[], 0);
    assert!(
        matches!(w.step(Some(&r)), Step::Wait { .. }),
        "the source did not answer"
    );
    w.up.retain(|i| *i != id(3));
    assert!(matches!(
        w.step(Some(&r)),
        Step::Wait { message, .. } if message.contains("not up")
    ));
}

#[test]
fn a_tampered_record_removes_nothing() {
    let w = World::new(&[0, 1, 2, 3]);
    let mut r = recorded(w.step(None));
    r.removed_storage_node_ids = Some(vec![id(0).to_string()]);
    assert!(
        matches!(w.step(Some(&r)), Step::Wait { reason: rs, .. } if rs == reason::REASON_NODE_DRAIN_BLOCKED)
    );
}

#[test]
fn a_removal_staged_by_an_interrupted_pass_is_applied_not_refused() {
    let mut w = World::new(&[0, 1, 2, 3]);
    let r = recorded(w.step(None));
    let roles: Vec<_> = [0u8, 1, 2, 3]
        .iter()
        .map(|n| role(&id(*n), "z", 1 << 30, &[]))
        .collect();
    w.layout = layout(3, &roles, &[json!({"id": id(3).as_str(), "remove": true})]);
    assert_eq!(
        w.step(Some(&r)),
        Step::RemoveRole {
            id: id(3),
            version: 4
        }
    );
    // Anyone else's staged change still holds it.
    w.layout = layout(3, &roles, &[json!({"id": id(1).as_str(), "remove": true})]);
    assert!(matches!(
        w.step(Some(&r)),
        Step::Wait { reason: rs, .. } if rs == reason::REASON_FOREIGN_STAGED_CHANGES
    ));
}

/// Node 3 is gone for good: down in Garage, its pod gone, the loss acknowledged.
fn lost_world(ids: &[u8]) -> World {
    let mut w = World::new(ids);
    w.up.retain(|i| *i != id(3));
    w.health.storage_nodes_up -= 1;
    w.candidates[0].node_id = None;
    w.candidates[0].pod_uid = None;
    w.candidates[0].lost.pod = None;
    w.candidates[0].lost.acknowledged = Some(Ok(id(3)));
    w
}

fn blocked_with(step: Step, needle: &str) -> bool {
    matches!(&step, Step::Wait { reason: r, message } if *r == reason::REASON_NODE_DRAIN_BLOCKED && message.contains(needle))
}

#[test]
fn a_lost_source_statement_is_checked_before_anything_is_recorded() {
    let mut w = lost_world(&[0, 1, 2, 3]);
    w.candidates[0].lost.acknowledged = Some(Err("not-an-id".into()));
    assert!(blocked_with(w.step(None), "not a full 64-hex"));
    w.candidates[0].lost.acknowledged = Some(Ok(id(2)));
    assert!(blocked_with(w.step(None), "persisted identity"));
    w.candidates[0].lost.acknowledged = Some(Ok(id(3)));
    w.up.push(id(3));
    assert!(
        blocked_with(w.step(None), "never fenced"),
        "a process Garage sees up is not lost"
    );
    let mut w = lost_world(&[0, 1, 3]);
    assert!(matches!(
        w.step(None),
        Step::Wait { reason: r, .. } if r == reason::REASON_REPLICATION_UNSAFE
    ));
    // Another storage node down too: add capacity first.
    w = lost_world(&[0, 1, 2, 3]);
    w.up.retain(|i| *i != id(2));
    assert!(matches!(
        w.step(None),
        Step::Wait { reason: r, .. } if r == reason::REASON_WAITING_FOR_CLUSTER_HEALTH
    ));
    // A replacement identity that already holds a role fails closed.
    let mut w = lost_world(&[0, 1, 2, 3]);
    w.candidates[0].lost.replacement = Some(id(2));
    assert!(blocked_with(w.step(None), "dual-identity"));
}

#[test]
fn a_lost_source_is_recorded_fenced_left_to_the_user_and_proven_on_destinations_only() {
    let mut w = lost_world(&[0, 1, 2, 3]);
    // A replacement without a role (wiped metadata) does not stand in the way.
    w.candidates[0].lost.replacement = Some(id(9));
    let r = recorded(w.step(None));
    assert_eq!(r.unavailable_source_node_ids, Some(vec![id(3).to_string()]));
    assert_eq!(r.removed_storage_node_ids, Some(vec![id(3).to_string()]));
    assert!(shared_types::drain::hash_consistent(&r));
    assert_eq!(r.managed_pod_uids, None, "no live pod is tracked");
    // The fence: while the pod exists nothing else happens.
    w.candidates[0].lost.pod = Some("g-storage-3-0".into());
    assert!(matches!(
        w.step(Some(&r)),
        Step::Wait { message, .. } if message.contains("fencing")
    ));
    // Fenced, but the role is still there: the operator never removes it itself.
    w.candidates[0].lost.pod = None;
    assert!(blocked_with(w.step(Some(&r)), "garage layout remove"));
    // The user removed it; a dead node keeps older versions live: skip-dead-nodes is named.
    w.layout = storage_layout(4, &[0, 1, 2]);
    w.history = serde_json::from_value(json!({
        "currentVersion": 4, "minAck": 3,
        "versions": [
            {"version": 4, "status": "Current", "storageNodes": 3, "gatewayNodes": 0},
            {"version": 3, "status": "Draining", "storageNodes": 4, "gatewayNodes": 0}
        ],
        "updateTrackers": {}
    }))
    .unwrap();
    assert!(matches!(
        w.step(Some(&r)),
        Step::Wait { message, .. } if message.contains("skip-dead-nodes")
    ));
    // Settled: repairs go to the surviving destinations only; the lost source need not answer.
    w.history = settled(4);
    w.answer(&[0, 1, 2], &[], 0);
    let Step::LaunchRepairs { nodes, .. } = w.step(Some(&r)) else {
        panic!("expected launches on the destinations")
    };
    assert_eq!(nodes, vec![id(0), id(1), id(2)]);
    // It answering again stops the recovery.
    w.up.push(id(3));
    assert!(blocked_with(w.step(Some(&r)), "up again"));
}

#[test]
fn a_lost_source_proof_with_no_storage_role_left_verifies_nothing_and_never_completes() {
    let mut w = lost_world(&[0, 1, 2, 3]);
    let r = recorded(w.step(None));
    // Every role is gone (the user removed the survivors by hand as well).
    w.layout = storage_layout(4, &[]);
    w.history = settled(4);
    assert!(blocked_with(w.step(Some(&r)), "no storage role"));
    // Not even from a snapshot of that empty set taken long ago: nothing was verified.
    let mut snapshot = r.clone();
    snapshot.verification_node_ids = Some(vec![]);
    snapshot.layout_version = Some(4);
    snapshot.repair_baselines = Some(BTreeMap::new());
    snapshot.repair_worker_ids = Some(BTreeMap::new());
    snapshot.quiet_since = Some(Time(Timestamp::from_second(0).unwrap()));
    let step = w.step(Some(&snapshot));
    assert!(blocked_with(step.clone(), "no storage role"), "{step:?}");
}

#[test]
fn a_lost_source_recovery_never_removes_a_role_and_cancels_before_the_user_does() {
    let mut w = lost_world(&[0, 1, 2, 3]);
    let r = recorded(w.step(None));
    for _ in 0..3 {
        assert!(!matches!(w.step(Some(&r)), Step::RemoveRole { .. }));
    }
    w.actor_requests = false;
    assert_eq!(w.step(Some(&r)), Step::Clear);
}

#[test]
fn no_configuration_shortens_the_quiet_window_below_garages_own_delays() {
    assert_eq!(quiet_floor(Duration::from_secs(5)), Duration::from_secs(40));
    assert_eq!(
        quiet_floor(Duration::from_secs(300)),
        Duration::from_secs(630)
    );
    assert_eq!(GC_GATE, Duration::from_secs(640));
}

#[test]
fn an_old_intent_is_restamped_right_before_the_removal() {
    let mut w = World::new(&[0, 1, 2, 3]);
    let r = recorded(w.step(None));
    // The removal waited (health, a restart); the gate must count from the removal.
    w.now += Duration::from_secs(300);
    let restamped = recorded(w.step(Some(&r)));
    assert_eq!(restamped.started_at.as_ref().unwrap().0, w.now);
    assert_eq!(restamped.transaction_id, r.transaction_id);
    assert!(matches!(w.step(Some(&restamped)), Step::RemoveRole { .. }));
}

/// A gateway (node 9, capacity-less) leaving a cluster whose storage is degraded: its
/// retirement needs no health, no settled history at the start and no block proof.
#[test]
fn a_leaving_gateway_is_retired_role_only_and_completes_once_history_settles() {
    let mut w = World::new(&[0, 1, 2]);
    let mut roles: Vec<_> = [0u8, 1, 2]
        .iter()
        .map(|n| role(&id(*n), "z", 1 << 30, &[]))
        .collect();
    roles.push(
        json!({"id": id(9).as_str(), "zone": "z", "capacity": null, "tags": ["tier:gateway"]}),
    );
    w.layout = layout(3, &roles, &[]);
    w.health.storage_nodes_up = 2;
    let mut gw = candidate(9);
    gw.name = "g-gateway-0".into();
    gw.gateway = true;
    gw.node_id = None;
    gw.pod_uid = None;
    w.candidates = vec![gw];
    let r = recorded(w.step(None));
    assert_eq!(r.role_removal_node_ids, Some(vec![id(9).to_string()]));
    assert_eq!(r.removed_storage_node_ids, Some(vec![]));
    assert!(shared_types::drain::hash_consistent(&r));
    assert!(shared_types::drain::role_only(&r));
    // Still in its Service: the role stays until the pod is out of it.
    w.candidates[0].serving = true;
    assert!(matches!(w.step(Some(&r)), Step::Wait { message, .. } if message.contains("Service")));
    w.candidates[0].serving = false;
    assert_eq!(
        w.step(Some(&r)),
        Step::RemoveRole {
            id: id(9),
            version: 4
        }
    );
    // Someone else's staged change holds the removal.
    let mut staged = w.layout.clone();
    staged.staged_role_changes =
        serde_json::from_value(json!([{"id": id(7).as_str(), "remove": true}])).unwrap();
    let busy = World {
        layout: staged,
        ..World::new(&[0, 1, 2])
    };
    let busy = World {
        candidates: w.candidates.clone(),
        ..busy
    };
    assert!(
        matches!(busy.step(Some(&r)), Step::Wait { reason, .. } if reason == shared_types::conditions::reason::REASON_FOREIGN_STAGED_CHANGES)
    );
    // Removed: the transaction waits for the history, then completes without any repair.
    w.layout = storage_layout(4, &[0, 1, 2]);
    w.history = crate::fixtures::unsettled(4);
    assert!(matches!(w.step(Some(&r)), Step::Wait { .. }));
    w.history = settled(4);
    // Not completed on a pass that does not see the gateway.
    let seen = std::mem::take(&mut w.candidates);
    assert!(matches!(w.step(Some(&r)), Step::Wait { .. }));
    w.candidates = seen;
    let done = recorded(w.step(Some(&r)));
    assert!(done.completed_at.is_some());
    assert!(shared_types::drain::role_retired(
        &done,
        "ns",
        "g-gateway-0",
        "uid-9",
        id(9).as_str()
    ));
    // A gateway that stays after all, before its removal: the record is dropped.
    w.layout = layout(3, &roles, &[]);
    w.actor_requests = false;
    assert_eq!(w.step(Some(&r)), Step::Clear);
}

/// A gateway (node 9) that came back as node 10 after losing its metadata: intent, then one
/// layout version that removes 9 and adds 10, then completion once the node records 10.
#[test]
fn a_gateway_with_a_new_identity_has_its_role_swapped_in_one_version() {
    let mut w = World::new(&[0, 1, 2]);
    let mut roles: Vec<_> = [0u8, 1, 2]
        .iter()
        .map(|n| role(&id(*n), "z", 1 << 30, &[]))
        .collect();
    roles.push(
        json!({"id": id(9).as_str(), "zone": "z", "capacity": null, "tags": ["tier:gateway"]}),
    );
    w.layout = layout(3, &roles, &[]);
    let desired = crate::layout::DesiredRole {
        zone: "z".into(),
        capacity: None,
        tags: vec!["tier:gateway".into()],
    };
    let mut gw = candidate(9);
    gw.name = "g-gateway-0".into();
    gw.gateway = true;
    gw.node_id = None;
    gw.swap = Some((id(10), desired.clone()));
    w.candidates = vec![gw.clone()];
    let r = recorded(w.step(None));
    assert_eq!(r.role_removal_node_ids, Some(vec![id(9).to_string()]));
    assert_eq!(
        w.step(Some(&r)),
        Step::SwapRole {
            remove: id(9),
            add: RoleChange::gateway(id(10), "z", desired.tags.clone()),
            version: 4
        }
    );
    let mut swapped: Vec<_> = roles[..3].to_vec();
    swapped.push(
        json!({"id": id(10).as_str(), "zone": "z", "capacity": null, "tags": ["tier:gateway"]}),
    );
    w.layout = layout(4, &swapped, &[]);
    // Garage waits for the dead old identity to acknowledge version 4: it is the only node
    // down, so its acknowledgement alone is advanced; with a storage node down too, nothing.
    let mut waiting = crate::fixtures::unsettled(4);
    let tracker = |ack: u64| json!({"ack": ack, "sync": 3, "syncAck": 3});
    waiting.update_trackers = Some(
        serde_json::from_value(json!({
            id(0).as_str(): tracker(4), id(1).as_str(): tracker(4), id(2).as_str(): tracker(4),
            id(9).as_str(): tracker(3), id(10).as_str(): tracker(4),
        }))
        .unwrap(),
    );
    w.history = waiting;
    w.up = vec![id(0), id(1), id(2), id(10)];
    assert_eq!(w.step(Some(&r)), Step::SkipRetiredAcks { version: 4 });
    w.up = vec![id(0), id(1), id(10)];
    assert!(
        matches!(w.step(Some(&r)), Step::Wait { .. }),
        "a storage node is down too"
    );
    w.up = vec![id(0), id(1), id(2), id(10)];
    // Swapped and settled, but the node still records nothing new: not complete yet.
    w.history = settled(4);
    assert!(
        matches!(w.step(Some(&r)), Step::Wait { message, .. } if message.contains("new identity"))
    );
    w.candidates[0].node_id = Some(id(10));
    assert!(recorded(w.step(Some(&r))).completed_at.is_some());
    // Without a known new identity the old role is never removed on its own.
    w.layout = layout(3, &roles, &[]);
    w.candidates.clear();
    assert!(matches!(w.step(Some(&r)), Step::Wait { .. }));
}
