//! The cluster's view of the storage rollout: the identity-bearing members as
//! [`machine::rollout`](crate::machine::rollout) sees them, read from what the pass observed.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use shared_types::garage_node::GarageNode;
use shared_types::keys::label;

use super::members::MemberView;
use super::observed::{GarageRead, Observed};
use crate::machine::drain::fully_healthy;
use crate::machine::rollout::{self, ClaimState, Member, PodState};
use crate::pods::is_ready;
use garage_api_types::NodeId;

/// Label the StatefulSet controller puts on its pods: the revision they run.
const STS_REVISION: &str = "controller-revision-hash";
/// Label the DaemonSet controller puts on its pods: the template generation they run.
const DS_GENERATION: &str = "pod-template-generation";

/// What this pass wants every workload to have been rendered from; a workload that does not
/// show it yet has no known target revision (its controller has not caught up), so the
/// rollout waits instead of calling the old revision current.
pub struct Rendered<'a> {
    /// Content hash of the current Garage configuration revision.
    pub config_hash: &'a str,
    /// GarageNode name to the content hash of its own revision, for members with one.
    pub node_configs: BTreeMap<String, String>,
    /// The Secret the pods must mount their admin token from (a pinned copy changes with its
    /// source).
    pub admin_secret: &'a str,
    /// The Secret the pods must mount their metrics token from, when the cluster names one.
    pub metrics_secret: Option<&'a str>,
    /// Generated GarageNode name to the rendered-hash annotation this pass wants it to carry.
    pub nodes: BTreeMap<String, String>,
    /// Pool DaemonSet name to the rendered-hash annotation this pass wants it to carry.
    pub daemonsets: BTreeMap<String, String>,
}

/// The Secret the pod spec's volume `volume` comes from, if it has that volume.
fn secret_of<'a>(spec: &'a k8s_openapi::api::core::v1::PodSpec, volume: &str) -> Option<&'a str> {
    spec.volumes
        .iter()
        .flatten()
        .find(|v| v.name == volume)
        .and_then(|v| v.secret.as_ref())
        .and_then(|s| s.secret_name.as_deref())
}

/// True when the pod spec mounts the admin token from `rendered.admin_secret` and the metrics
/// token from `rendered.metrics_secret` (no metrics-token volume when there is none).
fn mounts_credentials(spec: &k8s_openapi::api::core::v1::PodSpec, rendered: &Rendered<'_>) -> bool {
    secret_of(spec, "admin-token") == Some(rendered.admin_secret)
        && secret_of(spec, "metrics-token") == rendered.metrics_secret
}

/// The rendered-hash annotation of an object.
pub fn rendered_hash_of<K: kube::Resource>(k: &K) -> Option<String> {
    k.meta()
        .annotations
        .as_ref()?
        .get(shared_types::keys::annotation::ANNOTATION_RENDERED_HASH)
        .cloned()
}

/// The rollout's step this pass. `views` are the planned members (those leaving are not in
/// it); `membership_settled` is false while pool membership is still changing.
pub fn step(
    o: &Observed,
    views: &[MemberView],
    read: Option<&GarageRead>,
    membership_settled: bool,
    rendered: &Rendered<'_>,
) -> rollout::Step {
    let nodes: BTreeMap<String, &GarageNode> = o
        .generated
        .values()
        .chain(o.user_nodes.iter())
        .chain(o.pool_members.iter())
        .map(|gn| (gn.name_any(), gn))
        .collect();
    let members: Vec<Member> = views
        .iter()
        .filter(|v| !v.external)
        .filter_map(|v| member(o, v, nodes.get(&v.member.name)?, read, rendered))
        .collect();
    let record = o
        .cluster
        .status
        .as_ref()
        .and_then(|s| s.storage_rollout.as_ref());
    let drain_active = o
        .cluster
        .status
        .as_ref()
        .is_some_and(|s| s.storage_drain.is_some());
    let claims: Vec<ClaimState> = o
        .claims
        .iter()
        .filter_map(|c| {
            Some(ClaimState {
                name: c.name_any(),
                uid: c.metadata.uid.clone()?,
                terminating: c.metadata.deletion_timestamp.is_some(),
            })
        })
        .collect();
    rollout::step(&rollout::Observed {
        claims: &claims,
        record,
        members: &members,
        // Every member's own view: a member that has not reconnected to a restarted peer
        // serves requests that miss their quorum.
        healthy: fully_healthy(read.and_then(|r| r.health.as_ref()))
            && read.is_some_and(|r| r.every_view_healthy),
        settled: read.is_some_and(|r| r.history.is_settled()),
        garage_read: read.is_some(),
        drain_active: drain_active || !membership_settled && record.is_none(),
        generation: o.cluster.metadata.generation,
        config_hash: rendered.config_hash.to_owned(),
        recovery_request: o
            .cluster
            .annotations()
            .get(shared_types::keys::annotation::ANNOTATION_RECOVER_STORAGE_ROLLOUT)
            .map(String::as_str),
    })
}

fn member(
    o: &Observed,
    v: &MemberView,
    gn: &GarageNode,
    read: Option<&GarageRead>,
    rendered: &Rendered<'_>,
) -> Option<Member> {
    let status = gn.status.clone().unwrap_or_default();
    let node_id: Option<NodeId> = status.node_id.as_deref().and_then(|i| i.parse().ok());
    let pod: Option<&Pod> = v
        .pod_name
        .as_ref()
        .and_then(|n| o.pods.iter().find(|p| &p.name_any() == n));
    let (workload_uid, desired, revision_label) = workload_revision(o, v, gn, rendered);
    let pool = match (&v.pool, &gn.spec.kubernetes_node_name) {
        (Some(p), Some(n)) => Some((p.clone(), n.clone())),
        _ => None,
    };
    // Up at the address its current pod has: a restarted member that Garage still sees
    // through the old pod's connection is not connected yet.
    let up = read.is_some_and(|r| {
        node_id.as_ref().is_some_and(|id| {
            r.status
                .nodes
                .iter()
                .any(|n| &n.id == id && n.is_up && v.at_current_address(n.addr.as_deref()))
        })
    });
    let in_layout = read.is_some_and(|r| {
        node_id.as_ref().is_some_and(|id| {
            r.layout
                .role(id)
                .is_some_and(|role| role.capacity.is_some())
        })
    });
    let resize_pending = pod.is_some_and(|p| resize_pending(o, p));
    Some(Member {
        resize_pending,
        name: v.member.name.clone(),
        uid: gn.metadata.uid.clone()?,
        generation: gn.metadata.generation,
        pool,
        node_id,
        suspended: v.suspended,
        workload_uid,
        desired_revision: desired,
        pod: pod.map(|p| PodState {
            name: p.name_any(),
            uid: p.metadata.uid.clone().unwrap_or_default(),
            revision: p.labels().get(revision_label).cloned(),
            ready: is_ready(p),
            terminating: p.metadata.deletion_timestamp.is_some(),
            identity_proven: p.metadata.uid.is_some() && p.metadata.uid == status.observed_pod_uid,
            owner_uid: p
                .owner_references()
                .iter()
                .find(|r| r.controller == Some(true))
                .map(|r| r.uid.clone()),
            claims: p
                .spec
                .iter()
                .flat_map(|s| s.volumes.iter().flatten())
                .filter_map(|v| v.persistent_volume_claim.as_ref())
                .map(|c| c.claim_name.clone())
                .collect(),
        }),
        up,
        in_layout,
    })
}

/// The member's workload UID, the revision its workload wants pods to run (`None` while that
/// workload has not been rendered from the current generations and observed), and the pod
/// label that tells which revision a pod runs.
fn workload_revision(
    o: &Observed,
    v: &MemberView,
    gn: &GarageNode,
    rendered: &Rendered<'_>,
) -> (Option<String>, Option<String>, &'static str) {
    match &v.pool {
        Some(pool) => {
            let ds = o
                .daemonsets
                .iter()
                .find(|d| d.labels().get(label::LABEL_NODE_LOCAL_POOL) == Some(pool));
            let desired = ds
                .filter(|d| {
                    d.status.as_ref().and_then(|s| s.observed_generation) == d.metadata.generation
                        && rendered.daemonsets.get(&d.name_any()) == rendered_hash_of(*d).as_ref()
                })
                .and_then(|d| d.metadata.generation)
                .map(|g| g.to_string());
            (
                ds.and_then(|d| d.metadata.uid.clone()),
                desired,
                DS_GENERATION,
            )
        }
        None => {
            let sts = o
                .statefulsets
                .iter()
                .find(|s| s.name_any() == v.member.name);
            // Rendered from the current generations: the cluster's latest spec reached the
            // GarageNode, the node controller rendered its StatefulSet from that node
            // generation and the current configuration, and the StatefulSet controller has
            // observed it.
            let node_current = rendered
                .nodes
                .get(&gn.name_any())
                .is_none_or(|want| rendered_hash_of(gn).as_ref() == Some(want))
                && gn.status.as_ref().and_then(|s| s.observed_generation) == gn.metadata.generation;
            let config_current = sts
                .and_then(|s| s.spec.as_ref())
                .and_then(|s| s.template.metadata.as_ref())
                .and_then(|m| m.annotations.as_ref())
                .and_then(|a| a.get(shared_types::keys::annotation::ANNOTATION_CONFIG_HASH))
                .is_some_and(|h| {
                    rendered
                        .node_configs
                        .get(&gn.name_any())
                        .map_or(rendered.config_hash, String::as_str)
                        .starts_with(h.as_str())
                });
            let secret_current = sts
                .and_then(|s| s.spec.as_ref())
                .and_then(|s| s.template.spec.as_ref())
                .is_some_and(|t| mounts_credentials(t, rendered));
            let desired = sts
                .filter(|_| node_current && config_current && secret_current)
                .and_then(|s| {
                    s.status
                        .as_ref()
                        .filter(|st| st.observed_generation == s.metadata.generation)
                })
                .and_then(|st| st.update_revision.clone());
            (
                sts.and_then(|s| s.metadata.uid.clone()),
                desired,
                STS_REVISION,
            )
        }
    }
}

/// True when a claim `pod` mounts reports `FileSystemResizePending` since `pod` was created (or
/// at the same second): its file system grows only once a pod mounting it starts again.
fn resize_pending(o: &Observed, pod: &Pod) -> bool {
    let created = pod.metadata.creation_timestamp.as_ref().map(|t| t.0);
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .filter_map(|c| o.claims.iter().find(|p| p.name_any() == c.claim_name))
        .filter_map(|c| {
            c.status
                .as_ref()?
                .conditions
                .as_ref()?
                .iter()
                .find(|c| c.type_ == "FileSystemResizePending" && c.status == "True")
                .map(|c| c.last_transition_time.as_ref().map(|t| t.0))
        })
        .any(|since| match (since, created) {
            (Some(since), Some(created)) => since >= created,
            // Without both times the order is unknown: the pod is not replaced for it.
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(volumes: &[(&str, &str)]) -> k8s_openapi::api::core::v1::PodSpec {
        serde_json::from_value(serde_json::json!({
            "containers": [],
            "volumes": volumes
                .iter()
                .map(|(v, s)| serde_json::json!({"name": v, "secret": {"secretName": s}}))
                .collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    #[test]
    fn a_template_is_current_only_with_both_credentials_from_this_pass() {
        let rendered = |metrics| Rendered {
            config_hash: "h",
            node_configs: BTreeMap::new(),
            admin_secret: "copy-2",
            metrics_secret: metrics,
            nodes: BTreeMap::new(),
            daemonsets: BTreeMap::new(),
        };
        let both = spec(&[("admin-token", "copy-2"), ("metrics-token", "copy-2")]);
        let admin_only = spec(&[("admin-token", "copy-2")]);
        let old_metrics = spec(&[("admin-token", "copy-2"), ("metrics-token", "copy-1")]);
        assert!(mounts_credentials(&both, &rendered(Some("copy-2"))));
        assert!(!mounts_credentials(&old_metrics, &rendered(Some("copy-2"))));
        assert!(!mounts_credentials(&admin_only, &rendered(Some("copy-2"))));
        assert!(mounts_credentials(&admin_only, &rendered(None)));
        assert!(!mounts_credentials(&both, &rendered(None)));
    }
}
