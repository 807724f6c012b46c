//! `status.connected` and `status.inLayout` of each member's GarageNode (the `Connected` and
//! `InLayout` printer columns), from what Garage reported in the cluster's pass. The cluster
//! writes only these two fields, and only where they changed; everything else in a node's
//! status is its own controller's.

use kube::ResourceExt;

use super::members::MemberView;
use super::observed::{GarageRead, Observed};

/// The two facts of one member whose GarageNode says otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberFacts {
    /// GarageNode name.
    pub node: String,
    /// Garage sees its identity up.
    pub connected: bool,
    /// Its identity holds a storage role in the current layout.
    pub in_layout: bool,
}

/// The members whose GarageNode status differs from what Garage reported; none when Garage
/// could not be read or a member's identity is not known yet.
pub fn changed(o: &Observed, views: &[MemberView], read: Option<&GarageRead>) -> Vec<MemberFacts> {
    let Some(read) = read else {
        return Vec::new();
    };
    let nodes = o
        .generated
        .values()
        .chain(o.user_nodes.iter())
        .chain(o.pool_members.iter());
    let mut out = Vec::new();
    for gn in nodes {
        let name = gn.name_any();
        // A suspended member's GarageNode gets no write from the cluster either.
        let Some(id) = views
            .iter()
            .find(|v| v.member.name == name && !v.suspended)
            .and_then(|v| v.member.node_id.as_ref())
        else {
            continue;
        };
        let connected = read.status.nodes.iter().any(|n| &n.id == id && n.is_up);
        let in_layout = read
            .layout
            .role(id)
            .is_some_and(|r| r.capacity.is_some_and(|c| c > 0));
        let status = gn.status.as_ref();
        if status.and_then(|s| s.connected) != Some(connected)
            || status.and_then(|s| s.in_layout) != Some(in_layout)
        {
            out.push(MemberFacts {
                node: name,
                connected,
                in_layout,
            });
        }
    }
    out
}
