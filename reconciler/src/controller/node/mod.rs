//! GarageNode controller: the node's StatefulSet and RPC Service (generated and user-written
//! nodes alike), its Garage identity learned from its own pod's Admin API
//! (`GetNodeInfo?node=self` at the pod IP), external nodes' declared identity, and the
//! finalizer that stops the workload when the parent tears the store down.
//!
//! A pod that reports an ID other than the recorded (or pinned) one is a different identity
//! (lost or replaced metadata); the record is not overwritten and the node says why.
//!
//! A pass is observe ([`observe`]) → decide ([`decide::node::decision::decide`], no I/O) →
//! act ([`act`]).

pub mod act;
pub mod observe;

use std::sync::Arc;

use kube::runtime::controller::Action;
use shared_types::garage_node::GarageNode;

use super::ownership::Resolved;
use super::{Context, Error};

/// The controller's name in metrics and logs.
pub const CONTROLLER: &str = "garagenode";

/// One pass over a GarageNode.
pub async fn reconcile(node: Arc<GarageNode>, ctx: Arc<Context>) -> Result<Action, Error> {
    // A node of a cluster this install does not manage is not touched, not even while it is
    // being deleted: its finalizer is the managing install's to remove.
    let parent = match observe::parent(&node, &ctx).await? {
        Resolved::HandsOff(action) => return Ok(action),
        Resolved::Managed(cluster) => Some(*cluster),
        Resolved::Absent => None,
    };
    let observed = observe::observe(node.clone(), parent, &ctx).await?;
    let decided = decide::node::decision::decide(&observed, &ctx.config)?;
    let requeue = decided.requeue;
    act::act(&node, decided, &ctx).await?;
    Ok(requeue.map_or_else(Action::await_change, Action::requeue))
}
