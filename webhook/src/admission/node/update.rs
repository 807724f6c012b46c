//! GarageNode UPDATE rules GN-U1…GN-U13, in order; the first
//! broken rule is reported.

use super::facts::{
    self, annotation, cluster_namespace, cycle_requested, drain_requested, is_external, is_pool,
    lost_source_ack,
};
use super::{Step, create, cycle, deny, parent, shape, volume_update};
use crate::admission::shared::env::grandfather_env;
use crate::admission::shared::labels::{check_pod_labels_update, renderable_pod_labels};
use crate::admission::shared::node_id::canonical_id;
use crate::admission::{Context, Verdict};
use shared_types::garage_cluster::common::{DrainActorKind, StorageRolloutStatus};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::garage_node::{CyclePhase, GarageNode, GarageNodeSpec};
use shared_types::keys::annotation::{
    ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_CYCLE, ANNOTATION_DRAIN,
    ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID,
};
use shared_types::keys::label::{LABEL_CLUSTER, LABEL_KUBERNETES_NODE, LABEL_NODE_LOCAL_POOL};

/// The spec as compared by GN-U1: node ID canonical, and every
/// volumeAttributesClassName cleared, because a class may change
/// on a live volume without counting as a workload change (it never gates
/// rollouts or drains; GN-VAC3 guards removal separately).
fn comparable(spec: &GarageNodeSpec) -> GarageNodeSpec {
    let mut s = spec.clone();
    s.node_id = s.node_id.as_deref().map(canonical_id);
    if let Some(storage) = s.storage.as_mut() {
        for v in storage
            .metadata
            .iter_mut()
            .chain(storage.data.iter_mut())
            .chain(storage.data_paths.iter_mut().flatten())
        {
            v.volume_attributes_class_name = None;
        }
    }
    s
}

/// GN-U4r: the spec with every workload override blanked.
fn without_workload_overrides(spec: &GarageNodeSpec) -> GarageNodeSpec {
    let mut s = comparable(spec);
    s.image = None;
    s.image_repository = None;
    s.resources = None;
    s.node_selector = None;
    s.tolerations = None;
    s.affinity = None;
    s.pod_annotations = None;
    s.pod_labels = None;
    s.priority_class_name = None;
    s.image_pull_policy = None;
    s.image_pull_secrets = None;
    s.service_account_name = None;
    s.security_context = None;
    s.container_security_context = None;
    s.topology_spread_constraints = None;
    s.env = None;
    s.env_from = None;
    s.logging = None;
    s
}

/// The annotations other than the drain request pair.
fn other_annotations(node: &GarageNode) -> Vec<(&String, &String)> {
    node.metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| *k != ANNOTATION_DRAIN && *k != ANNOTATION_ACKNOWLEDGE_LOST_SOURCE)
        .collect()
}

struct Change {
    spec: bool,
    drain_request: bool,
    cycle: bool,
}

/// Validates an UPDATE from `old` to `new`: the first broken rule is returned, warnings are
/// recorded on `warnings` (the review's verdict) as they are found.
pub fn validate(old: &GarageNode, new: &GarageNode, ctx: &Context, warnings: &mut Verdict) -> Step {
    let change = Change {
        spec: comparable(&old.spec) != comparable(&new.spec),
        drain_request: annotation(old, ANNOTATION_DRAIN) != annotation(new, ANNOTATION_DRAIN)
            || lost_source_ack(old) != lost_source_ack(new),
        cycle: annotation(old, ANNOTATION_CYCLE) != annotation(new, ANNOTATION_CYCLE),
    };
    cycle_freeze(old, new, &change)?;
    let owner = parent_freeze(old, new, ctx, &change)?;
    immutables(old, new)?;
    let grandfathered_name = name_grandfathering(old, new, &change, warnings)?;
    let mut copy = new.clone();
    if let Some(labels) = &new.spec.pod_labels {
        let (problems, legacy) =
            check_pod_labels_update("spec.podLabels", old.spec.pod_labels.as_ref(), Some(labels));
        if let Some(problem) = problems.into_iter().next() {
            return Err(problem.violation("GN-U7"));
        }
        legacy.into_iter().for_each(|w| warnings.warn("GN-W7", w));
        copy.spec.pod_labels = Some(renderable_pod_labels(labels));
    }
    // GN-U8: the rest of the validation copy, then the shape rules.
    volume_update::neutralise_legacy(old, &mut copy, warnings)?;
    let env = grandfather_env(
        "spec",
        old.spec.env.as_deref().unwrap_or_default(),
        old.spec.env_from.as_deref().unwrap_or_default(),
        new.spec.env.as_deref().unwrap_or_default(),
        new.spec.env_from.as_deref().unwrap_or_default(),
    )
    .map_err(|p| p.violation("GN-U8"))?;
    env.warnings
        .into_iter()
        .for_each(|w| warnings.warn("GN-W5", w));
    copy.spec.env = new.spec.env.as_ref().map(|_| env.env);
    copy.spec.env_from = new.spec.env_from.as_ref().map(|_| env.env_from);
    if grandfathered_name {
        copy.metadata.name = Some("grandfathered".into());
    }
    shape::check(&copy, !change.spec, warnings)?;
    if !cycle_requested(old) && cycle_requested(new) {
        cycle_start(new, ctx, owner)?;
    }
    lost_source_change(old, new)?;
    if is_pool(new) && !facts::is_deleting(new) {
        create::live_owner(new, ctx, false)?;
    }
    volume_update::check_topology(old, new)?;
    pool_label_warnings(old, new, warnings);
    Ok(())
}

/// GN-U2, GN-U3, GN-CY4: a requested or running cycle freezes the spec and owns the drain.
fn cycle_freeze(old: &GarageNode, new: &GarageNode, change: &Change) -> Step {
    let old_phase = old.status.as_ref().and_then(|s| s.cycle_phase);
    if change.spec && (cycle_requested(old) || old_phase.is_some() || cycle_requested(new)) {
        return Err(deny(
            "GN-U2",
            "spec",
            "garageNode spec cannot change while a cycle is requested or active; finish or safely cancel the exact replacement transaction first",
        ));
    }
    if cycle_requested(old)
        && !cycle_requested(new)
        && old_phase == Some(CyclePhase::Draining)
        && drain_requested(old)
    {
        return Err(deny(
            "GN-U3",
            format!("metadata.annotations[{ANNOTATION_CYCLE}]"),
            format!(
                "annotation {ANNOTATION_CYCLE} cannot be removed after the cycle entered Draining: the source role is already being removed; let the cycle finish"
            ),
        ));
    }
    // GN-CY4: the cycle asks for the drain itself once its sibling holds a role; a drain
    // asked before that would prove the source gone without the sibling among its
    // destinations, and the cycle could never promote it.
    if !drain_requested(old)
        && drain_requested(new)
        && (cycle_requested(new) || old_phase.is_some())
        && old_phase != Some(CyclePhase::Draining)
    {
        return Err(deny(
            "GN-CY4",
            format!("metadata.annotations[{ANNOTATION_DRAIN}]"),
            format!(
                "annotation {ANNOTATION_DRAIN} cannot be set while a cycle is requested and not yet Draining: the cycle drains this node itself once its sibling is in the layout; to drain it alone, remove {ANNOTATION_CYCLE} first"
            ),
        ));
    }
    Ok(())
}

/// GN-U4: the layout owner's rollout or drain freezes node changes, except
/// for the exact roll-forward and lost-source escalations. Returns the owner
/// when it was resolved (GN-U10 needs it).
fn parent_freeze<'a>(
    old: &GarageNode,
    new: &GarageNode,
    ctx: &'a Context,
    change: &Change,
) -> Result<Option<&'a GarageCluster>, super::Violation> {
    if !(change.spec || change.drain_request || change.cycle) {
        return Ok(None);
    }
    let Some(cluster) = parent::find(ctx, cluster_namespace(old), &old.spec.cluster_ref.name)
    else {
        return Ok(None);
    };
    let owner = parent::layout_owner(ctx, cluster).map_err(|e| {
        deny(
            "GN-U4",
            "spec.clusterRef",
            format!("checking parent storage rollout before GarageNode spec update: {e}"),
        )
    })?;
    let status = owner.status.as_ref();
    if parent::rollout_active(owner).is_some()
        && !roll_forward(old, new, owner, change)
        && !rollout_escalation(old, new, owner, change)
    {
        return Err(deny(
            "GN-U4",
            "spec",
            format!(
                "garageNode spec cannot change while canonical GarageCluster {} has status.storageRollout active; only workload override fields on the exact persisted GarageNode UID may change to roll that actor forward",
                parent::key(owner)
            ),
        ));
    }
    if let Some(drain) = status.and_then(|s| s.storage_drain.as_ref())
        && (change.spec || !drain_escalation(old, new, owner))
    {
        return Err(deny(
            "GN-U4",
            "spec",
            format!(
                "garageNode spec or drain/recovery annotations cannot change while canonical GarageCluster {} has status.storageDrain transaction {:?} active",
                parent::key(owner),
                drain.transaction_id.as_deref().unwrap_or_default()
            ),
        ));
    }
    Ok(Some(owner))
}

/// The owner's storage-rollout record and the node's UID, when a rollout is
/// recorded and `old` and `new` are the same object incarnation: the only
/// case in which a rollout exception can apply to this update.
fn rollout_on_same_object<'a>(
    old: &'a GarageNode,
    new: &GarageNode,
    owner: &'a GarageCluster,
) -> Option<(&'a StorageRolloutStatus, &'a str)> {
    let record = owner.status.as_ref()?.storage_rollout.as_ref()?;
    let uid = facts::uid(old);
    (!uid.is_empty() && uid == facts::uid(new)).then_some((record, uid))
}

/// GN-U4r: only workload overrides change, on the exact rollout actor.
fn roll_forward(
    old: &GarageNode,
    new: &GarageNode,
    owner: &GarageCluster,
    change: &Change,
) -> bool {
    let Some((record, uid)) = rollout_on_same_object(old, new, owner) else {
        return false;
    };
    change.spec
        && !change.drain_request
        && record.garage_node_name.as_deref() == Some(facts::name(new))
        && record.garage_node_uid.as_deref() == Some(uid)
        && without_workload_overrides(&old.spec) == without_workload_overrides(&new.spec)
}

/// GN-U4e: the exact rollout actor is declared lost (drain + acknowledge).
fn rollout_escalation(
    old: &GarageNode,
    new: &GarageNode,
    owner: &GarageCluster,
    change: &Change,
) -> bool {
    let Some((record, uid)) = rollout_on_same_object(old, new, owner) else {
        return false;
    };
    let ack = lost_source_ack(new);
    let known = facts::known_node_id(new).unwrap_or_default();
    let record_id = record
        .garage_node_id
        .as_deref()
        .map(canonical_id)
        .unwrap_or_default();
    let actor = match record.garage_node_name.as_deref().filter(|n| !n.is_empty()) {
        Some(name) => name == facts::name(new),
        None => {
            is_pool(new)
                && record.node_local_pool_name == new.spec.node_local_pool_name
                && record.kubernetes_node_name == new.spec.kubernetes_node_name
        }
    };
    !change.spec
        && change.drain_request
        && !drain_requested(old)
        && lost_source_ack(old).is_empty()
        && drain_requested(new)
        && !ack.is_empty()
        && ack == known
        && ack == record_id
        && record.garage_node_uid.as_deref() == Some(uid)
        && actor
        && other_annotations(old) == other_annotations(new)
}

/// GN-U4x: during this node's own drain, the lost source is acknowledged.
fn drain_escalation(old: &GarageNode, new: &GarageNode, owner: &GarageCluster) -> bool {
    let Some(drain) = owner.status.as_ref().and_then(|s| s.storage_drain.as_ref()) else {
        return false;
    };
    let uid = facts::uid(old);
    let ack = lost_source_ack(new);
    let actor_is_node = drain.actor.as_ref().is_some_and(|a| {
        a.api_version.as_deref() == Some(facts::NODE_API_VERSION)
            && a.kind == Some(DrainActorKind::GarageNode)
            && a.namespace.as_deref() == Some(facts::namespace(old))
            && a.name.as_deref() == Some(facts::name(old))
            && a.uid.as_deref() == Some(uid)
    });
    !uid.is_empty()
        && drain_requested(old)
        && drain_requested(new)
        && lost_source_ack(old).is_empty()
        && !ack.is_empty()
        && actor_is_node
        && drain
            .removed_storage_node_ids
            .iter()
            .flatten()
            .any(|id| canonical_id(id) == ack)
}

/// GN-U5: identity-defining fields never change.
fn immutables(old: &GarageNode, new: &GarageNode) -> Step {
    let fail = |field: &str, msg: String| Err(deny("GN-U5", field, msg));
    if facts::backing(old) != facts::backing(new) {
        return fail(
            "spec.backing",
            format!(
                "backing is immutable: cannot change from {:?} to {:?}; create a new GarageNode and drain this one",
                facts::backing(old),
                facts::backing(new)
            ),
        );
    }
    if facts::is_gateway(old) != facts::is_gateway(new) {
        return fail(
            "spec.gateway",
            "gateway is immutable: delete and drain the existing GarageNode identity and create a new one in the other tier".into(),
        );
    }
    if old.spec.cluster_ref.name != new.spec.cluster_ref.name
        || cluster_namespace(old) != cluster_namespace(new)
    {
        return fail(
            "spec.clusterRef",
            "clusterRef is immutable: a Garage identity cannot move between clusters; create a new GarageNode under the other cluster".into(),
        );
    }
    if facts::spec_node_id(old) != facts::spec_node_id(new) {
        return fail(
            "spec.nodeId",
            "nodeId is immutable: it identifies the Garage process key; create a new GarageNode for another identity".into(),
        );
    }
    let old_pin = facts::recovery_pin(old);
    if !old_pin.is_empty() && old_pin != facts::recovery_pin(new) {
        return fail(
            &format!("metadata.annotations[{ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID}]"),
            format!(
                "annotation {ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID} is immutable once set"
            ),
        );
    }
    if is_external(old) != is_external(new) {
        return fail(
            "spec.external",
            "external versus operator-managed process ownership is immutable; create a new GarageNode instead".into(),
        );
    }
    if is_pool(new) {
        if old.spec.kubernetes_node_name != new.spec.kubernetes_node_name {
            return fail(
                "spec.kubernetesNodeName",
                "kubernetesNodeName is immutable on a node-local-pool member".into(),
            );
        }
        if old.spec.node_local_pool_name != new.spec.node_local_pool_name {
            return fail(
                "spec.nodeLocalPoolName",
                "nodeLocalPoolName is immutable on a node-local-pool member; move a Node between pools in two steps".into(),
            );
        }
    }
    Ok(())
}

/// GN-U6: a released over-long name stays usable for non-rendering
/// updates. Returns whether the copy must use a stand-in name.
fn name_grandfathering(
    old: &GarageNode,
    new: &GarageNode,
    change: &Change,
    warnings: &mut Verdict,
) -> Result<bool, super::Violation> {
    if shape::name_fits(new) {
        return Ok(false);
    }
    if shape::name_fits(old) {
        return Err(deny(
            "GN-U6",
            "metadata.name",
            "update introduces an invalid managed workload name; use a shorter GarageNode name",
        ));
    }
    if facts::is_deleting(new) || is_external(new) || is_pool(new) || !change.spec {
        warnings.warn("GN-W8", format!(
            "metadata.name is grandfathered for this non-expanding update; creating or rolling a StatefulSet-backed workload remains blocked until {}-0 is a valid Kubernetes label value",
            facts::name(new)
        ));
        return Ok(true);
    }
    Err(deny(
        "GN-U6",
        "metadata.name",
        format!(
            "metadata.name cannot produce a valid {}-0 StatefulSet Pod label; metadata/finalizer and drain-recovery updates may proceed, but workload-rendering spec changes require a shorter replacement GarageNode identity",
            facts::name(new)
        ),
    ))
}

/// GN-U10: starting a cycle needs a ready source and a safe parent.
fn cycle_start(node: &GarageNode, ctx: &Context, owner: Option<&GarageCluster>) -> Step {
    let field = format!("metadata.annotations[{ANNOTATION_CYCLE}]");
    let prefix = format!("annotation {ANNOTATION_CYCLE} is not eligible: ");
    let ineligible =
        |(rule, why): cycle::Ineligible| deny(rule, field.clone(), format!("{prefix}{why}"));
    cycle::source_ready(node).map_err(ineligible)?;
    if let Some(cluster) = parent::find(ctx, cluster_namespace(node), &node.spec.cluster_ref.name) {
        cycle::parent_network(node, cluster).map_err(ineligible)?;
    }
    let Some(owner) = owner else {
        return Err(deny(
            "GN-U10",
            field,
            format!(
                "annotation {ANNOTATION_CYCLE} cannot start while the referenced GarageCluster or canonical layout owner is absent"
            ),
        ));
    };
    parent::drain_readiness(owner).map_err(|why| {
        deny(
            "GN-DR",
            field.clone(),
            format!("annotation {ANNOTATION_CYCLE} cannot start before the canonical Garage layout is safe for a positive-capacity replacement: {why}"),
        )
    })
}

/// GN-U11: the lost-source acknowledgement is one-way and names this node.
fn lost_source_change(old: &GarageNode, new: &GarageNode) -> Step {
    let (before, after) = (lost_source_ack(old), lost_source_ack(new));
    if before == after {
        return Ok(());
    }
    let field = format!("metadata.annotations[{ANNOTATION_ACKNOWLEDGE_LOST_SOURCE}]");
    if !before.is_empty() {
        return Err(deny(
            "GN-U11",
            field,
            format!(
                "annotation {ANNOTATION_ACKNOWLEDGE_LOST_SOURCE} is one-way and immutable once set; it cannot be changed or removed"
            ),
        ));
    }
    let known = [
        facts::status_node_id(old),
        facts::status_node_id(new),
        facts::spec_node_id(old),
        facts::spec_node_id(new),
        facts::trusted_recovery_pin(old).unwrap_or_default(),
        facts::trusted_recovery_pin(new).unwrap_or_default(),
    ];
    if !known.iter().any(|id| !id.is_empty() && *id == after) {
        return Err(deny(
            "GN-U11",
            field,
            format!(
                "annotation {ANNOTATION_ACKNOWLEDGE_LOST_SOURCE} must equal this GarageNode's exact known status.nodeId or spec.nodeId"
            ),
        ));
    }
    Ok(())
}

/// GN-W11: the generated labels of a pool member are diagnostic outputs
/// of the operator; editing them changes nothing but what selectors find.
fn pool_label_warnings(old: &GarageNode, new: &GarageNode, warnings: &mut Verdict) {
    if !is_pool(new) {
        return;
    }
    let get =
        |n: &GarageNode, key: &str| n.metadata.labels.as_ref().and_then(|l| l.get(key)).cloned();
    for key in [LABEL_CLUSTER, LABEL_NODE_LOCAL_POOL, LABEL_KUBERNETES_NODE] {
        let before = get(old, key);
        if before.is_some() && before != get(new, key) {
            warnings.warn("GN-W11", format!("metadata.labels[{key}] is an operator-managed output on node-local-pool members; editing it does not change pool membership, which follows spec.storage.nodeLocalPools[].selector on the parent"));
        }
    }
}
