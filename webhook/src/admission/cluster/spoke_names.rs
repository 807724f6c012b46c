//! G1-C2 managed names of the v1beta1 projection and G1-U1 their
//! grandfathering, with the hub's GC-U1 semantics in spoke terms: an
//! object whose derived names are already invalid may still be deleted,
//! have its metadata edited, or retire managed actors.

use serde_json::Value;
use shared_types::garage_cluster::common::LayoutPolicy;
use shared_types::garage_cluster::v1beta1;
use shared_types::keys::annotation::ANNOTATION_V1BETA2_GATEWAY_TIER;

use super::names::{NameViolation, judge_update};
use super::spoke::Spoke;
use super::tiers::DEFAULT_GATEWAY_REPLICAS;
use crate::admission::Verdict;
use crate::admission::shared::names::{is_dns1035_label, is_label_value};
use crate::convert::annotations::MARKER_GATEWAY_TIER_PRESENT;

/// G1-C2: every derived-name violation of the v1beta1 object, keyed by the
/// hub's actors so an update compares like with like.
pub(super) fn violations(c: &Spoke<'_>) -> Vec<NameViolation> {
    let name = c.0.metadata.name.as_deref().unwrap_or_default();
    let mut out = Vec::new();
    if !is_dns1035_label(name) {
        out.push(NameViolation {
            actor: "metadata.name",
            message: format!("{name:?} must be a DNS-1035 label because it is used in managed labels and Service names"),
        });
        return out;
    }
    if c.handle() {
        return out;
    }
    if !is_dns1035_label(&format!("{name}-headless")) {
        out.push(NameViolation {
            actor: "Service/headless",
            message: format!("{name:?} makes the managed headless Service invalid; use a name of at most 54 characters"),
        });
    }
    let r = c.replicas();
    if c.managed_default_pool() && !is_label_value(&format!("{name}-storage-{}-0", r - 1)) {
        out.push(NameViolation {
            actor: "GarageNode/storage/name-bound",
            message: format!(
                "{name:?} makes Auto storage GarageNode Pod label invalid at replicas={r}"
            ),
        });
    }
    if c.gateway()
        && r > 0
        && c.cluster_policy() != LayoutPolicy::Manual
        && !is_label_value(&format!("{name}-gateway-{}", r - 1))
    {
        out.push(NameViolation {
            actor: "StatefulSet/gateway/Pod/name-bound",
            message: format!(
                "{name:?} makes edge gateway StatefulSet Pod label invalid at spec.replicas={r}"
            ),
        });
    }
    out
}

/// G1-C2 on a create (or the strict path of an update).
pub(super) fn check(c: &Spoke<'_>, verdict: &mut Verdict) {
    for v in violations(c) {
        verdict.deny("G1-C2", "metadata.name", v.message);
    }
}

/// The hidden gateway payload of a unified cluster, when the marker says
/// one is carried.
fn gateway_payload<'a>(c: &Spoke<'a>) -> Option<&'a String> {
    let marked = c.markers().contains(&MARKER_GATEWAY_TIER_PRESENT);
    marked
        .then(|| {
            c.0.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANNOTATION_V1BETA2_GATEWAY_TIER))
        })
        .flatten()
}

/// Whether the hidden gateway only retires: unchanged, removed, or its
/// replicas lowered with the rest of the payload byte-for-byte the same.
fn payload_retires(old: Option<&String>, new: Option<&String>) -> bool {
    if old == new || new.is_none() {
        return true;
    }
    let parse = |s: Option<&String>| s.and_then(|s| serde_json::from_str::<Value>(s).ok());
    let (Some(mut o), Some(mut n)) = (parse(old), parse(new)) else {
        return false;
    };
    let replicas = |v: &mut Value| {
        v.get_mut("replicas")
            .map(Value::take)
            .and_then(|r| r.as_i64())
            .unwrap_or(i64::from(DEFAULT_GATEWAY_REPLICAS))
    };
    replicas(&mut n) <= replicas(&mut o) && o == n
}

/// Whether the update only retires managed actors: fewer replicas, a tier
/// policy moving to Manual, the gateway flag dropped, a hidden gateway
/// shrinking, with nothing else changed.
fn only_retires(o: &Spoke<'_>, n: &Spoke<'_>) -> bool {
    let (old, new) = (o.spec(), n.spec());
    let mut probe = new.clone();
    probe.replicas = old.replicas;
    probe.layout_policy = old.layout_policy;
    probe.gateway = old.gateway;
    if let (Some(ps), Some(os)) = (probe.storage.as_mut(), old.storage.as_ref()) {
        ps.layout_policy.clone_from(&os.layout_policy);
    }
    let manual_to_auto = (o.cluster_policy() == LayoutPolicy::Manual
        && n.cluster_policy() != LayoutPolicy::Manual)
        || (o.storage_manual() && !n.storage_manual());
    n.replicas() <= o.replicas()
        && !manual_to_auto
        && (o.gateway() || !n.gateway())
        && &probe == old
        && payload_retires(gateway_payload(o), gateway_payload(n))
}

/// G1-U1: an update of an object whose derived names are already invalid.
/// Returns true when the validation copy must skip G1-C2 (grandfathered).
pub(super) fn check_update(
    old: &v1beta1::GarageCluster,
    new: &v1beta1::GarageCluster,
    verdict: &mut Verdict,
) -> bool {
    let (o, n) = (Spoke(old), Spoke(new));
    let deleting = new.metadata.deletion_timestamp.is_some();
    let unchanged = old.spec == new.spec && gateway_payload(&o) == gateway_payload(&n);
    let non_expanding = deleting || unchanged || only_retires(&o, &n);
    judge_update(
        "G1-U1",
        &violations(&n),
        &violations(&o),
        non_expanding,
        verdict,
    )
}
