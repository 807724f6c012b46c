//! The storage rollout's part of a GarageCluster pass: its step after the pass's other
//! transactions and the capacity hold, its condition, and the config revisions to prune once
//! it has converged.

use kube::ResourceExt;
use shared_types::conditions::reason;
use shared_types::garage_node::GarageNode;

use super::capacity;
use super::members::MemberView;
use super::observed::{GarageRead, Observed};
use super::stale_configs::stale_config_revisions;
use crate::conditions::Desired;
use crate::desired::Settings;
use crate::desired::config::ConfigRevision;
use crate::desired::node_config;
use crate::machine::rollout as machine_rollout;
use crate::pools::plan as pools;

/// What the rollout of a pass reads besides the observation.
pub(super) struct RolloutInputs<'a> {
    /// The planned members.
    pub(super) views: &'a [MemberView],
    /// Garage's answers.
    pub(super) read: Option<&'a GarageRead>,
    /// What the pools ask for (their DaemonSets and config revisions).
    pub(super) pools: &'a pools::PoolPlan,
    /// The config revision of this pass.
    pub(super) config: &'a ConfigRevision,
    /// The admin token Secret pods must mount.
    pub(super) admin_secret: &'a str,
    /// The metrics token Secret pods must mount, when the cluster names one.
    pub(super) metrics_secret: Option<&'a str>,
    /// The generated GarageNodes as this pass renders them.
    pub(super) update_nodes: &'a [GarageNode],
    /// The revisions of members with an RPC address of their own.
    pub(super) node_configs: &'a [ConfigRevision],
}

/// What the rollout does this pass.
pub(super) struct RolloutPass {
    /// Its step, after the one-transaction rule and the capacity hold.
    pub(super) step: machine_rollout::Step,
    /// `StorageRolloutReady`.
    pub(super) condition: Desired,
    /// Config revisions no pod mounts any more, pruned once the rollout converged.
    pub(super) prune_configs: Vec<String>,
    /// The step writes something.
    pub(super) acts: bool,
}

/// The rollout's step this pass. One transaction at a time within a pass too: the
/// rollout's gates were read before this pass's drain intent (`drain_starts`) or layout
/// change, which the next pass sees and the rollout then waits for.
pub(super) fn rollout_pass(
    o: &Observed,
    s: &Settings,
    i: &RolloutInputs<'_>,
    drain_starts: bool,
    layout_changes: bool,
    capacity: &capacity::Assessment,
) -> RolloutPass {
    let recorded = o
        .cluster
        .status
        .as_ref()
        .and_then(|st| st.storage_rollout.as_ref());
    let step = rollout(o, s, i);
    let step = one_transaction(step, drain_starts, layout_changes);
    let step = capacity.hold_rollout(step, recorded.is_some());
    let condition = machine_rollout::condition(&step, recorded);
    // Old config revisions go once every pod runs the current one and nothing mounts them.
    let prune_configs = if step == machine_rollout::Step::Converged {
        let mut current: Vec<&str> = vec![i.config.name.as_str()];
        current.extend(i.pools.configs.iter().map(|c| c.name.as_str()));
        current.extend(i.node_configs.iter().map(|c| c.name.as_str()));
        stale_config_revisions(o, &current, s)
    } else {
        Vec::new()
    };
    let acts = matches!(
        step,
        machine_rollout::Step::Record(_)
            | machine_rollout::Step::DeletePod { .. }
            | machine_rollout::Step::Clear
    );
    RolloutPass {
        step,
        condition,
        prune_configs,
        acts,
    }
}

fn rollout(o: &Observed, s: &Settings, i: &RolloutInputs<'_>) -> machine_rollout::Step {
    let membership_settled = i.pools.condition.as_ref().is_none_or(|c| c.status);
    // A member with its own revision is current against that one (computed from its live
    // spec, which must equal the rendered one for the member to count as current at all).
    let own = |gn: &GarageNode| {
        if !node_config::own_config(o.cluster.as_ref(), gn, s) {
            return None;
        }
        let r = node_config::revision_for(o.cluster.as_ref(), s, gn).ok()?;
        Some((gn.name_any(), r.revision))
    };
    let rendered = super::rollout::Rendered {
        config_hash: &i.config.revision,
        node_configs: o
            .generated
            .values()
            .chain(&o.user_nodes)
            .chain(o.gateways.values())
            .filter_map(own)
            .collect(),
        admin_secret: i.admin_secret,
        metrics_secret: i.metrics_secret,
        nodes: i
            .update_nodes
            .iter()
            .filter_map(|gn| Some((gn.name_any(), super::rollout::rendered_hash_of(gn)?)))
            .collect(),
        daemonsets: i
            .pools
            .daemonsets
            .iter()
            .filter_map(|d| Some((d.name_any(), super::rollout::rendered_hash_of(d)?)))
            .collect(),
    };
    super::rollout::step(o, i.views, i.read, membership_settled, &rendered)
}

/// One transaction at a time within a pass too: the rollout's gates were read before this
/// pass's drain intent or layout change, which the next pass sees (a recorded drain, a
/// history that is migrating) and the rollout then waits for.
fn one_transaction(
    step: machine_rollout::Step,
    drain_starts: bool,
    layout_changes: bool,
) -> machine_rollout::Step {
    match step {
        machine_rollout::Step::Record(_) if drain_starts || layout_changes => {
            machine_rollout::Step::Wait {
                reason: reason::REASON_STORAGE_ROLLOUT_WAITING,
                message: if drain_starts {
                    "a drain starts in this pass and is finished first".into()
                } else {
                    "a layout change is applied in this pass; the next pod is replaced once it has settled".into()
                },
            }
        }
        other => other,
    }
}
