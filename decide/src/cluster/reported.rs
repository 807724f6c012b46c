//! What a GarageCluster pass reports beyond its members' standing: the status it publishes,
//! the gateways missing from the layout, the stale gateway roles, how Garage and its scraping
//! stand, and the publicEndpoint's condition.

use shared_types::garage_cluster::v1beta2::GarageClusterStatus;

use super::members::MemberView;
use super::observed::{GarageRead, Observed};
use super::status;
use crate::conditions::Desired;
use crate::desired::{DesiredError, Settings, public_endpoint};

/// The status the pass publishes, and what it reports beyond its members' standing: the
/// gateways missing from the layout, [`observability`] and `PublicEndpointReady`; with the
/// ServiceMonitor to keep.
pub(super) fn reported(
    o: &Observed,
    s: &Settings,
    (views, facts): (&[MemberView], &super::garage_facts::GarageFacts<'_>),
    (ready_members, wanted_members): (usize, usize),
    (metrics_copy, tombstones): (Option<&str>, &super::tombstones::Tombstones),
    conditions: &mut Vec<Desired>,
) -> Result<(GarageClusterStatus, crate::desired::service_monitor::Plan), DesiredError> {
    let read = facts.read;
    // An edge's members are in the edge's status.
    let own: Vec<MemberView> = views.iter().filter(|v| v.edge.is_none()).cloned().collect();
    let mut status = status::build(status::Inputs {
        current: o.cluster.status.as_ref(),
        settings: s,
        views: &own,
        connected: &facts.connected,
        read,
        ready_members,
        wanted_members,
    });
    if let Some((missing, degraded)) = super::gateways::layout_degraded(o, s, read) {
        status.gateway_nodes_not_in_layout = Some(missing);
        conditions.push(degraded);
    }
    if let Some(pending) = &tombstones.pending {
        status.pending_gateway_tombstones = Some(pending.clone()).filter(|p| !p.is_empty());
    }
    conditions.extend(tombstones.condition.clone());
    let (service_monitor, seen) = observability(o, s, metrics_copy, read, &status)?;
    conditions.extend(seen.into_iter().chain(public_endpoint::condition(s)));
    Ok((status, service_monitor))
}

/// The ServiceMonitor of `spec.monitoring`, and the conditions on how Garage and its scraping
/// stand: `ServiceMonitorReady`, `QuorumAtRisk` and `PeerUnreachable`.
fn observability(
    o: &Observed,
    s: &Settings,
    metrics_copy: Option<&str>,
    read: Option<&GarageRead>,
    status: &GarageClusterStatus,
) -> Result<(crate::desired::service_monitor::Plan, Vec<Desired>), DesiredError> {
    let (plan, monitor) = crate::desired::service_monitor::plan(
        o.cluster.as_ref(),
        s,
        o.monitoring_installed,
        metrics_copy,
        &o.pods,
    )?;
    let mut conditions: Vec<Desired> = monitor.into_iter().collect();
    conditions.extend(super::health::conditions(
        read.and_then(|r| r.health.as_ref()),
        status.unreachable_peers.as_deref().unwrap_or_default(),
        status.conditions.as_deref().unwrap_or_default(),
    ));
    Ok((plan, conditions))
}
