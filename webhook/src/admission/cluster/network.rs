//! Network and Garage configuration rules: GC-C1, GC-C2, GC-C5, GC-C19,
//! GC-C25, GC-C26, GC-U10 admin port, GC-U11 RPC identity source and the
//! address warnings GC-W12..GC-W14.

use shared_types::garage_cluster::common::{BlockConfig, NetworkConfig};
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterSpec};
use shared_types::keys::annotation::ANNOTATION_MIGRATE_LEGACY_RPC_SECRET;

use super::tiers::Shape;
use crate::admission::Verdict;
use crate::admission::shared::deny_first;
use crate::admission::shared::durations::{
    check_compression_level, check_positive, check_rpc_duration, check_snapshot_interval,
};
use crate::admission::shared::endpoints::{Listeners, admin_port, check_listeners};
use crate::admission::shared::env::RESERVED_ENV;
use crate::admission::shared::names::is_qualified_name;
use crate::admission::shared::services::{check_public_endpoint, check_service};

/// Whether `s` parses as an IPv4/IPv6 CIDR.
pub fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    match (ip.parse::<std::net::IpAddr>(), bits.parse::<u8>()) {
        (Ok(std::net::IpAddr::V4(_)), Ok(b)) => b <= 32,
        (Ok(std::net::IpAddr::V6(_)), Ok(b)) => b <= 128,
        _ => false,
    }
}

/// The network and configuration shape rules; `legacy` skips the newly
/// strict ones for an unchanged released spec.
pub fn check_shape(spec: &GarageClusterSpec, legacy: bool, verdict: &mut Verdict) {
    if !legacy {
        deny_first(
            verdict,
            "GC-C1",
            check_public_endpoint("spec.publicEndpoint", spec.public_endpoint.as_ref()),
        );
        deny_first(
            verdict,
            "GC-C2",
            check_service(
                "spec.network.service",
                spec.network.as_ref().and_then(|n| n.service.as_ref()),
            ),
        );
    }
    let tls = spec.security.as_ref().and_then(|s| s.tls.as_ref());
    if tls.is_some_and(|t| {
        t.enabled == Some(true)
            || t.cert_secret_ref.is_some()
            || t.key_secret_ref.is_some()
            || t.ca_secret_ref.is_some()
    }) {
        verdict.deny("GC-C5", "spec.security.tls", "spec.security.tls is unsupported: Garage removed the rpc_tls configuration; remove it (RPC traffic is authenticated by the shared RPC secret)");
    }
    if let Some(z) = spec.zone_from.as_ref()
        && !is_qualified_name(&z.node_label)
    {
        verdict.deny(
            "GC-C19",
            "spec.zoneFrom.nodeLabel",
            format!(
                "zoneFrom.nodeLabel {:?} is not a valid label key",
                z.node_label
            ),
        );
    }
    if legacy {
        return;
    }
    let net = spec.network.as_ref();
    if let Some(subnet) = net
        .and_then(|n| n.rpc_public_addr_subnet.as_deref())
        .filter(|s| !s.is_empty())
        && !is_cidr(subnet)
    {
        verdict.deny(
            "GC-C25",
            "spec.network.rpcPublicAddrSubnet",
            format!("{subnet:?} must be a valid CIDR such as 10.0.0.0/8"),
        );
    }
    if !Shape::of(spec).is_handle() {
        deny_first(
            verdict,
            "GC-C25",
            check_listeners(Listeners {
                network: net,
                s3: spec.s3_api.as_ref(),
                k2v: spec.k2v_api.as_ref(),
                web: spec.web_api.as_ref(),
                admin: spec.admin.as_ref(),
            }),
        );
    }
    check_timeouts(
        "GC-C26",
        net,
        spec.storage
            .as_ref()
            .and_then(|s| s.metadata_auto_snapshot_interval.as_deref()),
        verdict,
    );
    let db = spec.database.as_ref();
    deny_first(
        verdict,
        "GC-C26",
        check_positive(
            "spec.database.lmdbMapSize",
            db.and_then(|d| d.lmdb_map_size.as_ref()),
        ),
    );
    deny_first(
        verdict,
        "GC-C26",
        check_positive(
            "spec.database.fjallBlockCacheSize",
            db.and_then(|d| d.fjall_block_cache_size.as_ref()),
        ),
    );
    check_blocks("GC-C26", spec.blocks.as_ref(), verdict);
}

/// The RPC timeouts and the metadata snapshot interval under `rule` (GC-C26
/// on v1beta2, G1-C16 on v1beta1, which carry them alike).
pub fn check_timeouts(
    rule: &'static str,
    net: Option<&NetworkConfig>,
    snapshot_interval: Option<&str>,
    verdict: &mut Verdict,
) {
    for (field, v) in [
        (
            "spec.network.rpcPingTimeout",
            net.and_then(|n| n.rpc_ping_timeout.as_deref()),
        ),
        (
            "spec.network.rpcTimeout",
            net.and_then(|n| n.rpc_timeout.as_deref()),
        ),
    ] {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            deny_first(verdict, rule, check_rpc_duration(field, v));
        }
    }
    if let Some(i) = snapshot_interval {
        deny_first(
            verdict,
            rule,
            check_snapshot_interval("spec.storage.metadataAutoSnapshotInterval", i),
        );
    }
}

/// The block size, RAM buffer and compression level under `rule` (GC-C26 on
/// v1beta2, G1-C16 on v1beta1).
pub fn check_blocks(rule: &'static str, blocks: Option<&BlockConfig>, verdict: &mut Verdict) {
    deny_first(
        verdict,
        rule,
        check_positive("spec.blocks.size", blocks.and_then(|b| b.size.as_ref())),
    );
    deny_first(
        verdict,
        rule,
        check_positive(
            "spec.blocks.ramBufferMax",
            blocks.and_then(|b| b.ram_buffer_max.as_ref()),
        ),
    );
    if let Some(l) = blocks.and_then(|b| b.compression_level.as_deref()) {
        deny_first(
            verdict,
            rule,
            check_compression_level("spec.blocks.compressionLevel", l),
        );
    }
}

/// GC-W12..GC-W14: RPC address hygiene warnings.
pub fn warnings(spec: &GarageClusterSpec, verdict: &mut Verdict) {
    let shape = Shape::of(spec);
    let blank = |s: Option<&String>| s.is_none_or(|s| s.is_empty());
    let net_addr = spec
        .network
        .as_ref()
        .and_then(|n| n.rpc_public_addr.as_ref());
    if shape.is_edge_gateway()
        && blank(
            spec.gateway
                .as_ref()
                .and_then(|g| g.rpc_public_addr.as_ref()),
        )
        && blank(net_addr)
        && spec.public_endpoint.is_none()
    {
        verdict.warn("GC-W12", "edge gateway has connectTo set but no externally-routable RPC address; set spec.gateway.rpcPublicAddr or spec.network.rpcPublicAddr so storage nodes can reach it");
    }
    if let (Some(_), Some(g)) = (spec.storage.as_ref(), spec.gateway.as_ref())
        && shape.gateway_replicas() > 1
        && g.rpc_public_addr
            .as_deref()
            .is_some_and(|a| !a.is_empty() && !a.contains("{ordinal}"))
    {
        verdict.warn("GC-W13", "spec.gateway.rpcPublicAddr is a single address shared by all gateway pods; include {ordinal} so each gateway advertises its own address");
    }
    if let Some(s) = spec.storage.as_ref()
        && shape.storage_replicas() > 1
        && s.rpc_public_addr
            .as_deref()
            .is_some_and(|a| !a.is_empty() && !a.contains("{ordinal}"))
    {
        verdict.warn("GC-W14", "spec.storage.rpcPublicAddr is a single address shared by all storage pods; include {ordinal} so each pod advertises its own address");
    }
}

/// GC-U10: the effective Admin API port is fixed after create.
pub fn check_admin_port(old: &GarageClusterSpec, new: &GarageClusterSpec, verdict: &mut Verdict) {
    if Shape::of(old).is_handle() && Shape::of(new).is_handle() {
        return;
    }
    let n = match admin_port(new.admin.as_ref()) {
        Ok(p) => p,
        Err(e) => {
            verdict.deny(
                "GC-U10",
                "spec.admin",
                format!("resolving new Admin API port: {e}"),
            );
            return;
        }
    };
    if let Ok(o) = admin_port(old.admin.as_ref())
        && o != n
    {
        verdict.deny("GC-U10", "spec.admin", format!("spec.admin effective TCP port is immutable after create ({o} -> {n}): every Garage process and the operator's client address it; keep the old port"));
    }
}

/// The RPC identity source of GC-U11.
pub fn rpc_source(c: &GarageCluster) -> String {
    let ns = c.metadata.namespace.as_deref().unwrap_or_default();
    let name = c.metadata.name.as_deref().unwrap_or_default();
    let secret = |s: &k8s_openapi::api::core::v1::SecretKeySelector| {
        let key = if s.key.is_empty() {
            "rpc-secret"
        } else {
            s.key.as_str()
        };
        format!("secret:{ns}/{}:{key}", s.name)
    };
    let ct = c.spec.connect_to.as_ref();
    if let Some(s) = c
        .spec
        .network
        .as_ref()
        .and_then(|n| n.rpc_secret_ref.as_ref())
    {
        secret(s)
    } else if let Some(s) = ct.and_then(|c| c.rpc_secret_ref.as_ref()) {
        secret(s)
    } else if let Some(r) = ct.and_then(|c| c.cluster_ref.as_ref()) {
        format!(
            "cluster:{}/{}",
            r.namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or(ns),
            r.name
        )
    } else if Shape::of(&c.spec).is_handle() {
        String::new()
    } else {
        format!("secret:{ns}/{name}-rpc-secret:rpc-secret")
    }
}

fn has_legacy_rpc_env(spec: &GarageClusterSpec) -> bool {
    let envs = spec
        .storage
        .as_ref()
        .and_then(|s| s.env.as_ref())
        .into_iter()
        .chain(spec.gateway.as_ref().and_then(|g| g.env.as_ref()));
    let mut rpc = false;
    for e in envs.flatten() {
        if e.name == "GARAGE_RPC_SECRET" {
            rpc = true;
        } else if RESERVED_ENV.contains(&e.name.as_str()) {
            return false;
        }
    }
    let unsafe_from = spec
        .storage
        .as_ref()
        .and_then(|s| s.env_from.as_ref())
        .into_iter()
        .chain(spec.gateway.as_ref().and_then(|g| g.env_from.as_ref()))
        .flatten()
        .any(|f| {
            RESERVED_ENV
                .iter()
                .any(|n| n.starts_with(f.prefix.as_deref().unwrap_or_default()))
        });
    rpc && !unsafe_from
}

/// GC-U11: the RPC identity source never changes, except a handle's first
/// attach and the explicit legacy `GARAGE_RPC_SECRET` migration staging.
pub fn check_rpc_identity(old: &GarageCluster, new: &GarageCluster, verdict: &mut Verdict) {
    let (o, n) = (rpc_source(old), rpc_source(new));
    if o == n
        || (o.is_empty() && Shape::of(&old.spec).is_handle() && Shape::of(&new.spec).is_handle())
    {
        return;
    }
    let staged = new
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANNOTATION_MIGRATE_LEGACY_RPC_SECRET))
        .is_some_and(|v| v == "true")
        && new
            .spec
            .network
            .as_ref()
            .is_some_and(|n| n.rpc_secret_ref.is_some())
        && has_legacy_rpc_env(&old.spec)
        && has_legacy_rpc_env(&new.spec)
        && {
            let mut probe = old.spec.clone();
            let r = new
                .spec
                .network
                .as_ref()
                .and_then(|n| n.rpc_secret_ref.clone());
            probe
                .network
                .get_or_insert_with(Default::default)
                .rpc_secret_ref = r;
            probe == new.spec
        };
    if staged {
        verdict.warn("GC-W27", "spec.network.rpcSecretRef is changing only as part of the explicit released GARAGE_RPC_SECRET migration; the controller will keep every managed workload frozen until it proves the referenced Secret has the exact active credential bytes");
        return;
    }
    verdict.deny("GC-U11", "spec.network.rpcSecretRef", format!("RPC identity source is immutable after create ({o:?} -> {n:?}): Garage has no dual-secret bridge, so nodes with different secrets cannot talk; keep the original Secret reference"));
}
