//! Sets the `spec.workers` variables the decision found different on a member. A failure is
//! not fatal to the pass: it is published as a warning and the next pass, which reads the
//! variables again, retries.

use crate::garage::{AdminClient, NodeTarget};
use decide::cluster::workers::SetVariable;
use decide::note::Note;

/// Sets each of `vars` on its node through `admin`.
pub async fn apply(admin: &AdminClient, vars: &[SetVariable], notes: &mut Vec<Note>) {
    for v in vars {
        match admin
            .set_worker_variable(&NodeTarget::Node(v.node.clone()), v.variable, &v.value)
            .await
        {
            Ok(_) => tracing::info!(node = %v.node.short(), variable = v.variable, value = %v.value, "worker variable set"),
            Err(e) => notes.push(Note::warning(
                shared_types::conditions::reason::REASON_RECONCILE_FAILED,
                "SetWorkerVariable",
                format!(
                    "could not set {} = {} on node {} (spec.workers): {e}; retried on the next pass",
                    v.variable,
                    v.value,
                    v.node.short()
                ),
            )),
        }
    }
}
