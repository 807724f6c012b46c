//! The workload of an edge gateway: a GarageCluster with a gateway tier and `spec.connectTo`,
//! and no storage, whose capacity-less members join the layout of the storage cluster it
//! connects to.
//!
//! Its members run from one StatefulSet `E-gateway` (pods `E-gateway-<i>`) with the Go
//! operator's shape, so that the claims of a running edge (`metadata-E-gateway-<i>`, each
//! holding a member's node key) keep their identities when this operator takes it over:
//! `RollingUpdate` (one member at a time, readiness-gated: a gateway holds no data), `Parallel`
//! pod management, the `metadata` claim template of `spec.gateway.metadata` (1 Gi by default,
//! or an emptyDir), data on an emptyDir, and claims deleted with the set or a scale-down
//! unless `spec.gateway.pvcRetentionPolicy` says otherwise.
//!
//! The pod itself is the one a generated gateway GarageNode of the cluster would run: it is
//! rendered through [`super::statefulset::statefulset`] from that GarageNode, then given the
//! edge's name, selector, labels, owner and rollout.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    RollingUpdateStatefulSetStrategy, StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy,
    StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use shared_types::garage_cluster::common::PvcRetention;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::{annotation, label};

use super::config::ConfigRevision;
use super::secrets::SecretSource;
use super::statefulset::{NodeInputs, statefulset as node_statefulset};
use super::{DesiredError, Settings, controller_ref, labels, nodes, rendered_hash, services};
use crate::names;

/// True for an edge gateway: a gateway tier and `spec.connectTo`, no storage.
pub fn is_edge(c: &GarageCluster) -> bool {
    c.spec.gateway.is_some() && c.spec.storage.is_none() && c.spec.connect_to.is_some()
}

/// Labels of the edge's pods, and of the set: its gateway selector and its cluster.
pub fn pod_labels(cluster: &str) -> BTreeMap<String, String> {
    let mut l = labels::gateway_selector(cluster);
    l.insert(label::LABEL_CLUSTER.into(), cluster.into());
    l.insert(
        label::LABEL_APP_MANAGED_BY.into(),
        label::value::MANAGED_BY_OPERATOR.into(),
    );
    l
}

/// The edge's StatefulSet, mounting `config` and the two secrets.
pub fn statefulset(
    c: &GarageCluster,
    s: &Settings,
    config: &ConfigRevision,
    rpc_secret: &SecretSource,
    admin_token: &SecretSource,
) -> Result<StatefulSet, DesiredError> {
    // The member every pod of the set is: a generated gateway of this cluster, with the
    // cluster's UID standing in for a GarageNode's (it is only used to name claim owners).
    let mut member = nodes::auto_gateway_node(c, s, 0)?;
    member.metadata.uid = Some(s.uid.clone());
    let mut set = node_statefulset(NodeInputs {
        cluster: c,
        settings: s,
        node: &member,
        config,
        rpc_secret,
        admin_token,
        fenced: false,
    })?;
    let name = names::gateway_service(&s.name);
    let pod_labels = pod_labels(&s.name);
    let spec = set
        .spec
        .as_mut()
        .ok_or(DesiredError::MissingMetadata("spec"))?;
    spec.replicas = Some(i32::try_from(s.gateway_replicas).unwrap_or(i32::MAX));
    spec.update_strategy = Some(StatefulSetUpdateStrategy {
        type_: Some("RollingUpdate".into()),
        rolling_update: Some(RollingUpdateStatefulSetStrategy::default()),
    });
    spec.persistent_volume_claim_retention_policy = Some(retention(c));
    spec.selector = LabelSelector {
        match_labels: Some(labels::gateway_selector(&s.name)),
        match_expressions: None,
    };
    if let Some(meta) = spec.template.metadata.as_mut() {
        meta.labels = Some(pod_labels.clone());
    }
    for claim in spec.volume_claim_templates.iter_mut().flatten() {
        // A claim template names no member: the set's claims are per ordinal.
        if let Some(l) = claim.metadata.labels.as_mut() {
            l.remove(label::LABEL_NODE);
        }
        claim.metadata.owner_references = None;
    }
    let hash = rendered_hash(&(
        &spec.template,
        spec.replicas,
        &spec.update_strategy,
        &spec.persistent_volume_claim_retention_policy,
    ));
    set.metadata.name = Some(name);
    set.metadata.labels = Some(pod_labels);
    set.metadata.owner_references = Some(vec![controller_ref(c)?]);
    set.metadata.annotations = Some(BTreeMap::from([(
        annotation::ANNOTATION_RENDERED_HASH.to_owned(),
        hash,
    )]));
    Ok(set)
}

/// The edge's Services: `E` (S3, web, K2V and, when ClusterIP, the Admin API) and `E-admin`
/// over its gateway pods instead of storage pods, following readiness as a gateway Service
/// does (a member that is not ready has nothing to offer a client another cannot), and
/// `E-headless` over every pod of the edge.
pub fn services(c: &GarageCluster, s: &Settings) -> Result<Vec<Service>, DesiredError> {
    let mut front = vec![services::api(c, s)?, services::admin(c, s)?];
    for service in &mut front {
        if let Some(spec) = service.spec.as_mut() {
            spec.selector = Some(labels::gateway_selector(&s.name));
            spec.publish_not_ready_addresses = None;
        }
    }
    front.push(services::headless(c, s)?);
    Ok(front)
}

/// Claims go with the set and with a scale-down unless the edge keeps them: an edge member's
/// identity is worth nothing once its role is retired.
fn retention(c: &GarageCluster) -> StatefulSetPersistentVolumeClaimRetentionPolicy {
    let asked = c
        .spec
        .gateway
        .as_ref()
        .and_then(|g| g.pvc_retention_policy.as_ref());
    let text = |r: Option<PvcRetention>| match r {
        Some(PvcRetention::Retain) => "Retain".to_owned(),
        _ => "Delete".to_owned(),
    };
    StatefulSetPersistentVolumeClaimRetentionPolicy {
        when_deleted: Some(text(asked.and_then(|r| r.when_deleted))),
        when_scaled: Some(text(asked.and_then(|r| r.when_scaled))),
    }
}

#[cfg(test)]
mod tests;
