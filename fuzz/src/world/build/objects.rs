//! The Kubernetes objects of the world's members: their GarageNodes (Auto slots, generated
//! gateways, user-written nodes), pods and StatefulSets, and the identities they record.

use super::*;

/// A GarageNode or pod name's uid and related names.
pub(super) fn uid_of(name: &str) -> String {
    format!("uid-{name}")
}

pub(super) fn pod_uid(name: &str) -> String {
    format!("pod-{name}")
}

pub(super) fn sts_uid(name: &str) -> String {
    format!("sts-{name}")
}

/// How a pod's labels place it: a storage pod, or a gateway's in or out of its Service.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Tier {
    Storage,
    Gateway { served: bool },
}

/// The pod of GarageNode `node` at 198.18.0.`ip`.
pub(super) fn pod(
    (cluster, node): (&str, &str),
    ip: u8,
    shape: PodShape,
    (revision, tier): (&str, Tier),
    started: i64,
) -> Option<Pod> {
    if shape == PodShape::Missing {
        return None;
    }
    let mut labels = match tier {
        Tier::Storage => labels::storage_pod_labels(cluster, node),
        Tier::Gateway { served } => {
            let mut l = labels::gateway_pod_labels(cluster, node);
            if !served {
                l.remove(shared_types::keys::label::LABEL_TIER);
            }
            l
        }
    };
    labels.insert("controller-revision-hash".into(), revision.into());
    let phase = if shape == PodShape::Pending {
        "Pending"
    } else {
        "Running"
    };
    let ready = if matches!(shape, PodShape::Running | PodShape::Terminating) {
        "True"
    } else {
        "False"
    };
    let mut p = json!({
        "metadata": {
            "name": names::node_pod(node),
            "namespace": "ns",
            "uid": pod_uid(node),
            "labels": labels,
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "StatefulSet", "name": node,
                "uid": sts_uid(node), "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "status": {
            "phase": phase,
            "startTime": Time(at(started)),
            "conditions": [{"type": "Ready", "status": ready}],
        },
    });
    if matches!(
        shape,
        PodShape::Running | PodShape::NotReady | PodShape::Terminating
    ) {
        p["status"]["podIP"] = json!(format!("198.18.0.{ip}"));
    }
    if shape == PodShape::Terminating {
        p["metadata"]["deletionTimestamp"] = json!(Time(at(started)));
    }
    serde_json::from_value(p).ok()
}

/// The StatefulSet of GarageNode `node`.
pub(super) fn statefulset(
    node: &str,
    shape: StsShape,
    config_hash: &str,
    admin_secret: &str,
) -> Option<StatefulSet> {
    let (hash, secret, observed, revision) = match shape {
        StsShape::Missing => return None,
        StsShape::Current => (config_hash, admin_secret, 1, "rev-1"),
        StsShape::NotObserved => (config_hash, admin_secret, 0, "rev-1"),
        StsShape::OldConfig => ("0000000000000000", admin_secret, 1, "rev-1"),
        StsShape::OtherSecret => (config_hash, "another-admin-token", 1, "rev-1"),
        StsShape::NewRevision => (config_hash, admin_secret, 1, "rev-2"),
    };
    serde_json::from_value(json!({
        "metadata": {"name": node, "namespace": "ns", "uid": sts_uid(node), "generation": 1},
        "spec": {"selector": {}, "serviceName": "x", "template": {
            "metadata": {"annotations": {ANNOTATION_CONFIG_HASH: hash}},
            "spec": {"containers": [], "volumes": [
                {"name": "admin-token", "secret": {"secretName": secret}},
            ]},
        }},
        "status": {"replicas": 1, "observedGeneration": observed, "updateRevision": revision},
    }))
    .ok()
}

/// Sets the identity, annotations and deletion of a GarageNode.
#[allow(clippy::too_many_arguments)]
pub(super) fn dress(
    gn: &mut GarageNode,
    own: &NodeId,
    identity: Identity,
    drain: bool,
    ack_lost: AckLost,
    deleting: bool,
    now: i64,
) {
    let name = gn.name_any();
    gn.metadata.uid = Some(uid_of(&name));
    gn.metadata.finalizers = Some(vec![FINALIZER_NODE.into()]);
    let recorded = match identity {
        Identity::Known | Identity::Stale => Some(own.to_string()),
        Identity::SameAs(n) => Some(id(n % SLOTS as u8).to_string()),
        Identity::Garbage => Some("not-a-node-id".to_owned()),
        Identity::Unknown => None,
    };
    gn.status = recorded.map(|node_id| shared_types::garage_node::GarageNodeStatus {
        node_id: Some(node_id),
        observed_pod_uid: Some(if identity == Identity::Stale {
            "an-older-pod".to_owned()
        } else {
            pod_uid(&name)
        }),
        ..Default::default()
    });
    let annotations = gn.metadata.annotations.get_or_insert_default();
    if drain {
        annotations.insert(ANNOTATION_DRAIN.into(), "true".into());
    }
    if let Some(value) = ack_lost.value(own) {
        annotations.insert(ANNOTATION_ACKNOWLEDGE_LOST_SOURCE.into(), value);
    }
    if deleting {
        gn.metadata.deletion_timestamp = Some(Time(at(now)));
    }
}

/// A user-written GarageNode of `cluster`.
pub(super) fn user_node(
    cluster: &str,
    index: usize,
    u: &UserNode,
    own: &NodeId,
) -> Option<GarageNode> {
    let name = format!("manual-{index}");
    let volume = |size: &str| json!({"size": size, "storageClassName": "local-sim"});
    let mut spec = json!({
        "clusterRef": {"name": cluster},
        "zone": format!("zone-{}", u.zone % 3),
        "capacity": "2Gi",
        "storage": {"metadata": volume("100Mi"), "data": volume("2Gi")},
    });
    match u.shape {
        UserShape::Manual => {}
        UserShape::External { bad_id } => {
            spec["storage"] = Value::Null;
            spec["nodeId"] = json!(if bad_id {
                "not-an-id".to_owned()
            } else {
                own.to_string().to_ascii_uppercase()
            });
            spec["external"] = json!({"address": format!("10.0.0.{index}"), "port": 3901});
        }
        UserShape::Gateway => spec["gateway"] = json!(true),
        UserShape::Pinned => spec["nodeId"] = json!(own.to_string()),
    }
    serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageNode",
        "metadata": {"name": name, "namespace": "ns", "generation": 1},
        "spec": spec,
    }))
    .ok()
}

/// The slots of `slots` that exist, by ordinal, up to `beyond` past `replicas`: one below
/// `replicas` unless absent, one at or above it when extra (a scale-down in progress).
pub(super) fn present(
    slots: &[Slot],
    replicas: u32,
    beyond: u32,
) -> impl Iterator<Item = (u32, &Slot)> {
    let n = usize::try_from(replicas.saturating_add(beyond))
        .unwrap_or(slots.len())
        .min(slots.len());
    slots
        .iter()
        .take(n)
        .enumerate()
        .filter_map(move |(i, slot)| {
            let ordinal = u32::try_from(i).ok()?;
            let exists = if ordinal < replicas {
                !slot.absent
            } else {
                slot.extra
            };
            exists.then_some((ordinal, slot))
        })
}

/// [`dress`] with what `slot` says.
pub(super) fn dress_slot(gn: &mut GarageNode, own: &NodeId, slot: &Slot, now: i64) {
    dress(
        gn,
        own,
        slot.identity,
        slot.drain,
        slot.ack_lost,
        slot.deleting,
        now,
    );
}

/// The generated gateways of a cluster with a gateway tier, by ordinal: those below
/// `spec.gateway.replicas` unless absent, and one extra above it when present (a scale-down).
pub(super) fn gateway_slots(
    cluster: &GarageCluster,
    s: &Settings,
    w: &World,
    now: i64,
    (config_hash, admin_secret): (&str, &str),
    built: &mut Workloads,
) -> BTreeMap<u32, GarageNode> {
    let mut gateways = BTreeMap::new();
    if !s.gateway_tier {
        return gateways;
    }
    for (n, slot) in present(&w.gateways, s.gateway_replicas, 1) {
        let Ok(mut gn) = nodes::auto_gateway_node(cluster, s, n) else {
            continue;
        };
        let k = u8::try_from(n).unwrap_or(0);
        let own = id(0x30 + k);
        dress_slot(&mut gn, &own, slot, now);
        let name = gn.name_any();
        let started = if slot.started_recently {
            now
        } else {
            now - 3600
        };
        built.add(
            Member {
                uid: uid_of(&name),
                id: own,
                pod: pod(
                    (&s.name, &name),
                    50 + k,
                    slot.pod,
                    (
                        "rev-1",
                        Tier::Gateway {
                            served: !slot.unserved,
                        },
                    ),
                    started,
                ),
                generated: false,
                name,
            },
            statefulset(&gn.name_any(), slot.sts, config_hash, admin_secret),
            slot.garage,
        );
        gateways.insert(n, gn);
    }
    gateways
}
