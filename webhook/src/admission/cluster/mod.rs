//! GarageCluster admission rules: the v1beta2 hub, the v1beta1 spoke and
//! the `/scale` subresource, including the node-local pool and
//! VolumeAttributesClass rules. Every rule ID is listed in
//! `docs/admission-rules.md`.
//!
//! Entry points:
//!
//! - [`validate_cluster`]: a v1beta2 (hub) GarageCluster CREATE, UPDATE or
//!   DELETE.
//! - [`validate_cluster_v1beta1`]: the v1beta1 (spoke) projection of the
//!   same write. With matchPolicy Equivalent the API server calls both
//!   validators for every write (INV-7); the stricter side wins.
//! - [`validate_scale`]: an UPDATE of the `/scale` subresource.
//!
//! Every rule is a pure function of the review and the [`Context`]
//! snapshot. Unlike the Go operator, which stops at the first error, every
//! broken rule is reported, so a user fixes a manifest in one round trip.
//! Decisions on how rules treat objects written before them are recorded in
//! `docs/compatibility/admission-cluster.md`.

pub mod deletion;
pub mod disruption;
pub mod federation;
pub mod host_access;
pub mod immutability;
pub mod layout;
pub mod legacy;
pub mod names;
pub mod network;
pub mod node_local_pools;
pub mod not_carried_out;
pub mod operations;
pub mod pool_update;
pub mod removal;
pub mod scale;
pub mod spoke;
mod spoke_names;
mod spoke_payload;
mod spoke_update;
pub mod storage;
pub mod tiers;
pub mod topology;
pub mod transport;
pub mod volumes;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_create_more;
#[cfg(test)]
mod tests_deletion;
#[cfg(test)]
mod tests_host_access;
#[cfg(test)]
mod tests_legacy;
#[cfg(test)]
mod tests_legacy_volumes;
#[cfg(test)]
mod tests_payload_env;
#[cfg(test)]
mod tests_pools;
#[cfg(test)]
mod tests_sequencing;
#[cfg(test)]
mod tests_spoke;
#[cfg(test)]
mod tests_update;

use std::collections::BTreeMap;

use shared_types::garage_cluster::v1beta2::{self, GarageCluster, GarageClusterSpec};
use shared_types::keys::label::RESERVED_POD_LABELS;

use super::shared::deny_all;
use super::shared::labels::check_pod_labels_update;
use super::shared::names::{is_label_value, is_qualified_name};
use super::shared::selector;
use super::shared::services::check_consul;
use super::{Context, Operation, Review, Verdict};

pub use scale::{ScaleRequest, validate_scale};
pub use spoke::validate_cluster_v1beta1;

/// Validates a v1beta2 GarageCluster write.
///
/// CREATE runs the shape rules (GC-C*, warnings GC-W*) and the node-local
/// pool cross-cluster checks against `ctx`; UPDATE builds a validation copy that
/// tolerates unchanged released values (GC-U1..U9), runs the shape rules on
/// it and then the immutability and safe-sequencing rules (GC-U10..U14,
/// GC-S1..S11, GC-VAC-1); DELETE runs GC-D1..D11.
pub fn validate_cluster(review: Review<'_, v1beta2::GarageCluster>, ctx: &Context) -> Verdict {
    let mut verdict = Verdict::new();
    match (review.operation, review.old, review.new) {
        (Operation::Create, _, Some(new)) => create(new, ctx, &mut verdict),
        (Operation::Update, Some(old), Some(new)) => update(old, new, ctx, &mut verdict),
        (Operation::Delete, old, _) => deletion::check(old, ctx, &mut verdict),
        _ => verdict.deny(
            "GC-REQ",
            "request",
            "the admission request lacks the object its operation needs",
        ),
    }
    verdict
}

/// Whether [`validate_cluster`] reads the lists of its [`Context`] (GarageClusters,
/// GarageNodes, Nodes) for `review`. Only the node-local pool rules read them
/// (GC-NLP-OVERLAP, GC-NLP-NODES, GC-NLP-ROLES), and only for a submitted
/// object that declares pools; DELETE reads only the request's options.
/// An UPDATE that leaves the spec as it was (a label, annotation or
/// finalizer write, such as the reconciler's) is exempt too: those rules
/// refuse only HostPaths the old spec lacked and growth past a limit
/// compared with the old spec, and with equal specs there is neither.
///
/// The server reads the API server only when this says so, which spares
/// every other review three LISTs. A rule that starts reading a list for
/// other objects must widen this predicate, or it would judge an empty list;
/// `webhook/tests/context_reads.rs` checks that the verdicts of reviews this
/// predicate exempts do not depend on the lists.
pub fn reads_context_lists(review: &Review<'_, v1beta2::GarageCluster>) -> bool {
    let declares_pools = review
        .new
        .is_some_and(|new| tiers::Shape::of(&new.spec).has_pools());
    match (review.operation, review.old, review.new) {
        (Operation::Create, _, _) => declares_pools,
        (Operation::Update, Some(old), Some(new)) => declares_pools && old.spec != new.spec,
        (Operation::Update, _, _) => declares_pools,
        (Operation::Delete, _, _) => false,
    }
}

/// Label-selector queries whose results together hold every Node that
/// GC-NLP-NODES and GC-NLP-ROLES can count for `review`: one per distinct
/// pool selector of the old and the new object. Selectors that match no
/// labels at all (empty or unconvertible) need no query. The API server
/// evaluates a query as `selector::matches` does, so reading only these
/// Nodes gives the rules the same counts as reading every Node.
pub fn node_queries(review: &Review<'_, v1beta2::GarageCluster>) -> Option<Vec<String>> {
    let mut queries: Vec<String> = [review.old, review.new]
        .into_iter()
        .flatten()
        .flat_map(|c| tiers::Shape::of(&c.spec).pools())
        .filter_map(|p| p.selector.as_ref().and_then(selector::query))
        .collect();
    queries.sort();
    queries.dedup();
    Some(queries)
}

/// Whether [`validate_cluster_v1beta1`] reads the lists of its [`Context`]:
/// never. Node-local pools exist only in v1beta2, and under matchPolicy
/// Equivalent the v1beta2 validator judges them on the same write.
pub fn reads_context_lists_v1beta1(
    _review: &Review<'_, shared_types::garage_cluster::v1beta1::GarageCluster>,
) -> bool {
    false
}

/// The create-time shape rules and warnings on `c`.
fn shape_rules(
    c: &GarageCluster,
    legacy: bool,
    strict_labels: bool,
    check_names: bool,
    verdict: &mut Verdict,
) {
    let spec = &c.spec;
    if check_names {
        names::check(
            c.metadata.name.as_deref().unwrap_or_default(),
            spec,
            verdict,
        );
    }
    network::check_shape(spec, legacy, verdict);
    let (problems, warnings) = check_consul(spec.discovery.as_ref());
    deny_all(verdict, "GC-C4", problems);
    warnings.into_iter().for_each(|w| verdict.warn("GC-W4", w));
    federation::check_shape(c, legacy, verdict);
    storage::check_templates(spec, strict_labels, verdict);
    storage::check_claim_templates(spec, verdict);
    transport::check_reserved(c, verdict);
    topology::check_tiers(spec, verdict);
    topology::check_replica_bounds(spec, verdict);
    layout::check_shape(spec, verdict);
    node_local_pools::check_shape(spec, verdict);
    storage::check_default_group(spec, verdict);
    storage::check_gateway_metadata(spec, verdict);
    topology::check_connect_to(
        c.metadata.namespace.as_deref().unwrap_or_default(),
        spec,
        legacy,
        verdict,
    );
    storage::warnings(spec, verdict);
    federation::warnings(c, verdict);
    layout::warnings(spec, verdict);
    network::warnings(spec, verdict);
    disruption::warnings(spec, verdict);
}

fn create(new: &GarageCluster, ctx: &Context, verdict: &mut Verdict) {
    shape_rules(new, false, true, true, verdict);
    transport::check_budget(None, new, verdict);
    node_local_pools::check_exclusive_paths(new, None, ctx, verdict);
    node_local_pools::check_limits(new, None, ctx, verdict);
    host_access::check(new, None, ctx, verdict);
    operations::check(None, new, verdict);
    not_carried_out::check(None, new, verdict);
}

fn clean_labels(labels: &mut Option<BTreeMap<String, String>>) {
    if let Some(l) = labels.as_mut() {
        l.retain(|k, v| {
            is_qualified_name(k) && is_label_value(v) && !RESERVED_POD_LABELS.contains(&k.as_str())
        });
    }
}

/// GC-U4: SH-13 update rules for every pod-label map (kept legacy labels warn
/// with GC-W30); the copy keeps only valid, non-reserved labels.
fn grandfather_labels(
    old: &GarageClusterSpec,
    new: &GarageClusterSpec,
    copy: &mut GarageClusterSpec,
    verdict: &mut Verdict,
) {
    let mut judge = |field: &str,
                     o: Option<&BTreeMap<String, String>>,
                     n: Option<&BTreeMap<String, String>>| {
        let (p, w) = check_pod_labels_update(field, o, n);
        deny_all(verdict, "GC-U4", p);
        w.into_iter().for_each(|w| verdict.warn("GC-W30", w));
    };
    let os = old.storage.as_ref();
    if let Some(ns) = new.storage.as_ref() {
        judge(
            "spec.storage.podLabels",
            os.and_then(|s| s.pod_labels.as_ref()),
            ns.pod_labels.as_ref(),
        );
        for (i, p) in ns.node_local_pools.iter().flatten().enumerate() {
            let op = os
                .and_then(|s| s.node_local_pools.as_ref())
                .and_then(|ps| ps.iter().find(|o| o.name == p.name));
            judge(
                &format!("spec.storage.nodeLocalPools[{i}].podTemplate.podLabels"),
                op.and_then(|o| o.pod_template.as_ref())
                    .and_then(|t| t.pod_labels.as_ref()),
                p.pod_template.as_ref().and_then(|t| t.pod_labels.as_ref()),
            );
        }
    }
    if let Some(ng) = new.gateway.as_ref() {
        judge(
            "spec.gateway.podLabels",
            old.gateway.as_ref().and_then(|g| g.pod_labels.as_ref()),
            ng.pod_labels.as_ref(),
        );
    }
    if let Some(s) = copy.storage.as_mut() {
        clean_labels(&mut s.pod_labels);
        for p in s.node_local_pools.iter_mut().flatten() {
            if let Some(t) = p.pod_template.as_mut() {
                clean_labels(&mut t.pod_labels);
            }
        }
    }
    if let Some(g) = copy.gateway.as_mut() {
        clean_labels(&mut g.pod_labels);
    }
}

/// SH-12 on the storage and gateway pod templates (not on pool templates,
/// which no released version had) and GC-U5 on every volume of the copy.
fn grandfather_released(
    old: &GarageClusterSpec,
    copy: &mut GarageClusterSpec,
    verdict: &mut Verdict,
) {
    if let Some(s) = copy.storage.as_mut() {
        legacy::grandfather_storage("GC-C8", old.storage.as_ref(), s, verdict);
    }
    if let Some(g) = copy.gateway.as_mut() {
        let o = old.gateway.as_ref();
        legacy::grandfather_env(
            "spec.gateway",
            "GC-C9",
            (
                o.and_then(|g| g.env.as_ref()),
                o.and_then(|g| g.env_from.as_ref()),
            ),
            &mut g.env,
            &mut g.env_from,
            verdict,
        );
        legacy::neutralise_pair(
            "spec.gateway.metadata",
            o.and_then(|g| g.metadata.as_ref()),
            g.metadata.as_mut(),
            verdict,
        );
    }
}

fn update(old: &GarageCluster, new: &GarageCluster, ctx: &Context, verdict: &mut Verdict) {
    let (os, ns) = (&old.spec, &new.spec);
    let mut copy = new.clone();
    let name = new.metadata.name.as_deref().unwrap_or_default();
    let grandfathered = names::check_update(
        name,
        os,
        ns,
        new.metadata.deletion_timestamp.is_some(),
        verdict,
    );
    storage::grandfather_claim_templates(os, ns, &mut copy.spec, verdict);
    storage::grandfather_manual_gateway_metadata(os, ns, &mut copy.spec, verdict);
    grandfather_labels(os, ns, &mut copy.spec, verdict);
    grandfather_released(os, &mut copy.spec, verdict);
    topology::grandfather_replicas(os, ns, &mut copy.spec, verdict);
    topology::grandfather_tier_shapes(os, ns, &mut copy.spec, verdict);
    transport::grandfather(old, new, &mut copy, verdict);
    let legacy = os == ns;
    shape_rules(&copy, legacy, false, !grandfathered, verdict);
    transport::check_budget(Some(old), new, verdict);
    network::check_admin_port(os, ns, verdict);
    network::check_rpc_identity(old, new, verdict);
    operations::check(Some(old), new, verdict);
    not_carried_out::check(Some(old), new, verdict);
    immutability::check_drain_freeze(old, new, verdict);
    immutability::check_rollout_freeze(old, new, verdict);
    topology::check_ownership(
        new.metadata.namespace.as_deref().unwrap_or_default(),
        name,
        os,
        ns,
        verdict,
    );
    volumes::check_update(os, ns, verdict);
    layout::check_policy_update(os, ns, verdict);
    pool_update::check_update(os, ns, verdict);
    removal::check(old, ns, verdict);
    layout::check_factor(os, new, verdict);
    node_local_pools::check_exclusive_paths(new, Some(os), ctx, verdict);
    node_local_pools::check_limits(new, Some(os), ctx, verdict);
    host_access::check(new, Some(os), ctx, verdict);
}
