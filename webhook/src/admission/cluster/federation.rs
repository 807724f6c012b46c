//! Federation and deletion-policy shape: GC-C6/C7 annotations, GC-C16
//! remote clusters, GC-C17 Drain prerequisites and warnings GC-W1..W3,
//! GC-W9, GC-W10.

use shared_types::garage_cluster::common::{
    ConsistencyMode, DeletionPolicy, LayoutManagementConfig, ReplicationConfig,
    UnverifiedPeersPolicy,
};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::{
    ANNOTATION_DRAIN, ANNOTATION_FORCE_DELETE_UNREVOKED_OPERATOR_TOKENS,
};

use super::tiers::Shape;
use crate::admission::Verdict;
use crate::admission::shared::deny_all;
use crate::admission::shared::remote::{RemoteView, check_remote_clusters};
use crate::admission::shared::replication::{effective_consistency, effective_peer_policy};

/// GC-C6, GC-C7, GC-C16, GC-C17.
pub fn check_shape(c: &GarageCluster, legacy: bool, verdict: &mut Verdict) {
    let spec = &c.spec;
    let ann = c.metadata.annotations.as_ref();
    if let Some(v) = ann.and_then(|a| a.get(ANNOTATION_DRAIN)) {
        let f = format!("metadata.annotations[{ANNOTATION_DRAIN}]");
        if v != "true" {
            verdict.deny(
                "GC-C6",
                f,
                format!("{ANNOTATION_DRAIN} must be \"true\" when present"),
            );
        } else if spec.storage.is_none() || spec.deletion_policy != Some(DeletionPolicy::Drain) {
            verdict.deny("GC-C6", f, format!("{ANNOTATION_DRAIN} requires a storage GarageCluster with explicit spec.deletionPolicy: Drain"));
        }
    }
    if let Some(v) = ann.and_then(|a| a.get(ANNOTATION_FORCE_DELETE_UNREVOKED_OPERATOR_TOKENS))
        && v != "true"
    {
        verdict.deny(
            "GC-C7",
            format!("metadata.annotations[{ANNOTATION_FORCE_DELETE_UNREVOKED_OPERATOR_TOKENS}]"),
            format!(
                "{ANNOTATION_FORCE_DELETE_UNREVOKED_OPERATOR_TOKENS} must be \"true\" when present"
            ),
        );
    }
    let remotes: Vec<RemoteView<'_>> = spec
        .remote_clusters
        .iter()
        .flatten()
        .map(|r| RemoteView {
            name: &r.name,
            zone: &r.zone,
            has_default_capacity: r.default_capacity.is_some(),
            endpoint: &r.connection.admin_api_endpoint,
        })
        .collect();
    deny_all(verdict, "GC-C16", check_remote_clusters(&remotes, legacy));
    if spec.storage.is_some() && spec.deletion_policy == Some(DeletionPolicy::Drain) {
        check_drain_prerequisites(
            "GC-C17",
            !remotes.is_empty(),
            spec.replication.as_ref(),
            spec.layout_management.as_ref(),
            verdict,
        );
    }
}

/// GC-C17 (G1-C13 on v1beta1) for a storage cluster with deletionPolicy
/// Drain: Drain retires one site from a surviving federated layout, which is
/// only provably safe with remote clusters, consistent replication and the
/// AssumeConsistent peer policy.
pub fn check_drain_prerequisites(
    rule: &'static str,
    has_remotes: bool,
    replication: Option<&ReplicationConfig>,
    layout_management: Option<&LayoutManagementConfig>,
    verdict: &mut Verdict,
) {
    if !has_remotes {
        verdict.deny(rule, "spec.deletionPolicy", "Drain retires one site from a surviving federated Garage layout and requires spec.remoteClusters; use Destroy for a standalone/all-local store");
    } else if effective_consistency(replication) != ConsistencyMode::Consistent {
        verdict.deny(
            rule,
            "spec.replication.consistencyMode",
            "Drain with spec.remoteClusters requires spec.replication.consistencyMode: consistent",
        );
    } else if effective_peer_policy(layout_management) != UnverifiedPeersPolicy::AssumeConsistent {
        verdict.deny(rule, "spec.layoutManagement.drain.unverifiedPeersPolicy", "Drain with spec.remoteClusters requires spec.layoutManagement.drain.unverifiedPeersPolicy: AssumeConsistent");
    }
}

/// The AssumeConsistent warning (GC-W3), also returned by an allowed DELETE.
pub const ASSUME_CONSISTENT_WARNING: &str = "spec.layoutManagement.drain.unverifiedPeersPolicy=AssumeConsistent is an operator assertion the API cannot verify: every federated site must run consistencyMode consistent and topology changes must be serialized through one site at a time";

/// GC-W1, GC-W2, GC-W3, GC-W9, GC-W10.
pub fn warnings(c: &GarageCluster, verdict: &mut Verdict) {
    let spec = &c.spec;
    let shape = Shape::of(spec);
    if shape.federated() {
        match spec.deletion_policy {
            None => verdict.warn("GC-W1", "spec.deletionPolicy is omitted on a federated GarageCluster: normal reconciliation remains compatible, but deletion is refused until Drain or Destroy is chosen explicitly"),
            Some(DeletionPolicy::Destroy) => verdict.warn("GC-W2", "spec.deletionPolicy is Destroy on a federated GarageCluster: deleting this object tears down the local store without draining its roles; use Drain to retire this site safely"),
            Some(DeletionPolicy::Drain) => {}
        }
    }
    if effective_peer_policy(spec.layout_management.as_ref())
        == UnverifiedPeersPolicy::AssumeConsistent
    {
        verdict.warn("GC-W3", ASSUME_CONSISTENT_WARNING);
    }
    if spec.replication.as_ref().and_then(|r| r.consistency_mode)
        == Some(ConsistencyMode::Dangerous)
    {
        verdict.warn(
            "GC-W9",
            "ConsistencyMode 'dangerous' may lead to data loss. Use only for testing.",
        );
    }
    if !shape.federated() {
        return;
    }
    let blank = |s: Option<&String>| s.is_none_or(|s| s.trim().is_empty());
    let net = spec.network.as_ref();
    let subnet_blank = blank(net.and_then(|n| n.rpc_public_addr_subnet.as_ref()));
    let net_addr_blank = blank(net.and_then(|n| n.rpc_public_addr.as_ref()));
    if shape.managed_default_pool()
        && net_addr_blank
        && blank(
            spec.storage
                .as_ref()
                .and_then(|s| s.rpc_public_addr.as_ref()),
        )
        && spec.public_endpoint.is_none()
        && subnet_blank
    {
        verdict.warn("GC-W10", "spec.remoteClusters is set but the default StatefulSet/PVC group has no identity-specific RPC address; set spec.storage.rpcPublicAddr with {ordinal}, spec.publicEndpoint or spec.network.rpcPublicAddrSubnet");
    }
    if subnet_blank {
        let mut missing: Vec<&str> = shape
            .pools()
            .iter()
            .filter(|p| {
                blank(
                    p.network
                        .as_ref()
                        .and_then(|n| n.rpc_public_addr_template.as_ref()),
                )
            })
            .map(|p| p.name.as_str())
            .collect();
        missing.sort_unstable();
        if !missing.is_empty() {
            verdict.warn("GC-W10", format!("federated node-local pools {} have no identity-specific RPC address; set nodeLocalPools[].network.rpcPublicAddrTemplate or spec.network.rpcPublicAddrSubnet", missing.join(", ")));
        }
    }
    if spec.storage.is_some()
        && shape.gateway_replicas() > 0
        && subnet_blank
        && net_addr_blank
        && blank(
            spec.gateway
                .as_ref()
                .and_then(|g| g.rpc_public_addr.as_ref()),
        )
    {
        verdict.warn("GC-W10", "the unified gateway tier has no identity-specific RPC address; set spec.gateway.rpcPublicAddr with {ordinal} or spec.network.rpcPublicAddrSubnet");
    }
}
