//! GC-C3 managed names and GC-U1 their grandfathering: every Kubernetes
//! name the operator derives from `metadata.name` must stay valid.

use shared_types::garage_cluster::common::LayoutPolicy;
use shared_types::garage_cluster::v1beta2::GarageClusterSpec;

use super::tiers::Shape;
use crate::admission::Verdict;
use crate::admission::shared::names::{is_dns1035_label, is_label_value};

/// One invalid derived name: the workload it belongs to and the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameViolation {
    /// Stable key of the derived workload (compared between old and new).
    pub actor: &'static str,
    /// What is wrong.
    pub message: String,
}

/// Warning GC-W18: a grandfathered invalid name let an update through.
pub const GRANDFATHERED_WARNING: &str = "metadata.name is grandfathered for this non-expanding update; adding or rolling a managed workload remains blocked until the derived Kubernetes names are valid";

/// GC-C3: every derived-name violation of `name` under `spec`.
pub fn violations(name: &str, spec: &GarageClusterSpec) -> Vec<NameViolation> {
    let shape = Shape::of(spec);
    let mut out = Vec::new();
    if !is_dns1035_label(name) {
        out.push(NameViolation {
            actor: "metadata.name",
            message: format!(
                "{name:?} must be a DNS-1035 label because it is used in managed labels and Service names: at most 63 lower-case letters, digits or '-', starting with a letter"
            ),
        });
        return out;
    }
    if shape.is_handle() {
        return out;
    }
    let headless = format!("{name}-headless");
    if !is_dns1035_label(&headless) {
        out.push(NameViolation {
            actor: "Service/headless",
            message: format!("{name:?} makes the managed headless Service {headless:?} invalid; use a name of at most 54 characters"),
        });
    }
    if shape.managed_default_pool() {
        let r = shape.storage_replicas();
        let pod = format!("{name}-storage-{}-0", r - 1);
        if !is_label_value(&pod) {
            out.push(NameViolation {
                actor: "GarageNode/storage/name-bound",
                message: format!("{name:?} makes Auto storage GarageNode Pod label {pod:?} invalid at replicas={r}; shorten the name or lower spec.storage.replicas"),
            });
        }
    }
    if shape.managed_gateway() {
        let r = shape.gateway_replicas();
        if shape.storage().is_some() {
            let pod = format!("{name}-gateway-{}-0", r - 1);
            if !is_label_value(&pod) {
                out.push(NameViolation {
                    actor: "GarageNode/gateway/name-bound",
                    message: format!("{name:?} makes Auto gateway GarageNode Pod label {pod:?} invalid at replicas={r}; shorten the name or lower spec.gateway.replicas"),
                });
            }
        } else {
            let pod = format!("{name}-gateway-{}", r - 1);
            if !is_label_value(&pod) {
                out.push(NameViolation {
                    actor: "StatefulSet/gateway/Pod/name-bound",
                    message: format!("{name:?} makes edge gateway StatefulSet Pod label {pod:?} invalid at spec.gateway.replicas={r}; shorten the name or lower the replicas"),
                });
            }
        }
    }
    out
}

/// GC-C3 on a create (or the strict path of an update).
pub fn check(name: &str, spec: &GarageClusterSpec, verdict: &mut Verdict) {
    for v in violations(name, spec) {
        verdict.deny("GC-C3", "metadata.name", v.message);
    }
}

/// Whether the update from `old` to `new` only retires managed actors:
/// storage or gateway replicas decrease or a tier disappears, or a layout
/// policy moves to Manual, with nothing else changed.
fn only_retires(old: &GarageClusterSpec, new: &GarageClusterSpec) -> bool {
    let (o, n) = (Shape::of(old), Shape::of(new));
    let mut probe = new.clone();
    // Re-apply the old retirement-relevant fields to the new spec; if that
    // reproduces the old spec, only those fields changed.
    let storage_ok = match (old.storage.as_ref(), probe.storage.as_mut()) {
        (Some(os), Some(ns)) => {
            let ok = n.storage_replicas() <= o.storage_replicas()
                && !(o.storage_policy() == LayoutPolicy::Manual
                    && n.storage_policy() != LayoutPolicy::Manual);
            ns.replicas = os.replicas;
            ns.layout_policy = os.layout_policy;
            ok
        }
        (Some(os), None) => {
            probe.storage = Some(os.clone());
            true
        }
        (None, None) => true,
        (None, Some(_)) => false,
    };
    let gateway_ok = match (old.gateway.as_ref(), probe.gateway.as_mut()) {
        (Some(og), Some(ng)) => {
            let ok = n.gateway_replicas() <= o.gateway_replicas();
            ng.replicas = og.replicas;
            ok
        }
        (Some(og), None) => {
            probe.gateway = Some(og.clone());
            true
        }
        (None, None) => true,
        (None, Some(_)) => false,
    };
    let policy_ok =
        !(o.cluster_policy() == LayoutPolicy::Manual && n.cluster_policy() != LayoutPolicy::Manual);
    probe.layout_policy = old.layout_policy;
    storage_ok && gateway_ok && policy_ok && &probe == old
}

/// The verdict of GC-U1 (or the spoke's G1-U1, `rule`) once the derived
/// names of both sides are known: a violation the old object lacked is
/// refused; otherwise the update passes, grandfathered, only when it is
/// `non_expanding` (deleting, metadata-only, or retiring actors). Returns
/// true when the validation copy must skip the create-time name rule.
pub fn judge_update(
    rule: &'static str,
    now: &[NameViolation],
    before: &[NameViolation],
    non_expanding: bool,
    verdict: &mut Verdict,
) -> bool {
    if now.is_empty() {
        return false;
    }
    if let Some(v) = now
        .iter()
        .find(|v| !before.iter().any(|b| b.actor == v.actor))
    {
        verdict.deny(
            rule,
            "metadata.name",
            format!("update introduces an invalid managed child: {}", v.message),
        );
    } else if non_expanding {
        verdict.warn("GC-W18", GRANDFATHERED_WARNING);
    } else {
        verdict.deny(
            rule,
            "metadata.name",
            "metadata.name has an already-invalid managed child; only metadata/finalizer updates or a monotonic scale-down, tier removal, or Auto-to-Manual retirement may proceed until every derived workload name is valid",
        );
    }
    true
}

/// GC-U1: an update of an object whose derived names are already invalid.
/// Returns true when the validation copy must skip GC-C3 (grandfathered).
pub fn check_update(
    name: &str,
    old: &GarageClusterSpec,
    new: &GarageClusterSpec,
    deleting: bool,
    verdict: &mut Verdict,
) -> bool {
    let now = violations(name, new);
    let before = if now.is_empty() {
        Vec::new()
    } else {
        violations(name, old)
    };
    let non_expanding = deleting || old == new || only_retires(old, new);
    judge_update("GC-U1", &now, &before, non_expanding, verdict)
}
