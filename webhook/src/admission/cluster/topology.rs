//! Tier shape and ownership: GC-C14 tier combinations, GC-C15 replica
//! bounds (with GC-U6 grandfathering), GC-U7 released conflicting shapes,
//! GC-C24 connectTo and GC-U12 layout-ownership identity.

use shared_types::garage_cluster::common::LayoutPolicy;
use shared_types::garage_cluster::v1beta2::GarageClusterSpec;

use super::tiers::{MAX_REPLICAS, Shape};
use crate::admission::Verdict;
use crate::admission::shared::endpoints::check_admin_endpoint;
use crate::admission::shared::remote::check_cluster_reference;

/// GC-C14 (duplicates CEL-1 and CEL-2).
pub fn check_tiers(spec: &GarageClusterSpec, verdict: &mut Verdict) {
    let (s, g, c) = (
        spec.storage.is_some(),
        spec.gateway.is_some(),
        spec.connect_to.is_some(),
    );
    if !s && !g && !c {
        verdict.deny(
            "GC-C14",
            "spec",
            "at least one of spec.storage, spec.gateway, or spec.connectTo must be set",
        );
    } else if g && !s && !c {
        verdict.deny(
            "GC-C14",
            "spec.gateway",
            "spec.gateway without spec.storage requires spec.connectTo (edge gateway pattern)",
        );
    } else if s && c {
        verdict.deny("GC-C14", "spec.connectTo", "spec.storage and spec.connectTo are mutually exclusive; use spec.remoteClusters to federate storage sites");
    }
}

fn bound_message(field: &str) -> String {
    format!(
        "{field} must be at most {MAX_REPLICAS} so every managed StatefulSet Pod and GarageNode name remains a valid Kubernetes label; storage.nodeLocalPools cardinality is selector-driven and is not subject to this limit"
    )
}

/// GC-C15: replica counts in [0, 50].
pub fn check_replica_bounds(spec: &GarageClusterSpec, verdict: &mut Verdict) {
    let tiers = [
        (
            "spec.storage.replicas",
            spec.storage.as_ref().and_then(|s| s.replicas),
        ),
        (
            "spec.gateway.replicas",
            spec.gateway.as_ref().and_then(|g| g.replicas),
        ),
    ];
    for (field, value) in tiers {
        match value {
            Some(r) if r < 0 => {
                verdict.deny("GC-C15", field, format!("{field} must be non-negative"))
            }
            Some(r) if r > MAX_REPLICAS => verdict.deny("GC-C15", field, bound_message(field)),
            _ => {}
        }
    }
}

/// GC-U6: a released object above the bound may keep or lower its replica
/// count (warning GC-W28); the validation copy is clamped so GC-C15 does not
/// strand it.
pub fn grandfather_replicas(
    old: &GarageClusterSpec,
    new: &GarageClusterSpec,
    copy: &mut GarageClusterSpec,
    verdict: &mut Verdict,
) {
    let (o, n) = (Shape::of(old), Shape::of(new));
    let pairs = [
        (
            "spec.storage.replicas",
            old.storage.is_some(),
            o.storage_replicas(),
            n.storage_replicas(),
        ),
        (
            "spec.gateway.replicas",
            old.gateway.is_some(),
            o.gateway_replicas(),
            n.gateway_replicas(),
        ),
    ];
    for (field, had, before, after) in pairs {
        if !(had && before > MAX_REPLICAS && after > MAX_REPLICAS) {
            continue;
        }
        if after > before {
            verdict.deny("GC-U6", field, format!("{field} exceeds the supported maximum {MAX_REPLICAS} and may only remain unchanged or decrease until it is within the bound"));
            continue;
        }
        verdict.warn("GC-W28", format!("{field} exceeds the supported maximum {MAX_REPLICAS}; this non-expanding update is temporarily tolerated so replicas can be retired"));
        if field == "spec.storage.replicas" {
            if let Some(s) = copy.storage.as_mut() {
                s.replicas = Some(MAX_REPLICAS);
            }
        } else if let Some(g) = copy.gateway.as_mut() {
            g.replicas = Some(MAX_REPLICAS);
        }
    }
}

/// GC-U7: released objects whose tier shape is now refused may only be
/// updated with an unchanged spec (warnings GC-W23, GC-W24). Part (b) applies only to an Auto default
/// group (QUIRK L-11 fixed: a Manual cluster's replicas were never used).
pub fn grandfather_tier_shapes(
    old: &GarageClusterSpec,
    new: &GarageClusterSpec,
    copy: &mut GarageClusterSpec,
    verdict: &mut Verdict,
) {
    let unchanged = old == new;
    if new.storage.is_some() && new.connect_to.is_some() {
        if unchanged && old.storage.is_some() && old.connect_to.is_some() {
            verdict.warn("GC-W23", "legacy spec.storage together with spec.connectTo is temporarily tolerated only for an unchanged-spec metadata/finalizer update; remove one ownership model");
            copy.connect_to = None;
        } else if old.storage.is_some() && old.connect_to.is_some() {
            verdict.deny("GC-U7", "spec.connectTo", "legacy spec.storage together with spec.connectTo may remain only on a byte-for-byte unchanged spec while metadata/finalizers are repaired; remove spec.connectTo or spec.storage");
            copy.connect_to = None;
        }
    }
    let missing_volumes = |s: &GarageClusterSpec| {
        let shape = Shape::of(s);
        shape.storage_replicas() > 0
            && shape.storage_policy() != LayoutPolicy::Manual
            && s.storage
                .as_ref()
                .is_some_and(|st| st.metadata.is_none() || st.data.is_none())
    };
    if missing_volumes(new) && missing_volumes(old) {
        if unchanged {
            verdict.warn("GC-W24", "legacy default storage replicas without both metadata and data are temporarily tolerated for an unchanged-spec metadata/finalizer update; add both volumes or scale the default group to zero");
        } else {
            verdict.deny("GC-U7", "spec.storage.replicas", "legacy default storage replicas without both metadata and data may remain only on a byte-for-byte unchanged spec while metadata/finalizers are repaired; add both volumes or scale the default group to zero");
        }
        if let Some(s) = copy.storage.as_mut() {
            s.replicas = Some(0);
        }
    }
}

/// GC-C24: connectTo references, namespace and identity sources.
pub fn check_connect_to(
    namespace: &str,
    spec: &GarageClusterSpec,
    legacy: bool,
    verdict: &mut Verdict,
) {
    let Some(c) = spec.connect_to.as_ref() else {
        return;
    };
    let shape = Shape::of(spec);
    if !legacy {
        if let Some(r) = c.cluster_ref.as_ref()
            && let Some(p) = check_cluster_reference("spec.connectTo.clusterRef", r)
        {
            verdict.deny("GC-C24", p.field, p.message);
        }
        if let Some(p) = check_admin_endpoint(
            "spec.connectTo.adminApiEndpoint",
            c.admin_api_endpoint.as_deref().unwrap_or_default(),
        ) {
            verdict.deny("GC-C24", p.field, p.message);
        }
    }
    if let Some(ns) = c.cluster_ref.as_ref().and_then(|r| r.namespace.as_deref())
        && !ns.is_empty()
        && ns != namespace
    {
        verdict.deny("GC-C24", "spec.connectTo.clusterRef.namespace", "connectTo.clusterRef.namespace must be empty or match metadata.namespace; cross-namespace credential and layout inheritance is not permitted");
    }
    let endpoint = c
        .admin_api_endpoint
        .as_deref()
        .is_some_and(|e| !e.is_empty());
    let peers = c.bootstrap_peers.as_ref().is_some_and(|p| !p.is_empty());
    if c.cluster_ref.is_none() && c.rpc_secret_ref.is_none() && !peers && !endpoint {
        verdict.deny(
            "GC-C24",
            "spec.connectTo",
            "connectTo must specify clusterRef, rpcSecretRef, bootstrapPeers, or adminApiEndpoint",
        );
        return;
    }
    let network_secret = spec
        .network
        .as_ref()
        .is_some_and(|n| n.rpc_secret_ref.is_some());
    if shape.has_gateway()
        && !network_secret
        && c.rpc_secret_ref.is_none()
        && c.cluster_ref.is_none()
    {
        verdict.deny("GC-C24", "spec.connectTo", "gateway connectTo requires clusterRef, connectTo.rpcSecretRef, or network.rpcSecretRef; bootstrapPeers and adminApiEndpoint do not provide the shared RPC identity");
    }
    if shape.is_handle()
        && c.cluster_ref.is_none()
        && !(endpoint && c.admin_token_secret_ref.is_some())
    {
        verdict.deny("GC-C24", "spec.connectTo", "management handle (spec.connectTo without storage/gateway) requires clusterRef, or adminApiEndpoint together with adminTokenSecretRef");
    }
}

fn endpoint_key(spec: &GarageClusterSpec) -> String {
    spec.connect_to
        .as_ref()
        .and_then(|c| c.admin_api_endpoint.as_deref())
        .map(|e| {
            e.trim()
                .to_ascii_lowercase()
                .trim_end_matches('/')
                .to_string()
        })
        .unwrap_or_default()
}

fn target(namespace: &str, name: &str, spec: &GarageClusterSpec, endpoint_first: bool) -> String {
    let ep = endpoint_key(spec);
    let c = spec.connect_to.as_ref();
    if endpoint_first && !ep.is_empty() {
        return format!("adminApiEndpoint:{ep}");
    }
    if let Some(r) = c.and_then(|c| c.cluster_ref.as_ref()) {
        let ns = r
            .namespace
            .as_deref()
            .filter(|n| !n.is_empty())
            .unwrap_or(namespace);
        return format!("clusterRef:{ns}/{}", r.name);
    }
    if !ep.is_empty() {
        return format!("adminApiEndpoint:{ep}");
    }
    if let Some(s) = c.and_then(|c| c.rpc_secret_ref.as_ref()) {
        let key = if s.key.is_empty() {
            "rpc-secret"
        } else {
            s.key.as_str()
        };
        return format!("rpcSecretRef:{namespace}/{}:{key}", s.name);
    }
    format!("generatedRpcSecret:{namespace}/{name}")
}

/// The (mode, target) ownership identity of GC-U12.
pub fn ownership(namespace: &str, name: &str, spec: &GarageClusterSpec) -> (&'static str, String) {
    let shape = Shape::of(spec);
    if spec.storage.is_some() {
        ("self-owned", format!("{namespace}/{name}"))
    } else if shape.is_handle() {
        ("management-handle", target(namespace, name, spec, true))
    } else if shape.is_edge_gateway() {
        ("edge-gateway", target(namespace, name, spec, false))
    } else {
        ("self-owned", format!("{namespace}/{name}"))
    }
}

/// GC-U12: the layout ownership mode and target never change.
pub fn check_ownership(
    namespace: &str,
    name: &str,
    old: &GarageClusterSpec,
    new: &GarageClusterSpec,
    verdict: &mut Verdict,
) {
    let (om, ot) = ownership(namespace, name, old);
    let (nm, nt) = ownership(namespace, name, new);
    if om != nm {
        verdict.deny("GC-U12", "spec", format!("garage layout ownership mode is immutable: cannot change an existing GarageCluster from {om} to {nm}; drain/delete it and create a distinct {nm} object"));
    } else if ot != nt {
        verdict.deny("GC-U12", "spec.connectTo", format!("garage layout ownership target is immutable: cannot retarget an existing {om} GarageCluster from {ot:?} to {nt:?}; create a distinct object for the other target"));
    }
}
