//! Layout planning as a pure function.
//!
//! [`plan_layout`] looks at the members the cluster wants in its layout and at what Garage
//! reports, and says what the single writer should do next: nothing, wait, refuse, or stage a
//! set of role changes and apply them at `current + 1`. The caller carries the plan out and
//! re-plans from fresh reads on the next pass; at most one apply happens per pass.
//!
//! Rules:
//! - a history that is not settled blocks every mutation;
//! - staged changes the planner would not make itself (removals, parameters, roles of unknown
//!   nodes or roles that differ from a member's desired role) block every mutation: the
//!   planner never applies over someone else's change;
//! - bootstrap (no storage role yet) waits until at least `replication_factor` storage members
//!   have a known node ID, then adds all known members (gateways too) in one version;
//! - afterwards, one missing or drifted role is added per version, lowest member first;
//! - a new role is never staged past Garage's limit of [`MAX_ROLES`] positive-capacity roles
//!   (staged additions count; a staged removal frees nothing until it is committed), while a
//!   member that already has a role may still have it corrected;
//! - roles are never removed;
//! - the zone redundancy parameter, when the cluster sets one, is staged with the next
//!   version (alone when every role is in place), under the same rules.

pub mod tags;

use std::collections::BTreeMap;

use garage_api_types::{
    ClusterLayout, LayoutHistory, LayoutParameters, NodeId, RoleChange, StagedRoleChange,
    ZoneRedundancy,
};

/// Garage's hard limit on positive-capacity roles in one layout.
pub const MAX_ROLES: usize = 256;

/// The layout role the cluster wants for one member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredRole {
    /// Zone.
    pub zone: String,
    /// Capacity in bytes; `None` for a gateway, which holds a role without storing data.
    pub capacity: Option<u64>,
    /// Tags, operator tags first.
    pub tags: Vec<String>,
}

/// One member the cluster wants in its layout, in priority order (Auto ordinal order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// GarageNode name.
    pub name: String,
    /// Node ID learned from the member's own pod, if known yet.
    pub node_id: Option<NodeId>,
    /// Role it should have.
    pub role: DesiredRole,
}

/// What [`plan_layout`] decides from.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// Garage `replication_factor`.
    pub replication_factor: u32,
    /// Members in priority order.
    pub members: &'a [Member],
    /// The layout as just read.
    pub layout: &'a ClusterLayout,
    /// The layout history as just read.
    pub history: &'a LayoutHistory,
    /// The zone redundancy the cluster asks for; `None` leaves Garage's as it is.
    pub zone_redundancy: Option<ZoneRedundancy>,
    /// Names of members whose layout entry is frozen (suspended): they count in the
    /// identity-collision check but are never assigned a role or changed.
    pub frozen: &'a [String],
}

/// Why the planner holds back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HoldReason {
    /// Data of an older layout version is still moving.
    HistoryNotSettled,
    /// Fewer than `replication_factor` members have a known node ID.
    WaitingForMembers,
    /// The staging area holds a change this planner did not make.
    ForeignStagedChanges,
    /// Two members report the same node ID.
    IdentityCollision,
    /// Another role would exceed Garage's [`MAX_ROLES`].
    RoleLimit,
}

/// What to do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Every member with a known ID has its desired role; nothing is staged.
    Converged,
    /// Stage `stage` (the intended changes not staged yet), verify that staging holds exactly
    /// `intended`, then apply version `apply_version`.
    Apply {
        /// Changes to stage now.
        stage: Vec<RoleChange>,
        /// Every change the apply is expected to commit (staged leftovers included).
        intended: Vec<RoleChange>,
        /// `current + 1`.
        apply_version: u64,
        /// True for the first storage version.
        bootstrap: bool,
        /// Layout parameters to stage with the changes (the zone redundancy), when they differ
        /// from the current version's.
        parameters: Option<LayoutParameters>,
    },
    /// Do nothing this pass.
    Hold {
        /// Why.
        reason: HoldReason,
        /// A sentence for a condition message.
        message: String,
    },
}

/// The next step for the layout; see the module documentation for the rules.
pub fn plan_layout(o: &Observed<'_>) -> Plan {
    if let Some(plan) = identity_collision(o) {
        return plan;
    }
    let known: Vec<(&Member, &NodeId)> = o
        .members
        .iter()
        .filter(|m| !o.frozen.contains(&m.name))
        .filter_map(|m| m.node_id.as_ref().map(|id| (m, id)))
        .collect();
    // Staged leftovers are adopted only when they are exactly what we would stage.
    let parameters = wanted_parameters(o);
    let intended = match adopt_staged(o, &known, parameters.as_ref()) {
        Ok(intended) => intended,
        Err(plan) => return plan,
    };

    let missing: Vec<(&Member, &NodeId)> = known
        .iter()
        .copied()
        .filter(|(m, id)| !role_matches(o.layout, id, &m.role))
        .collect();
    if missing.is_empty() && parameters.is_none() {
        return Plan::Converged;
    }
    if !o.history.is_settled() {
        let draining: Vec<String> = o
            .history
            .draining_versions()
            .map(|v| v.version.to_string())
            .collect();
        return hold(
            HoldReason::HistoryNotSettled,
            format!(
                "layout versions [{}] are still being synced; the next change waits until history settles",
                draining.join(", ")
            ),
        );
    }
    let bootstrap = !o
        .layout
        .roles
        .iter()
        .any(|r| r.capacity.is_some_and(|c| c > 0));
    let batch: Vec<(&Member, &NodeId)> = if bootstrap {
        let rf = usize::try_from(o.replication_factor).unwrap_or(usize::MAX);
        // Gateways join the first version but store nothing: only storage members count.
        let storage = known
            .iter()
            .filter(|(m, _)| m.role.capacity.is_some())
            .count();
        if storage < rf {
            return hold(
                HoldReason::WaitingForMembers,
                format!(
                    "{storage} of {} storage members needed for the first layout (replication factor) have a known node ID",
                    o.replication_factor
                ),
            );
        }
        missing
    } else {
        missing.into_iter().take(1).collect()
    };
    if let Some(plan) = role_limit(o, &intended, &batch) {
        return plan;
    }
    let mut intended = intended;
    let mut stage = Vec::new();
    for (m, id) in batch {
        let change = assign(Some(&m.role), id);
        if !intended.contains(&change) {
            intended.push(change.clone());
            stage.push(change);
        }
    }
    Plan::Apply {
        stage,
        intended,
        apply_version: o.layout.version + 1,
        bootstrap,
        parameters,
    }
}

/// The parameters to stage: the cluster's zone redundancy when the current version was
/// computed with another.
fn wanted_parameters(o: &Observed<'_>) -> Option<LayoutParameters> {
    let wanted = LayoutParameters {
        zone_redundancy: o.zone_redundancy?,
    };
    (wanted != o.layout.parameters).then_some(wanted)
}

/// A hold when two members report the same Garage node: acting on either could give one
/// identity's role to the other.
fn identity_collision(o: &Observed<'_>) -> Option<Plan> {
    let mut seen: BTreeMap<&NodeId, &str> = BTreeMap::new();
    for m in o.members {
        if let Some(id) = &m.node_id
            && let Some(other) = seen.insert(id, &m.name)
        {
            return Some(hold(
                HoldReason::IdentityCollision,
                format!(
                    "members {other} and {} report the same Garage node {}; nothing is changed until one of them is fixed",
                    m.name,
                    id.short()
                ),
            ));
        }
    }
    None
}

/// The changes already staged in Garage, adopted only when each is exactly what this
/// operator would stage for a member it knows; anything else is someone else's and holds.
fn adopt_staged(
    o: &Observed<'_>,
    known: &[(&Member, &NodeId)],
    parameters: Option<&LayoutParameters>,
) -> Result<Vec<RoleChange>, Plan> {
    let wanted = |id: &NodeId| known.iter().find(|(_, k)| *k == id).map(|(m, _)| *m);
    let mut intended: Vec<RoleChange> = Vec::new();
    for staged in &o.layout.staged_role_changes {
        match staged {
            StagedRoleChange::Assign {
                id,
                zone,
                tags,
                capacity,
            } if wanted(id).is_some_and(|m| {
                m.role.zone == *zone
                    && *capacity == m.role.capacity
                    && tags::same_multiset(&m.role.tags, tags)
            }) =>
            {
                intended.push(assign(wanted(id).map(|m| &m.role), id));
            }
            other => {
                return Err(hold(
                    HoldReason::ForeignStagedChanges,
                    format!(
                        "Garage's staging area holds a change for node {} that this operator did not make; apply or revert it explicitly (garage layout revert)",
                        other.id().short()
                    ),
                ));
            }
        }
    }
    if o.layout
        .staged_parameters
        .as_ref()
        .is_some_and(|p| *p != o.layout.parameters && Some(p) != parameters)
    {
        return Err(hold(
            HoldReason::ForeignStagedChanges,
            "Garage's staging area holds layout parameters this operator did not stage; apply or revert them explicitly".into(),
        ));
    }

    Ok(intended)
}

/// A hold when staging `batch` would take Garage past its role limit.
fn role_limit(
    o: &Observed<'_>,
    intended: &[RoleChange],
    batch: &[(&Member, &NodeId)],
) -> Option<Plan> {
    // Roles Garage counts against its limit: committed with capacity, plus staged additions
    // of nodes that hold none yet (a staged removal frees nothing until committed).
    let committed = |id: &NodeId| {
        o.layout
            .role(id)
            .is_some_and(|r| r.capacity.is_some_and(|c| c > 0))
    };
    let held = o
        .layout
        .roles
        .iter()
        .filter(|r| r.capacity.is_some_and(|c| c > 0))
        .count()
        + intended
            .iter()
            .filter(|c| {
                matches!(c, RoleChange::Assign { id, capacity: Some(n), .. } if *n > 0 && !committed(id))
            })
            .count();
    let new_roles = batch
        .iter()
        .filter(|(_, id)| !committed(id) && !intended.iter().any(|c| change_id(c) == *id))
        .count();
    if held + new_roles > MAX_ROLES {
        return Some(hold(
            HoldReason::RoleLimit,
            format!(
                "Garage holds at most {MAX_ROLES} storage roles and the layout has {held}; {new_roles} more cannot be added. Drain a member first (its removal must be committed before another joins)"
            ),
        ));
    }
    None
}

/// Checks a layout re-read after staging: every intended change is staged and nothing else
/// is, parameters included (`parameters`: the ones intended, if any). The apply must not run
/// otherwise (someone else staged in between).
pub fn verify_staged(
    layout: &ClusterLayout,
    intended: &[RoleChange],
    parameters: Option<&LayoutParameters>,
) -> Result<(), String> {
    let staged_parameters = layout
        .staged_parameters
        .as_ref()
        .filter(|p| **p != layout.parameters);
    if staged_parameters != parameters {
        return Err(match parameters {
            Some(p) => format!("the layout parameters {p:?} are not staged as intended"),
            None => "layout parameters were staged by someone else".into(),
        });
    }
    let staged: Vec<RoleChange> = layout
        .staged_role_changes
        .iter()
        .map(|s| match s {
            StagedRoleChange::Remove { id, .. } => RoleChange::remove(id.clone()),
            StagedRoleChange::Assign {
                id,
                zone,
                tags,
                capacity,
            } => RoleChange::Assign {
                id: id.clone(),
                zone: zone.clone(),
                capacity: *capacity,
                tags: tags.clone(),
            },
        })
        .collect();
    let same = |a: &RoleChange, b: &RoleChange| match (a, b) {
        (
            RoleChange::Assign {
                id: ia,
                zone: za,
                capacity: ca,
                tags: ta,
            },
            RoleChange::Assign {
                id: ib,
                zone: zb,
                capacity: cb,
                tags: tb,
            },
        ) => ia == ib && za == zb && ca == cb && tags::same_multiset(ta, tb),
        (a, b) => a == b,
    };
    if let Some(extra) = staged.iter().find(|s| !intended.iter().any(|i| same(i, s))) {
        return Err(format!("an unexpected change is staged: {extra:?}"));
    }
    if let Some(lost) = intended.iter().find(|i| !staged.iter().any(|s| same(i, s))) {
        return Err(format!("an intended change is not staged: {lost:?}"));
    }
    Ok(())
}

fn role_matches(layout: &ClusterLayout, id: &NodeId, want: &DesiredRole) -> bool {
    layout.role(id).is_some_and(|r| {
        r.zone == want.zone
            && r.capacity == want.capacity
            && tags::same_multiset(&r.tags, &want.tags)
    })
}

fn assign(role: Option<&DesiredRole>, id: &NodeId) -> RoleChange {
    match role {
        Some(r) => RoleChange::Assign {
            id: id.clone(),
            zone: r.zone.clone(),
            capacity: r.capacity,
            tags: r.tags.clone(),
        },
        None => RoleChange::remove(id.clone()),
    }
}

fn change_id(c: &RoleChange) -> &NodeId {
    match c {
        RoleChange::Remove { id, .. } | RoleChange::Assign { id, .. } => id,
    }
}

fn hold(reason: HoldReason, message: String) -> Plan {
    Plan::Hold { reason, message }
}

#[cfg(test)]
mod tests;
