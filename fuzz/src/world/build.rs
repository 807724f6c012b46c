//! Turns a [`World`] into the objects the API server and Garage would return.

use std::collections::BTreeMap;
use std::sync::Arc;

use decide::cluster::members;
use decide::cluster::observed::{GarageRead, GarageView, Observed};
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use reconciler::desired::{Settings, config, labels, nodes, secrets};
use reconciler::garage::{NodeId, WorkerInfo};
use reconciler::machine::drain::{ProofObservation, REPAIR_WORKER, RESYNC_WORKER};
use reconciler::names;
use serde_json::{Value, json};
use shared_types::drain::target_hash;
use shared_types::garage_cluster::common::{
    DrainActor, DrainActorKind, StorageDrainStatus, StorageRolloutStatus,
};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::{
    ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_CONFIG_HASH, ANNOTATION_DRAIN,
    ANNOTATION_RENDERED_HASH,
};
use shared_types::keys::finalizer::FINALIZER_NODE;

use super::{
    AckLost, Actor, Addr, ForeignRole, Health, History, Identity, InGarage, MAX_USERS, NodeProof,
    PodShape, Role, SLOTS, Slot, StagedKind, StagedParameters, StsShape, UserNode, UserShape,
    Worker, WorkerKind, WorkerState, World, at, id,
};

mod objects;

use objects::*;

/// One member of the built world, by the identity it runs.
#[derive(Debug, Clone)]
pub struct Member {
    /// GarageNode name.
    pub name: String,
    /// GarageNode UID.
    pub uid: String,
    /// The ID its process runs (whatever its GarageNode recorded).
    pub id: NodeId,
    /// Its pod, when one exists.
    pub pod: Option<Pod>,
    /// Generated Auto slot.
    pub generated: bool,
}

/// The members built so far, with their workloads and what Garage reports about each.
#[derive(Default)]
struct Workloads {
    pods: Vec<Pod>,
    statefulsets: Vec<StatefulSet>,
    members: Vec<Member>,
    /// Parallel to `members`.
    garage: Vec<InGarage>,
}

impl Workloads {
    fn add(&mut self, member: Member, sts: Option<StatefulSet>, garage: InGarage) {
        self.pods.extend(member.pod.clone());
        self.statefulsets.extend(sts);
        self.members.push(member);
        self.garage.push(garage);
    }
}

/// A cluster whose settings the reconciler refuses, and why: what `refuse` decides from.
pub struct Refused {
    /// The cluster.
    pub cluster: GarageCluster,
    /// Why its settings cannot be used.
    pub error: reconciler::desired::DesiredError,
}

/// What [`build`] produced.
pub struct Built {
    /// The observed world.
    pub observed: Observed,
    /// The cluster's settings.
    pub settings: Settings,
    /// The members and the identity each runs.
    pub members: Vec<Member>,
}

/// The layout role JSON of `id` for `member` (its desired role, varied by `role`).
fn role_json(id: &NodeId, desired: &reconciler::layout::DesiredRole, role: Role) -> Option<Value> {
    let mut tags = desired.tags.clone();
    let (zone, capacity) = match role {
        Role::Absent => return None,
        Role::Desired => (desired.zone.clone(), desired.capacity),
        Role::OtherZone => (format!("{}-x", desired.zone), desired.capacity),
        Role::OtherCapacity => (
            desired.zone.clone(),
            Some(desired.capacity.unwrap_or(0).saturating_add(1)),
        ),
        Role::OtherTags => {
            tags.pop();
            (desired.zone.clone(), desired.capacity)
        }
        Role::Gateway => (desired.zone.clone(), None),
        Role::ZeroCapacity => (desired.zone.clone(), Some(0)),
    };
    Some(json!({"id": id.as_str(), "zone": zone, "capacity": capacity, "tags": tags}))
}

/// A worker as `ListWorkers` reports it.
pub fn worker(w: &Worker) -> Option<WorkerInfo> {
    let name = match w.kind {
        WorkerKind::Repair => REPAIR_WORKER.to_owned(),
        WorkerKind::Resync => format!("{RESYNC_WORKER} #1"),
        WorkerKind::Other => "Object lifecycle worker".to_owned(),
    };
    let state = match w.state {
        WorkerState::Busy => json!("busy"),
        WorkerState::Idle => json!("idle"),
        WorkerState::Done => json!("done"),
        WorkerState::Throttled => json!({"throttled": {"durationSecs": 0.5}}),
        WorkerState::Other => json!("sleeping"),
    };
    let freeform: Vec<&str> = if w.disabled { vec!["disabled"] } else { vec![] };
    serde_json::from_value(json!({
        "id": w.id, "name": name, "state": state, "errors": w.errors,
        "consecutiveErrors": 0, "queueLength": w.queue, "persistentErrors": w.persistent,
        "freeform": freeform,
    }))
    .ok()
}

/// The drain proof's reads of `nodes`, each node named by `pick` (nodes it names none for are
/// left out: they did not answer).
pub fn proof(nodes: &[NodeProof], pick: impl Fn(u8) -> Option<NodeId>) -> ProofObservation {
    let mut p = ProofObservation::default();
    for n in nodes {
        let Some(node) = pick(n.node) else {
            continue;
        };
        p.workers
            .insert(node.clone(), n.workers.iter().filter_map(worker).collect());
        p.block_errors.insert(node, usize::from(n.block_errors));
    }
    p
}

/// The world `w` of `cluster` (whose spec comes from the fuzz input), or why it cannot be
/// built: the settings the reconciler would refuse.
pub fn build(mut cluster: GarageCluster, w: &World) -> Result<Built, Box<Refused>> {
    let now = i64::from(w.now);
    if w.cluster_drain {
        cluster
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(ANNOTATION_DRAIN.into(), "true".into());
    }
    let s = match Settings::from_cluster(&cluster) {
        Ok(s) => s,
        Err(error) => return Err(Box::new(Refused { cluster, error })),
    };
    let revision = match config::revision(&cluster, &s) {
        Ok(r) => r,
        Err(error) => return Err(Box::new(Refused { cluster, error })),
    };
    let config_hash: String = revision.revision.chars().take(16).collect();
    let admin_secret = secrets::admin_token_source(&cluster, &s).name;

    let mut generated = BTreeMap::new();
    let mut user_nodes = Vec::new();
    let mut built = Workloads::default();
    let started = |recent: bool| if recent { now } else { now - 3600 };

    for (ordinal_u32, slot) in present(&w.slots, s.replicas, 2) {
        let Ok(mut gn) = nodes::auto_storage_node(&cluster, &s, ordinal_u32) else {
            continue;
        };
        let ordinal = u8::try_from(ordinal_u32).unwrap_or(0);
        let own = id(ordinal);
        dress_slot(&mut gn, &own, slot, now);
        if slot.rendered_stale {
            gn.metadata
                .annotations
                .get_or_insert_default()
                .insert(ANNOTATION_RENDERED_HASH.into(), "from-an-older-spec".into());
        }
        let name = gn.name_any();
        let ip = 10 + ordinal;
        let revision = if slot.old_revision { "rev-0" } else { "rev-1" };
        built.add(
            Member {
                uid: uid_of(&name),
                id: own,
                pod: pod(
                    (&s.name, &name),
                    ip,
                    slot.pod,
                    (revision, Tier::Storage),
                    started(slot.started_recently),
                ),
                generated: true,
                name: name.clone(),
            },
            statefulset(&name, slot.sts, &config_hash, &admin_secret),
            slot.garage,
        );
        generated.insert(ordinal_u32, gn);
    }
    for (index, u) in w.users.iter().enumerate().take(MAX_USERS) {
        let own = id(0x20 + u8::try_from(index).unwrap_or(0));
        let Some(mut gn) = user_node(&s.name, index, u, &own) else {
            continue;
        };
        dress(
            &mut gn, &own, u.identity, u.drain, u.ack_lost, u.deleting, now,
        );
        let name = gn.name_any();
        // An external node runs outside Kubernetes: no pod, no StatefulSet.
        let managed = !matches!(u.shape, UserShape::External { .. });
        let tier = if u.shape == UserShape::Gateway {
            Tier::Gateway {
                served: !u.unserved,
            }
        } else {
            Tier::Storage
        };
        let ip = 30 + u8::try_from(index).unwrap_or(0);
        built.add(
            Member {
                uid: uid_of(&name),
                id: own,
                pod: pod((&s.name, &name), ip, u.pod, ("rev-1", tier), now - 3600)
                    .filter(|_| managed),
                generated: false,
                name: name.clone(),
            },
            statefulset(&name, StsShape::Current, &config_hash, &admin_secret).filter(|_| managed),
            u.garage,
        );
        user_nodes.push(gn);
    }
    let gateways = gateway_slots(
        &cluster,
        &s,
        w,
        now,
        (&config_hash, &admin_secret),
        &mut built,
    );

    let Workloads {
        pods,
        statefulsets,
        members,
        garage: garage_facts,
    } = built;

    // Every ID of the world: members, then foreign nodes.
    let foreign: Vec<(NodeId, ForeignRole)> = w
        .foreign
        .iter()
        .take(2)
        .enumerate()
        .map(|(k, f)| (id(0x40 + u8::try_from(k).unwrap_or(0)), *f))
        .collect();
    let all_ids: Vec<NodeId> = members
        .iter()
        .map(|m| m.id.clone())
        .chain(foreign.iter().map(|(i, _)| i.clone()))
        .collect();
    let pick = |n: u8| -> Option<&NodeId> {
        (!all_ids.is_empty()).then(|| &all_ids[usize::from(n) % all_ids.len()])
    };

    // Desired roles, as the cluster computes them.
    let all_nodes: Vec<&GarageNode> = generated
        .values()
        .chain(user_nodes.iter())
        .chain(gateways.values())
        .collect();
    let desired: Vec<Option<reconciler::layout::DesiredRole>> = members
        .iter()
        .map(|m| {
            all_nodes
                .iter()
                .find(|gn| gn.name_any() == m.name)
                .and_then(|gn| members::member(gn, &pods, &s, m.generated))
                .map(|v| v.member.role)
        })
        .collect();

    let mut roles = Vec::new();
    let mut status_nodes = Vec::new();
    for (index, (m, g)) in members.iter().zip(&garage_facts).enumerate() {
        if let Some(d) = &desired[index]
            && let Some(r) = role_json(&m.id, d, g.role)
        {
            roles.push(r);
        }
        if g.unseen {
            continue;
        }
        let addr = match g.addr {
            Addr::Pod => m
                .pod
                .as_ref()
                .and_then(decide::pods::running_ip)
                .map(|ip| format!("{ip}:{}", s.rpc_port)),
            Addr::Old => Some(format!("198.18.0.99:{}", s.rpc_port)),
            Addr::Unknown => None,
        };
        status_nodes.push(json!({
            "id": m.id.as_str(), "isUp": !g.down, "draining": g.draining, "addr": addr,
        }));
    }
    for (i, f) in &foreign {
        roles.push(json!({
            "id": i.as_str(), "zone": "foreign", "tags": [],
            "capacity": if f.gateway { None } else { Some(1u64 << 30) },
        }));
        status_nodes.push(json!({"id": i.as_str(), "isUp": f.up, "draining": false}));
    }
    let mut staged = Vec::new();
    for change in w.staged.iter().take(3) {
        let Some(target) = pick(change.target) else {
            continue;
        };
        let member_role = members
            .iter()
            .position(|m| &m.id == target)
            .and_then(|i| desired[i].as_ref());
        staged.push(match (change.kind, member_role) {
            (StagedKind::Remove, _) => json!({"id": target.as_str(), "remove": true}),
            (StagedKind::AssignDesired, Some(d)) => json!({
                "id": target.as_str(), "zone": d.zone, "capacity": d.capacity, "tags": d.tags,
            }),
            _ => json!({"id": target.as_str(), "zone": "elsewhere", "capacity": 1, "tags": []}),
        });
    }
    let version = u64::from(w.version % 8) + u64::from(!roles.is_empty());
    let parameters = json!({"zoneRedundancy": "maximum"});
    let staged_parameters = match w.staged_parameters {
        StagedParameters::None => Value::Null,
        StagedParameters::Same => parameters.clone(),
        StagedParameters::Other => json!({"zoneRedundancy": {"atLeast": 2}}),
    };
    let layout = serde_json::from_value(json!({
        "version": version, "roles": roles, "parameters": parameters, "partitionSize": 0,
        "stagedRoleChanges": staged, "stagedParameters": staged_parameters,
    }));
    let storage_roles = roles
        .iter()
        .filter(|r| r["capacity"].as_u64().is_some_and(|c| c > 0))
        .count() as u64;
    let current = json!({"version": version, "status": "Current", "storageNodes": storage_roles, "gatewayNodes": 0});
    let history = match w.history {
        History::Settled => {
            json!({"currentVersion": version, "minAck": version, "versions": [current]})
        }
        History::Draining { trackers, synced } => {
            let sync = if synced {
                version
            } else {
                version.saturating_sub(1)
            };
            let map: BTreeMap<String, Value> = all_ids
                .iter()
                .map(|i| {
                    (
                        i.to_string(),
                        json!({"ack": version, "sync": sync, "syncAck": sync}),
                    )
                })
                .collect();
            json!({
                "currentVersion": version, "minAck": version.saturating_sub(1),
                "versions": [current, {"version": version.saturating_sub(1), "status": "Draining", "storageNodes": storage_roles, "gatewayNodes": 0}],
                "updateTrackers": if trackers && !map.is_empty() { json!(map) } else { Value::Null },
            })
        }
        History::Unknown => json!({
            "currentVersion": version, "minAck": version,
            "versions": [{"version": version, "status": "Rebalancing", "storageNodes": storage_roles, "gatewayNodes": 0}],
        }),
    };
    let n = storage_roles;
    let health = match w.health {
        Health::Healthy => Some(
            json!({"status": "healthy", "knownNodes": n, "connectedNodes": n, "storageNodes": n, "storageNodesUp": n, "partitions": 256, "partitionsQuorum": 256, "partitionsAllOk": 256}),
        ),
        Health::Degraded => Some(
            json!({"status": "degraded", "knownNodes": n, "connectedNodes": n.saturating_sub(1), "storageNodes": n, "storageNodesUp": n.saturating_sub(1), "partitions": 256, "partitionsQuorum": 256, "partitionsAllOk": 200}),
        ),
        Health::Unavailable => Some(
            json!({"status": "unavailable", "knownNodes": n, "connectedNodes": 0, "storageNodes": n, "storageNodesUp": 0, "partitions": 256, "partitionsQuorum": 0, "partitionsAllOk": 0}),
        ),
        Health::Missing => None,
        Health::Inconsistent => Some(
            json!({"status": "healthy", "knownNodes": n, "connectedNodes": n, "storageNodes": n + 1, "storageNodesUp": n, "partitions": 256, "partitionsQuorum": 255, "partitionsAllOk": 256}),
        ),
    };
    let garage = match (
        w.garage_unavailable,
        layout,
        serde_json::from_value(history),
        serde_json::from_value(json!({"layoutVersion": version, "nodes": status_nodes})),
    ) {
        (false, Ok(layout), Ok(history), Ok(status)) => GarageView::Read(Box::new(GarageRead {
            status,
            layout,
            history,
            health: health.and_then(|h| serde_json::from_value(h).ok()),
            every_view_healthy: w.health == Health::Healthy && !w.one_view_unhealthy,
            build: None,
            worker_variables: Default::default(),
        })),
        _ => GarageView::Unavailable("GetClusterStatus: HTTP 503 (ServiceUnavailable)".into()),
    };

    // The transaction records.
    let actor_of = |a: Actor| -> (String, String, NodeId, Option<Pod>) {
        let chosen = match a {
            Actor::Slot(n) => members
                .iter()
                .filter(|m| m.generated)
                .nth(usize::from(n) % SLOTS),
            Actor::User(n) => members
                .iter()
                .filter(|m| !m.generated)
                .nth(usize::from(n) % MAX_USERS),
            Actor::Gone => None,
        };
        match chosen {
            Some(m) => (m.name.clone(), m.uid.clone(), m.id.clone(), m.pod.clone()),
            None => ("gone-node".into(), "uid-gone".into(), id(0x60), None),
        }
    };
    let mut status = cluster.status.clone().unwrap_or_default();
    if let Some(d) = &w.drain {
        let (name, uid, node, p) = actor_of(d.actor);
        let ids = vec![node.to_string()];
        let unavailable = if d.lost { ids.clone() } else { Vec::new() };
        let hash = if d.hash_broken {
            "sha256:broken".to_owned()
        } else {
            target_hash(&ids, &ids, &unavailable)
        };
        let by_index = |pairs: &[(u8, u8)]| -> Option<BTreeMap<String, i64>> {
            (!pairs.is_empty()).then(|| {
                pairs
                    .iter()
                    .filter_map(|(n, w)| Some((pick(*n)?.to_string(), i64::from(*w))))
                    .collect()
            })
        };
        status.storage_drain = Some(StorageDrainStatus {
            actor: Some(DrainActor {
                api_version: Some("garage.rajsingh.info/v1beta1".into()),
                kind: Some(DrainActorKind::GarageNode),
                namespace: Some("ns".into()),
                name: Some(name),
                uid: Some(if d.uid_mismatch {
                    "uid-earlier".into()
                } else {
                    uid
                }),
            }),
            transaction_id: Some("tx-recorded".into()),
            started_at: Some(Time(at(now - i64::from(d.started_ago)))),
            target_hash: Some(hash),
            role_removal_node_ids: Some(ids.clone()),
            removed_storage_node_ids: Some(ids.clone()),
            unavailable_source_node_ids: d.lost.then_some(unavailable),
            managed_pod_uids: p
                .filter(|_| !d.lost)
                .and_then(|p| p.metadata.uid)
                .map(|u| BTreeMap::from([(node.to_string(), u)])),
            layout_version: Some(i64::from(w.version % 8)),
            error_count: Some(0),
            queue_length: Some(0),
            requires_empty_queue: Some(d.requires_empty_queue),
            completed_at: d.completed.then(|| Time(at(now))),
            quiet_since: d.quiet_since_ago.map(|ago| Time(at(now - i64::from(ago)))),
            repair_worker_ids: by_index(&d.repairs),
            repair_baselines: by_index(&d.baselines),
            ..StorageDrainStatus::default()
        });
    }
    if let Some(r) = &w.rollout {
        let (name, uid, node, p) = actor_of(r.actor);
        status.storage_rollout = Some(StorageRolloutStatus {
            cluster_generation: cluster.metadata.generation,
            desired_config_hash: Some(revision.revision.clone()),
            desired_pod_spec_hash: Some("rev-1".into()),
            garage_node_id: Some(if r.id_mismatch { id(0x61) } else { node }.to_string()),
            garage_node_name: Some(name.clone()),
            garage_node_uid: Some(uid),
            previous_pod_uid: Some(match p.and_then(|p| p.metadata.uid) {
                Some(u) if r.previous_is_current => u,
                _ => "pod-replaced".into(),
            }),
            workload_uid: Some(if r.workload_mismatch {
                "sts-earlier".into()
            } else {
                sts_uid(&name)
            }),
            retired_workload_uids: (r.retired > 0).then(|| {
                (0..r.retired % 40)
                    .map(|k| format!("sts-retired-{k}"))
                    .collect()
            }),
            ..StorageRolloutStatus::default()
        });
    }
    if let (Some(d), Some(record), GarageView::Read(read)) =
        (&w.drain, status.storage_drain.as_mut(), &garage)
        && d.snapshot
    {
        record.verification_node_ids = Some(super::verification_snapshot(
            &read.layout,
            &crate::facts::removed_ids(record),
            &crate::facts::lost_ids(record),
            |id| read.status.nodes.iter().any(|n| n.id == *id && n.is_up),
        ));
        record.layout_version = i64::try_from(read.layout.version).ok();
    }
    cluster.status = Some(status);

    let proof = w
        .proof
        .as_ref()
        .map(|nodes| proof(nodes, |n| pick(n).cloned()));
    let cm = |name: &str| -> Option<ConfigMap> {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": "ns"}})).ok()
    };
    let (current_cm, old_cm, other_cm) = w.config_maps;
    let config_maps = [
        (!current_cm).then(|| revision.name.clone()),
        old_cm.then(|| format!("{}-000000000000", names::config_base(&s.name))),
        other_cm.then(|| "other-config".to_owned()),
    ]
    .into_iter()
    .flatten()
    .filter_map(|n| cm(&n))
    .collect();

    let mut observed = bare(cluster);
    observed.generated = generated;
    observed.user_nodes = user_nodes;
    observed.gateways = gateways;
    observed.config_maps = config_maps;
    observed.pods = pods;
    observed.garage = garage;
    observed.statefulsets = statefulsets;
    observed.proof = proof;
    observed.now = at(now);
    Ok(Built {
        observed,
        settings: s,
        members,
    })
}

/// A world with nothing in it but `cluster`: what a refused cluster is decided from.
pub fn bare(cluster: GarageCluster) -> Observed {
    Observed {
        cluster: Arc::new(cluster),
        generated: BTreeMap::new(),
        retiring: vec![],
        user_nodes: vec![],
        pool_members: vec![],
        gateways: BTreeMap::new(),
        daemonsets: vec![],
        config_maps: vec![],
        services: vec![],
        k8s_nodes: vec![],
        foreign_paths: vec![],
        // A fresh proof, as in a converged pool cluster: the pool plans are explored whole
        // (`hold_for_probe` has its own table tests).
        gate: Some(decide::pools::capability::Verdict::Proven(at(0))),
        pods: vec![],
        garage: GarageView::Unavailable("not read".into()),
        statefulsets: vec![],
        claims: vec![],
        proof: None,
        now: at(0),
        transaction_id: "tx-new".into(),
        monitoring_installed: false,
        edges: Vec::new(),
        go_token: None,
    }
}
