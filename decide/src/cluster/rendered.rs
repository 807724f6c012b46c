//! What a GarageCluster pass renders beside its members: the config revisions (the shared one
//! and each member's own), the cluster's Services with those its publicEndpoint no longer
//! asks for, the gateway budget, the NetworkPolicy, and the members it hands to the user.

use k8s_openapi::api::core::v1::Service;
use kube::ResourceExt;
use shared_types::garage_node::GarageNode;

use super::observed::Observed;
use crate::config::Config;
use crate::desired::config::{self, ConfigRevision};
use crate::desired::{DesiredError, Settings, network_policy, nodes, public_endpoint, services};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

/// The shared config revision, and each member's own as it will be rendered and as its live
/// spec still says.
pub(super) fn revisions(
    o: &Observed,
    s: &Settings,
    update_nodes: &[GarageNode],
) -> Result<(ConfigRevision, Vec<ConfigRevision>), DesiredError> {
    let cluster = o.cluster.as_ref();
    let own = crate::desired::node_config::own_revisions(
        cluster,
        s,
        update_nodes
            .iter()
            .chain(o.generated.values())
            .chain(&o.user_nodes)
            .chain(o.gateways.values()),
    )?;
    Ok((config::revision(cluster, s)?, own))
}

/// The cluster's Services: its own, and those its publicEndpoint asks for, one per Auto slot
/// under the name of the node filling it; and those its publicEndpoint made and no longer
/// asks for (name, UID).
#[allow(clippy::type_complexity)]
pub(super) fn cluster_services(
    o: &Observed,
    s: &Settings,
) -> Result<(Vec<Service>, Vec<(String, String)>), DesiredError> {
    let cluster = o.cluster.as_ref();
    // Members above the replica count still drain at their address: their Services stay.
    let mut ordinals: std::collections::BTreeSet<u32> = (0..s.replicas).collect();
    ordinals.extend(o.generated.keys().copied());
    let slots: Vec<(u32, String)> = ordinals
        .into_iter()
        .map(|i| {
            let name = o.generated.get(&i).map_or_else(
                || crate::names::auto_storage_node(&s.name, i),
                |gn| gn.name_any(),
            );
            (i, name)
        })
        .collect();
    let mut all = services::cluster_services(cluster, s)?;
    all.extend(public_endpoint::cluster_services(cluster, s, &slots)?);
    let stale = public_endpoint::stale(&o.services, s, &all);
    Ok((all, stale))
}

/// The generated members to keep up to date (ordinals below `replicas`), and the names of
/// those beyond it (never under the Manual policy, whose members are the user's).
pub(super) fn generated_members(
    o: &Observed,
    s: &Settings,
) -> Result<(Vec<GarageNode>, Vec<String>), DesiredError> {
    let cluster = o.cluster.as_ref();
    // Each under the name of the node filling its slot: a promoted cycle sibling keeps its own.
    // A node in a cycle keeps the spec its sibling was cloned from (admission refuses a spec
    // change then); the slot's new spec reaches the sibling once it is promoted.
    let update = o
        .generated
        .iter()
        .filter(|(n, gn)| **n < s.replicas && !super::cycle::in_cycle(gn))
        .map(|(ordinal, gn)| nodes::auto_storage_node_as(cluster, s, *ordinal, &gn.name_any()))
        .collect::<Result<Vec<_>, _>>()?;
    let extra = o
        .generated
        .iter()
        .filter(|(n, _)| **n >= s.replicas && !s.manual)
        .map(|(_, gn)| gn.name_any())
        .collect();
    Ok((update, extra))
}

/// What a pass renders beside its members that depends on nothing else it decides.
pub(super) struct SideObjects {
    /// The gateway PDB, beside a gateway tier.
    pub(super) gateway_pdb: Option<PodDisruptionBudget>,
    /// The Garage pods' NetworkPolicy.
    pub(super) network_policy: network_policy::Plan,
    /// Generated GarageNodes to hand to the user.
    pub(super) eject: Vec<String>,
}

/// The gateway budget, the NetworkPolicy and the members to eject.
pub(super) fn side_objects(
    o: &Observed,
    s: &Settings,
    t: &Config,
) -> Result<SideObjects, DesiredError> {
    let cluster = o.cluster.as_ref();
    Ok(SideObjects {
        gateway_pdb: crate::desired::pdb::gateway_pdb(
            cluster,
            s,
            crate::desired::pdb::gateway_members(s, &o.pods),
        )?,
        network_policy: network_policy::plan(
            cluster,
            s,
            t.garage_network_policy.as_ref(),
            &o.user_nodes,
            !o.edges.is_empty(),
        )?,
        eject: ejected(o, s)
            .into_iter()
            .chain(super::gateways::ejected(o))
            .collect(),
    })
}

/// Under the Manual policy generated members are handed to the user (ejected), never
/// drained: the switch keeps every identity and role.
fn ejected(o: &Observed, s: &Settings) -> Vec<String> {
    if s.manual {
        o.generated.values().map(|gn| gn.name_any()).collect()
    } else {
        Vec::new()
    }
}
