//! The GarageCluster status a pass publishes, built from the members and Garage's answers.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use shared_types::common::ClusterPhase;
use shared_types::garage_cluster::common::ClusterHealth as HealthStatusField;
use shared_types::garage_cluster::v1beta2::{GarageClusterStatus, NodeStatus};

use super::members::MemberView;
use super::observed::GarageRead;
use crate::desired::{Settings, labels};
use garage_api_types::HealthStatus;

/// What the status is built from.
pub struct Inputs<'a> {
    /// The published status.
    pub current: Option<&'a GarageClusterStatus>,
    /// Effective settings.
    pub settings: &'a Settings,
    /// Members counted in status.
    pub views: &'a [MemberView],
    /// Whether Garage sees each member up, by name.
    pub connected: &'a BTreeMap<String, bool>,
    /// Garage's answers, when read.
    pub read: Option<&'a GarageRead>,
    /// Members whose pod is Ready.
    pub ready_members: usize,
    /// Members wanted (present and still to create).
    pub wanted_members: usize,
}

/// The status to publish (conditions are merged by act).
pub fn build(i: Inputs<'_>) -> GarageClusterStatus {
    let mut status = i.current.cloned().unwrap_or_default();
    let auto_ready = i.views.iter().filter(|v| v.generated && v.ready).count();
    let desired_count = i32::try_from(i.settings.replicas).unwrap_or(i32::MAX);
    let ready_count = i32::try_from(auto_ready).unwrap_or(i32::MAX);
    status.replicas = Some(desired_count);
    status.storage_replicas = Some(desired_count);
    status.scale_replicas = Some(desired_count);
    status.ready_replicas = Some(ready_count);
    status.storage_ready_replicas = Some(ready_count);
    status.scale_selector = Some(labels::selector_string(&labels::api_selector(
        &i.settings.name,
    )));
    status.selector = status.scale_selector.clone();
    // Gateways: the generated ones asked for, and every gateway member whose pod is Ready.
    let gateways_ready = i
        .views
        .iter()
        .filter(|v| v.member.role.capacity.is_none() && v.ready && !v.external)
        .count();
    status.gateway_replicas = Some(i32::try_from(i.settings.gateway_replicas).unwrap_or(i32::MAX));
    status.gateway_ready_replicas = Some(i32::try_from(gateways_ready).unwrap_or(i32::MAX));
    status.phase = Some(if i.ready_members == 0 {
        ClusterPhase::Pending
    } else if i.ready_members < i.wanted_members {
        ClusterPhase::Degraded
    } else {
        ClusterPhase::Running
    });
    if let Some(r) = i.read {
        let seen = i64::try_from(r.layout.version).unwrap_or(i64::MAX);
        // A Garage node that has not caught up with the cluster never lowers the version
        // recorded: the record is what tells its view apart from the cluster's.
        let recorded = i.current.and_then(|c| c.layout_version).unwrap_or(0);
        status.layout_version = Some(seen.max(recorded));
        super::layout_status::fill(&mut status, r);
        status.cluster_id = super::health::cluster_id(status.cluster_id.as_deref(), &r.status);
        status.build_info = super::health::build_info(status.build_info.as_ref(), r.build.as_ref());
        status.storage_stats = super::storage_stats::stats(
            i.current.and_then(|c| c.storage_stats.as_ref()),
            &r.status,
        );
        let unreachable = super::health::unreachable_peers(&r.status);
        status.unreachable_peers = Some(unreachable).filter(|u| !u.is_empty());
    }
    status.endpoints = Some(super::health::endpoints(i.settings));
    status.nodes = Some(
        i.views
            .iter()
            .map(|v| NodeStatus {
                node_id: v.member.node_id.as_ref().map(ToString::to_string),
                pod_name: v.pod_name.clone().or_else(|| {
                    (!v.external && v.pool.is_none())
                        .then(|| crate::names::node_pod(&v.member.name))
                }),
                zone: Some(v.member.role.zone.clone()),
                capacity: v.member.role.capacity.map(|c| Quantity(c.to_string())),
                connected: i.connected.get(&v.member.name).copied(),
                gateway: Some(v.member.role.capacity.is_none()),
                tier: Some(
                    if v.member.role.capacity.is_none() {
                        "gateway"
                    } else {
                        "storage"
                    }
                    .into(),
                ),
                ..Default::default()
            })
            .collect(),
    );
    status.health = i.read.and_then(|r| r.health.as_ref()).map(health);
    status
}

/// `status.health` from Garage's own health answer.
pub fn health(h: &garage_api_types::ClusterHealth) -> HealthStatusField {
    HealthStatusField {
        status: Some(format!("{:?}", h.status).to_ascii_lowercase()),
        healthy: Some(h.status == HealthStatus::Healthy),
        available: Some(h.status != HealthStatus::Unavailable),
        known_nodes: i64::try_from(h.known_nodes).ok(),
        connected_nodes: i64::try_from(h.connected_nodes).ok(),
        storage_nodes: i64::try_from(h.storage_nodes).ok(),
        storage_nodes_ok: i64::try_from(h.storage_nodes_up).ok(),
        partitions: i64::try_from(h.partitions).ok(),
        partitions_quorum: i64::try_from(h.partitions_quorum).ok(),
        partitions_all_ok: i64::try_from(h.partitions_all_ok).ok(),
    }
}

/// `status.layoutDiagnosis`: the reason and first sentence of a `Ready=False` condition,
/// short enough for a printer column; nothing while the cluster is Ready.
pub fn diagnosis(conditions: &[crate::conditions::Desired]) -> Option<String> {
    let ready = conditions
        .iter()
        .find(|c| c.type_ == shared_types::conditions::common::CONDITION_READY)?;
    if ready.status {
        return None;
    }
    let first = ready.message.split("; ").next().unwrap_or_default();
    let mut line = format!("{}: {first}", ready.reason);
    if line.len() > 160 {
        let mut end = 157;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        line.truncate(end);
        line.push_str("...");
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::diagnosis;
    use crate::conditions::Desired;

    fn ready(status: bool, message: &str) -> Vec<Desired> {
        vec![Desired {
            type_: "Ready",
            status,
            reason: "LayoutNotReady",
            message: message.into(),
        }]
    }

    #[test]
    fn the_diagnosis_is_the_first_sentence_of_a_false_ready_and_fits_a_column() {
        assert_eq!(diagnosis(&ready(true, "all good")), None);
        assert_eq!(diagnosis(&[]), None);
        assert_eq!(
            diagnosis(&ready(false, "member a is down; the rest waits")).as_deref(),
            Some("LayoutNotReady: member a is down")
        );
        let long = diagnosis(&ready(false, &"é".repeat(200))).unwrap();
        assert!(long.len() <= 160 && long.ends_with("..."), "{long}");
    }
}
