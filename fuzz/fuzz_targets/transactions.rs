//! Feeds the pure transaction machines their arbitrary inputs directly: the drain
//! (`machine::drain::step`), the storage rollout (`machine::rollout::step`) and the teardown
//! (`machine::teardown::step`). The cluster target reaches them through the decision, with
//! records in the shape the operator writes; here the records, candidates, layouts, member
//! sets and proof reads are anything the bytes describe, including records no pass would have
//! written (a status edited by hand, or left by another version).
//!
//! Input: the first byte picks the machine, the rest describes its input.
//!
//! Invariants, beyond "no panic" and "the same input gives the same step":
//! - drain: a role removal only of a node the recorded, hash-consistent, unfinished record
//!   names, never of a lost source, only while its actor asks, the cluster is consistent,
//!   fully healthy and settled, nothing else is staged and enough storage roles remain, at
//!   `current + 1`; a record it writes is hash-consistent; a new one names the first
//!   candidate and its identity (proven from its pod, or acknowledged lost and not up); a
//!   continuing one keeps its transaction, actor and node sets and completes only once the
//!   roles are gone, the history settled, the quiet window (never shorter than the floor the
//!   RPC timeout sets) and, for a live source, Garage's hand-over delay have passed; repairs
//!   launch only after the removal; the record is dropped only when the actor no longer asks
//!   and nothing was removed, or once it completed;
//! - rollout: a pod is deleted only as the recorded actor's pod (not one already
//!   terminating); a rollout starts only with every gate holding (no drain, Garage read,
//!   healthy, settled, every member Ready, proven, up and in the layout) on an outdated
//!   member, recording that member's pod and identity; a continuing record keeps its actor
//!   and never remembers more than the limit of retired incarnations; `Converged` means
//!   nothing is recorded and nothing is outdated;
//! - teardown: nothing is removed under the Drain policy; GarageNodes go first, the other
//!   objects only once no GarageNode is left, and `Done` only when nothing is left.

#![no_main]

use std::collections::BTreeMap;
use std::time::Duration;

use arbitrary::{Arbitrary, Unstructured};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use libfuzzer_sys::fuzz_target;
use operator_fuzz::facts;
use operator_fuzz::world::{self as w, at, id};
use reconciler::garage::{ClusterHealth, ClusterLayout, LayoutHistory, NodeId};
use reconciler::machine::drain::{self, Candidate, LostFacts, Step, quiet_floor};
use reconciler::machine::rollout::{self, Member, PodState};
use reconciler::machine::teardown::{self, Child, Phase};
use serde_json::json;
use shared_types::drain::{hash_consistent, target_hash};
use shared_types::garage_cluster::common::{
    DeletionPolicy, DrainActor, DrainActorKind, PvcIdentity, StorageDrainStatus,
    StorageRolloutStatus,
};

/// A small set of node IDs, so that records, candidates, roles and reads meet.
fn node(n: u8) -> NodeId {
    id(n % 6)
}

#[derive(Debug, Arbitrary)]
struct DrainInput {
    record: Option<RecordW>,
    candidates: Vec<CandidateW>,
    actor_requests: bool,
    roles: Vec<(u8, Option<u8>)>,
    staged: Vec<(u8, bool)>,
    staged_parameters: bool,
    version: u8,
    history: w::History,
    health: w::Health,
    up: Vec<u8>,
    inconsistent_mode: bool,
    replication_factor: u8,
    unverified_peers: bool,
    requires_empty_queue: bool,
    proof: Option<Vec<w::NodeProof>>,
    now: u32,
    quiet: u16,
    rpc_timeout: u16,
}

#[derive(Debug, Arbitrary)]
struct RecordW {
    removed: Vec<u8>,
    lost: Vec<u8>,
    hash_broken: bool,
    actor: u8,
    completed: bool,
    started_ago: Option<u32>,
    quiet_since_ago: Option<u32>,
    repairs: Vec<(u8, u8)>,
    baselines: Vec<(u8, u8)>,
    requires_empty_queue: Option<bool>,
    /// The proof's snapshot of the nodes to verify is taken, for the current layout.
    snapshot: bool,
    /// Every verified node's repair is adopted and done.
    repairs_done: bool,
}

#[derive(Debug, Arbitrary)]
struct CandidateW {
    node: u8,
    proven: bool,
    acknowledged: Option<Option<u8>>,
    recorded: Option<u8>,
    pod: bool,
    replacement: Option<u8>,
}

fn drain_record(r: &RecordW, now: i64) -> StorageDrainStatus {
    let ids = |list: &[u8]| -> Vec<String> {
        list.iter().take(3).map(|n| node(*n).to_string()).collect()
    };
    let (removed, lost) = (ids(&r.removed), ids(&r.lost));
    let map = |pairs: &[(u8, u8)]| {
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(n, w)| (node(*n).to_string(), i64::from(*w)))
                .collect::<BTreeMap<_, _>>()
        })
    };
    StorageDrainStatus {
        actor: Some(DrainActor {
            api_version: Some("garage.rajsingh.info/v1beta1".into()),
            kind: Some(DrainActorKind::GarageNode),
            namespace: Some("ns".into()),
            name: Some(format!("g-storage-{}", r.actor % 6)),
            uid: Some(format!("uid-{}", r.actor % 6)),
        }),
        transaction_id: Some("tx-recorded".into()),
        started_at: r.started_ago.map(|ago| Time(at(now - i64::from(ago)))),
        target_hash: Some(if r.hash_broken {
            "sha256:broken".into()
        } else {
            target_hash(&removed, &removed, &lost)
        }),
        role_removal_node_ids: Some(removed.clone()),
        removed_storage_node_ids: Some(removed),
        unavailable_source_node_ids: (!lost.is_empty()).then_some(lost),
        completed_at: r.completed.then(|| Time(at(now))),
        quiet_since: r.quiet_since_ago.map(|ago| Time(at(now - i64::from(ago)))),
        repair_worker_ids: map(&r.repairs),
        repair_baselines: map(&r.baselines),
        requires_empty_queue: r.requires_empty_queue,
        ..StorageDrainStatus::default()
    }
}

fn layout(i: &DrainInput) -> Option<ClusterLayout> {
    let roles: Vec<_> = i
        .roles
        .iter()
        .take(6)
        .map(|(n, c)| json!({"id": node(*n).as_str(), "zone": "z", "tags": [], "capacity": c.map(u64::from)}))
        .collect();
    let staged: Vec<_> = i
        .staged
        .iter()
        .take(3)
        .map(|(n, remove)| {
            if *remove {
                json!({"id": node(*n).as_str(), "remove": true})
            } else {
                json!({"id": node(*n).as_str(), "zone": "z", "tags": [], "capacity": 1})
            }
        })
        .collect();
    serde_json::from_value(json!({
        "version": i.version, "roles": roles, "parameters": {"zoneRedundancy": "maximum"},
        "partitionSize": 0, "stagedRoleChanges": staged,
        "stagedParameters": if i.staged_parameters { json!({"zoneRedundancy": {"atLeast": 2}}) } else { json!(null) },
    }))
    .ok()
}

fn history(h: w::History, version: u8) -> Option<LayoutHistory> {
    let v = u64::from(version);
    let current = json!({"version": v, "status": "Current", "storageNodes": 3, "gatewayNodes": 0});
    serde_json::from_value(match h {
        w::History::Settled => json!({"currentVersion": v, "minAck": v, "versions": [current]}),
        w::History::Draining { trackers, synced } => json!({
            "currentVersion": v, "minAck": v.saturating_sub(1),
            "versions": [current, {"version": v.saturating_sub(1), "status": "Draining", "storageNodes": 3, "gatewayNodes": 0}],
            "updateTrackers": trackers.then(|| json!({node(0).as_str(): {"ack": v, "sync": if synced { v } else { v.saturating_sub(1) }, "syncAck": v}})),
        }),
        w::History::Unknown => json!({"currentVersion": v, "minAck": v, "versions": [{"version": v, "status": "Odd", "storageNodes": 3, "gatewayNodes": 0}]}),
    })
    .ok()
}

fn health(h: w::Health) -> Option<ClusterHealth> {
    let (status, up, quorum, ok) = match h {
        w::Health::Healthy => ("healthy", 3, 256, 256),
        w::Health::Degraded => ("degraded", 2, 256, 100),
        w::Health::Unavailable => ("unavailable", 0, 0, 0),
        w::Health::Missing => return None,
        w::Health::Inconsistent => ("healthy", 3, 255, 256),
    };
    serde_json::from_value(json!({
        "status": status, "knownNodes": 3, "connectedNodes": up, "storageNodes": 3,
        "storageNodesUp": up, "partitions": 256, "partitionsQuorum": quorum, "partitionsAllOk": ok,
    }))
    .ok()
}

fn drain_machine(i: DrainInput) {
    let now = i64::from(i.now);
    let mut record = i.record.as_ref().map(|r| drain_record(r, now));
    let candidates: Vec<Candidate> = i
        .candidates
        .iter()
        .take(3)
        .map(|c| Candidate {
            namespace: "ns".into(),
            name: format!("g-storage-{}", c.node % 6),
            uid: format!("uid-{}", c.node % 6),
            node_id: c.proven.then(|| node(c.node)),
            pod_uid: c.proven.then(|| format!("pod-{}", c.node % 6)),
            lost: LostFacts {
                acknowledged: c
                    .acknowledged
                    .map(|a| a.map(node).ok_or_else(|| "lost".to_owned())),
                recorded_id: c.recorded.map(node),
                pod: c.pod.then(|| format!("g-storage-{}-0", c.node % 6)),
                replacement: c.replacement.map(node),
            },
            // Storage identities only: the invariants checked below are the block proof's.
            gateway: false,
            swap: None,
            serving: false,
        })
        .collect();
    let (Some(layout), Some(history)) = (layout(&i), history(i.history, i.version)) else {
        return;
    };
    let health = health(i.health);
    let up: Vec<NodeId> = i.up.iter().take(6).map(|n| node(*n)).collect();
    if let (Some(w), Some(r)) = (&i.record, record.as_mut())
        && w.snapshot
    {
        r.verification_node_ids = Some(w::verification_snapshot(
            &layout,
            &facts::removed_ids(r),
            &facts::lost_ids(r),
            |id| up.contains(id),
        ));
        r.layout_version = Some(i64::from(i.version));
    }
    let mut proof = i
        .proof
        .as_ref()
        .map(|nodes| w::proof(&nodes[..nodes.len().min(6)], |n| Some(node(n))));
    // Every verified node's repair adopted and done: what the last steps of the proof start
    // from, which the bytes alone would seldom line up.
    if let (Some(rw), Some(r)) = (&i.record, record.as_mut())
        && rw.repairs_done
    {
        let p = proof.get_or_insert_default();
        for id in r.verification_node_ids.clone().unwrap_or_default() {
            r.repair_baselines
                .get_or_insert_default()
                .insert(id.clone(), 100);
            r.repair_worker_ids
                .get_or_insert_default()
                .insert(id.clone(), 200);
            let Ok(node) = id.parse::<NodeId>() else {
                continue;
            };
            let done = w::Worker {
                id: 200,
                kind: w::WorkerKind::Repair,
                state: w::WorkerState::Done,
                errors: 0,
                queue: 0,
                persistent: 0,
                disabled: false,
            };
            p.workers
                .entry(node.clone())
                .or_default()
                .extend(w::worker(&done));
            p.block_errors.entry(node).or_insert(0);
        }
    }
    let o = drain::Observed {
        record: record.as_ref(),
        candidates: &candidates,
        actor_requests: i.actor_requests,
        layout: &layout,
        history: &history,
        health: health.as_ref(),
        up: &up,
        consistent: !i.inconsistent_mode,
        replication_factor: u32::from(i.replication_factor % 6),
        unverified_peers: i.unverified_peers.then(|| "an external node".to_owned()),
        requires_empty_queue: i.requires_empty_queue,
        proof: proof.as_ref(),
        now: at(now),
        quiet: Duration::from_secs(u64::from(i.quiet)),
        rpc_timeout: Duration::from_secs(u64::from(i.rpc_timeout)),
        new_transaction_id: "tx-new",
    };
    let step = drain::step(&o);
    assert_eq!(
        step,
        drain::step(&o),
        "the drain step is not a function of its input"
    );
    let safe_to_remove = |id: &NodeId| {
        o.consistent
            && o.unverified_peers.is_none()
            && facts::fully_healthy(o.health)
            && o.history.is_settled()
            && facts::staged_only_removal_of(o.layout, id)
            && facts::storage_roles_except(o.layout, id)
                >= usize::try_from(o.replication_factor)
                    .unwrap_or(usize::MAX)
                    .max(1)
    };
    match &step {
        Step::SwapRole { .. } | Step::SkipRetiredAcks { .. } => {
            panic!("a gateway step from storage candidates and records")
        }
        Step::RemoveRole { id, version } => {
            let r = record.as_ref().expect("a removal without a record");
            assert!(r.completed_at.is_none() && hash_consistent(r) && o.actor_requests);
            assert!(facts::removed_ids(r).contains(id) && !facts::lost_ids(r).contains(id));
            assert!(o.layout.role(id).is_some() && *version == o.layout.version + 1);
            assert!(safe_to_remove(id), "an unsafe role removal");
        }
        Step::Record(r) | Step::LaunchRepairs { record: r, .. } => {
            assert!(hash_consistent(r), "writes an inconsistent record");
            match &record {
                None => {
                    assert!(matches!(step, Step::Record(_)) && r.completed_at.is_none());
                    let c = candidates.first().expect("a new drain without a candidate");
                    assert_eq!(r.actor.as_ref().and_then(|a| a.uid.as_ref()), Some(&c.uid));
                    let ids = facts::removed_ids(r);
                    assert_eq!(ids.len(), 1);
                    let target = &ids[0];
                    if facts::lost_ids(r).is_empty() {
                        assert_eq!(c.node_id.as_ref(), Some(target));
                        assert!(c.pod_uid.is_some() && safe_to_remove(target));
                    } else {
                        assert_eq!(
                            c.lost.acknowledged.as_ref().and_then(|a| a.as_ref().ok()),
                            Some(target)
                        );
                        assert_eq!(c.lost.recorded_id.as_ref(), Some(target));
                        assert!(
                            !o.up.contains(target),
                            "a node Garage sees up is recorded lost"
                        );
                    }
                }
                Some(prev) => {
                    facts::continues_drain(prev, r);
                    let gone = facts::removed_ids(r)
                        .iter()
                        .all(|i| o.layout.role(i).is_none());
                    if matches!(step, Step::LaunchRepairs { .. }) {
                        assert!(
                            gone && o.history.is_settled(),
                            "repairs before the removal settled"
                        );
                    }
                    if r.completed_at.is_some() && prev.completed_at.is_none() {
                        assert!(o.proof.is_some(), "completed without the proof's reads");
                        let quiet = o.quiet.max(quiet_floor(o.rpc_timeout));
                        facts::completion_earned(prev, r, o.layout, o.history, o.now, quiet);
                    }
                }
            }
        }
        Step::Clear => {
            let r = record.as_ref().expect("clears nothing");
            let left = facts::removed_ids(r)
                .iter()
                .any(|i| o.layout.role(i).is_some());
            assert!(
                !o.actor_requests && (r.completed_at.is_some() || left),
                "dropped mid-proof"
            );
        }
        Step::Idle => assert!(record.is_none()),
        Step::Wait { .. } => {}
    }
}

#[derive(Debug, Arbitrary)]
struct MemberW {
    pool: bool,
    node_id: Option<u8>,
    workload: Option<u8>,
    desired: Option<u8>,
    pod: Option<PodW>,
    up: bool,
    in_layout: bool,
    resize_pending: bool,
    suspended: bool,
}

#[derive(Debug, Arbitrary)]
struct PodW {
    uid: u8,
    revision: Option<u8>,
    ready: bool,
    terminating: bool,
    identity_proven: bool,
    owner: Option<u8>,
}

#[derive(Debug, Arbitrary)]
struct RolloutInput {
    record: Option<RolloutRecordW>,
    members: Vec<MemberW>,
    healthy: bool,
    settled: bool,
    garage_read: bool,
    drain_active: bool,
    /// Per member: its data claim's UID (absent when `None`) and whether it is being deleted.
    claims: Vec<Option<(u8, bool)>>,
}

#[derive(Debug, Arbitrary)]
struct RolloutRecordW {
    actor: u8,
    node_id: Option<u8>,
    previous: Option<u8>,
    workload: Option<u8>,
    retired: Vec<u8>,
    /// The UID recorded for the actor's data claim.
    claim: Option<u8>,
}

fn rollout_machine(i: RolloutInput) {
    let members: Vec<Member> = i
        .members
        .iter()
        .take(5)
        .enumerate()
        .map(|(k, m)| Member {
            name: format!("m-{k}"),
            uid: format!("uid-{k}"),
            generation: Some(1),
            pool: m.pool.then(|| ("fast".to_owned(), format!("worker-{k}"))),
            node_id: m.node_id.map(node),
            suspended: m.suspended,
            workload_uid: m.workload.map(|u| format!("wl-{}", u % 4)),
            desired_revision: m.desired.map(|r| format!("rev-{}", r % 3)),
            pod: m.pod.as_ref().map(|p| PodState {
                name: format!("m-{k}-0"),
                uid: format!("pod-{}", p.uid % 8),
                revision: p.revision.map(|r| format!("rev-{}", r % 3)),
                ready: p.ready,
                terminating: p.terminating,
                identity_proven: p.identity_proven,
                owner_uid: p.owner.map(|u| format!("wl-{}", u % 4)),
                claims: vec![format!("data-m-{k}-0")],
            }),
            up: m.up,
            in_layout: m.in_layout,
            resize_pending: m.resize_pending,
        })
        .collect();
    let record = i.record.as_ref().map(|r| StorageRolloutStatus {
        garage_node_uid: Some(format!("uid-{}", r.actor % 6)),
        garage_node_name: Some(format!("m-{}", r.actor % 6)),
        garage_node_id: r.node_id.map(|n| node(n).to_string()),
        previous_pod_uid: r.previous.map(|u| format!("pod-{}", u % 8)),
        workload_uid: r.workload.map(|u| format!("wl-{}", u % 4)),
        retired_workload_uids: (!r.retired.is_empty()).then(|| {
            r.retired
                .iter()
                .take(40)
                .map(|u| format!("wl-{}", u % 40))
                .collect()
        }),
        persistent_volume_claims: r.claim.map(|u| {
            vec![PvcIdentity {
                name: Some(format!("data-m-{}-0", r.actor % 6)),
                uid: Some(format!("claim-{}", u % 3)),
            }]
        }),
        ..StorageRolloutStatus::default()
    });
    let claims: Vec<rollout::ClaimState> = i
        .claims
        .iter()
        .take(5)
        .enumerate()
        .filter_map(|(k, c)| {
            c.map(|(u, terminating)| rollout::ClaimState {
                name: format!("data-m-{k}-0"),
                uid: format!("claim-{}", u % 3),
                terminating,
            })
        })
        .collect();
    // The recorded claim is not the one there now: the transaction must stand still.
    let claim_replaced = record
        .as_ref()
        .and_then(|r| r.persistent_volume_claims.as_ref())
        .into_iter()
        .flatten()
        .any(|r| {
            !claims.iter().any(|c| {
                Some(&c.name) == r.name.as_ref() && Some(&c.uid) == r.uid.as_ref() && !c.terminating
            })
        });
    let o = rollout::Observed {
        claims: &claims,
        record: record.as_ref(),
        members: &members,
        healthy: i.healthy,
        settled: i.settled,
        garage_read: i.garage_read,
        drain_active: i.drain_active,
        generation: Some(1),
        config_hash: "hash".into(),
        recovery_request: None,
    };
    let step = rollout::step(&o);
    assert_eq!(
        step,
        rollout::step(&o),
        "the rollout step is not a function of its input"
    );
    // Behind its workload's revision, or waiting for a restart to finish growing a file system.
    let outdated = |m: &Member| {
        let behind = match (
            &m.desired_revision,
            m.pod.as_ref().and_then(|p| p.revision.as_ref()),
        ) {
            (Some(want), Some(have)) => want != have,
            (Some(_), None) => m.pod.is_some(),
            (None, _) => false,
        };
        behind || (m.resize_pending && m.pod.is_some() && m.desired_revision.is_some())
    };
    let actor_present = record.as_ref().is_some_and(|r| {
        members
            .iter()
            .any(|m| Some(&m.uid) == r.garage_node_uid.as_ref())
    });
    if claim_replaced && actor_present {
        assert!(
            matches!(step, rollout::Step::Wait { .. }),
            "a rollout whose recorded claim was replaced moved on: {step:?}"
        );
    }
    match &step {
        rollout::Step::DeletePod { name, uid } => {
            let r = record.as_ref().expect("a pod deleted without a record");
            let actor = members
                .iter()
                .find(|m| Some(&m.uid) == r.garage_node_uid.as_ref())
                .expect("the recorded actor");
            let pod = actor.pod.as_ref().expect("the actor's pod");
            assert!(
                &pod.name == name && &pod.uid == uid && !pod.terminating,
                "deletes another pod"
            );
            assert!(!actor.suspended, "deletes the pod of a suspended member");
        }
        rollout::Step::Record(r) => match &record {
            None => {
                assert!(
                    !o.drain_active && o.garage_read && o.healthy && o.settled,
                    "started with a gate open"
                );
                for m in &members {
                    let p = m.pod.as_ref().expect("every member has a pod");
                    assert!(
                        p.ready
                            && !p.terminating
                            && p.identity_proven
                            && m.node_id.is_some()
                            && m.up
                            && m.in_layout
                    );
                }
                let actor = members
                    .iter()
                    .find(|m| Some(&m.uid) == r.garage_node_uid.as_ref())
                    .expect("the actor is a member");
                assert!(outdated(actor), "a current member is replaced");
                assert!(!actor.suspended, "a suspended member is picked");
                assert_eq!(
                    r.previous_pod_uid.as_ref(),
                    actor.pod.as_ref().map(|p| &p.uid)
                );
                assert_eq!(
                    r.garage_node_id,
                    actor.node_id.as_ref().map(ToString::to_string)
                );
            }
            Some(prev) => facts::continues_rollout(prev, r),
        },
        rollout::Step::Clear => assert!(record.is_some()),
        rollout::Step::Converged => {
            // A suspended member behind its revision holds the rollout open.
            assert!(record.is_none() && !members.iter().any(outdated));
            assert!(members.iter().all(|m| m.desired_revision.is_some()));
        }
        rollout::Step::Wait { .. } => {}
    }
    let _ = rollout::condition(&step, record.as_ref());
}

#[derive(Debug, Arbitrary)]
struct TeardownInput {
    drain_policy: bool,
    nodes: Vec<(u8, bool)>,
    owned: Vec<(u8, bool)>,
}

fn teardown_machine(i: TeardownInput) {
    let child = |kind: &'static str, (n, deleting): &(u8, bool)| Child {
        kind,
        name: format!("{}-{n}", kind.to_ascii_lowercase()),
        deleting: *deleting,
    };
    let o = teardown::Observed {
        nodes: i
            .nodes
            .iter()
            .take(6)
            .map(|c| child("GarageNode", c))
            .collect(),
        owned: i
            .owned
            .iter()
            .take(6)
            .map(|c| child("Service", c))
            .collect(),
    };
    let policy = if i.drain_policy {
        DeletionPolicy::Drain
    } else {
        DeletionPolicy::Destroy
    };
    let phase = teardown::step(policy, &o);
    assert_eq!(phase, teardown::step(policy, &o));
    match &phase {
        Phase::Refused(_) => assert_eq!(policy, DeletionPolicy::Drain),
        Phase::DeleteNodes(names) => {
            assert_eq!(policy, DeletionPolicy::Destroy);
            let fresh: Vec<&String> = o
                .nodes
                .iter()
                .filter(|n| !n.deleting)
                .map(|n| &n.name)
                .collect();
            assert_eq!(names.iter().collect::<Vec<_>>(), fresh);
        }
        Phase::WaitForNodes(_) => assert!(!o.nodes.is_empty() || !o.owned.is_empty()),
        Phase::DeleteOwned(children) => {
            assert!(
                o.nodes.is_empty(),
                "owned objects go while GarageNodes remain"
            );
            assert!(children.iter().all(|c| !c.deleting));
        }
        Phase::Done => {
            assert!(policy == DeletionPolicy::Destroy && o.nodes.is_empty() && o.owned.is_empty())
        }
    }
    if policy == DeletionPolicy::Drain {
        assert!(
            matches!(phase, Phase::Refused(_)),
            "the Drain policy removes something"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((which, rest)) = data.split_first() else {
        return;
    };
    let mut u = Unstructured::new(rest);
    match which % 3 {
        0 => {
            if let Ok(i) = DrainInput::arbitrary(&mut u) {
                drain_machine(i);
            }
        }
        1 => {
            if let Ok(i) = RolloutInput::arbitrary(&mut u) {
                rollout_machine(i);
            }
        }
        _ => {
            if let Ok(i) = TeardownInput::arbitrary(&mut u) {
                teardown_machine(i);
            }
        }
    }
});
