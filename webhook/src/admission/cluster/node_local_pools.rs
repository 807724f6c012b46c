//! Node-local pool shape (GC-C20, GC-C21) and the pool checks that read other objects:
//! HostPaths exclusive across pools and GarageClusters (GC-NLP-OVERLAP) and
//! the release limits (GC-NLP-LIMIT: 32 pools and 32 data paths,
//! GC-NLP-NODES: 255 selected Nodes, GC-NLP-ROLES: 256 positive-capacity
//! roles).

use std::collections::BTreeSet;
use std::net::IpAddr;

use shared_types::garage_cluster::common::LayoutPolicy;
use shared_types::garage_cluster::v1beta2::{
    GarageCluster, GarageClusterSpec, NodeLocalPoolSpec, RPC_TEMPLATE_NODE_NAME,
};
use shared_types::garage_node::NodeBacking;
use shared_types::keys::generated::GENERATED_KEY_PREFIX;
use shared_types::keys::label::LABEL_STORAGE_GROUP;

use super::tiers::Shape;
use crate::admission::shared::labels::{check_pod_labels, check_pool_pod_annotations};
use crate::admission::shared::names::{is_dns1123_label, is_dns1123_subdomain};
use crate::admission::shared::paths::{check_container_path, check_host_path, clean, overlaps};
use crate::admission::shared::quantity::{format_bytes, milli_value};
use crate::admission::shared::selector::{conversion_error, is_empty, keys, matches};
use crate::admission::shared::{deny_all, deny_first};
use crate::admission::{Context, Verdict};

/// Most pools in one GarageCluster (CRD maxItems, repeated here).
pub const MAX_POOLS: usize = 32;
/// Most data paths in one pool (CRD maxItems, repeated here).
pub const MAX_DATA_PATHS: usize = 32;
/// Most Kubernetes Nodes all pools of one cluster may select.
pub const MAX_SELECTED_NODES: usize = 255;
/// Garage's hard limit of positive-capacity roles in one layout.
pub const MAX_ROLES: usize = 256;

/// Field prefix of pool `i`.
pub fn pool_field(i: usize) -> String {
    format!("spec.storage.nodeLocalPools[{i}]")
}

/// The cleaned HostPaths of a pool with their field paths (metadata first).
pub fn host_paths(i: usize, pool: &NodeLocalPoolSpec) -> Vec<(String, String)> {
    let f = pool_field(i);
    let mut out = vec![(
        format!("{f}.metadata.hostPath"),
        pool.metadata.host_path.clone(),
    )];
    if let Some(d) = pool.data.as_ref() {
        out.push((format!("{f}.data.hostPath"), d.host_path.clone()));
    }
    for (j, d) in pool.data_paths.iter().flatten().enumerate() {
        out.push((format!("{f}.dataPaths[{j}].hostPath"), d.host_path.clone()));
    }
    out.into_iter()
        .filter(|(_, p)| p.starts_with('/'))
        .map(|(f, p)| (f, clean(&p)))
        .collect()
}

fn check_rpc_template(field: &str, template: &str) -> Option<String> {
    if !template.contains(RPC_TEMPLATE_NODE_NAME) {
        return Some(format!(
            "{template:?} must contain {{nodeName}} so every Kubernetes Node gets its own RPC address"
        ));
    }
    let resolved = template.replace("{nodeName}", "node");
    let Some((host, port)) = resolved.rsplit_once(':') else {
        return Some(format!(
            "{template:?} must be host:port, e.g. \"{{nodeName}}.storage.example.net:3901\""
        ));
    };
    let host_ok = !host.is_empty()
        && (host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok()
            || is_dns1123_subdomain(host.strip_suffix('.').unwrap_or(host)));
    if !host_ok {
        return Some(format!(
            "{template:?} host must be an IP address or DNS name ({field})"
        ));
    }
    match port.parse::<u32>() {
        Ok(p) if (1..=65535).contains(&p) => None,
        _ => Some(format!("{template:?} port must be between 1 and 65535")),
    }
}

fn check_pool(
    i: usize,
    pool: &NodeLocalPoolSpec,
    seen: &mut BTreeSet<String>,
    verdict: &mut Verdict,
) {
    let f = pool_field(i);
    let r = "GC-C21";
    if pool.name.is_empty() {
        verdict.deny(
            r,
            format!("{f}.name"),
            "required: give the pool a DNS-1123 label name",
        );
    } else if !is_dns1123_label(&pool.name) {
        verdict.deny(r, format!("{f}.name"), format!("{:?} must be a DNS-1123 label (lower-case letters, digits, '-', at most 63 characters)", pool.name));
    } else if !seen.insert(pool.name.clone()) {
        verdict.deny(
            r,
            format!("{f}.name"),
            format!(
                "duplicate pool name {:?}; every pool needs its own name",
                pool.name
            ),
        );
    }
    match pool.capacity.as_ref().map(milli_value) {
        None => verdict.deny(r, format!("{f}.capacity"), "capacity: required; set the layout capacity each selected Node contributes, e.g. 700Gi"),
        Some(Some(v)) if v >= 1024 * 1000 => {}
        Some(_) => verdict.deny(r, format!("{f}.capacity"), "capacity: must be at least 1Ki"),
    }
    match pool.selector.as_ref() {
        s if is_empty(s) => verdict.deny(r, format!("{f}.selector"), "a non-empty desired-membership selector is required: label the pool's Nodes with a dedicated label and select it"),
        Some(s) => {
            if let Some(e) = conversion_error(s) {
                verdict.deny(r, format!("{f}.selector"), format!("invalid label selector: {e}"));
            }
            if let Some(k) = keys(s).find(|k| k.starts_with(GENERATED_KEY_PREFIX)) {
                verdict.deny(r, format!("{f}.selector"), format!("key {k:?} is reserved for the operator's drain-safe activation labels; select on your own Node label"));
            }
        }
        None => {}
    }
    let required_affinity = pool
        .pod_template
        .as_ref()
        .and_then(|t| t.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .is_some_and(|n| {
            n.required_during_scheduling_ignored_during_execution
                .is_some()
        });
    if required_affinity {
        verdict.deny(r, format!("{f}.podTemplate.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"), "selector is the durable membership boundary and node affinity may only express preferences; move the requirement into the pool selector");
    }
    deny_first(
        verdict,
        r,
        check_host_path(&format!("{f}.metadata.hostPath"), &pool.metadata.host_path),
    );
    let has_paths = pool.data_paths.as_ref().is_some_and(|d| !d.is_empty());
    if pool.data.is_some() == has_paths {
        verdict.deny(r, f.clone(), "exactly one of data or dataPaths must be set");
    }
    if let Some(d) = pool.data.as_ref() {
        deny_first(
            verdict,
            r,
            check_host_path(&format!("{f}.data.hostPath"), &d.host_path),
        );
    }
    if has_paths {
        check_data_paths(i, pool, verdict);
    }
    let paths = host_paths(i, pool);
    for (a, (fa, pa)) in paths.iter().enumerate() {
        if let Some((fb, pb)) = paths[..a].iter().find(|(_, pb)| overlaps(pa, pb)) {
            verdict.deny(
                r,
                fa.clone(),
                format!("{pb} ({fb}) and {pa} must be distinct, non-overlapping directories"),
            );
        }
    }
    if let Some(t) = pool
        .network
        .as_ref()
        .and_then(|n| n.rpc_public_addr_template.as_deref())
        .filter(|t| !t.is_empty())
    {
        let field = format!("{f}.network.rpcPublicAddrTemplate");
        if let Some(msg) = check_rpc_template(&field, t) {
            verdict.deny(r, field, msg);
        }
    }
    if let Some(t) = pool.pod_template.as_ref() {
        deny_all(
            verdict,
            r,
            check_pod_labels(&format!("{f}.podTemplate.podLabels"), t.pod_labels.as_ref()),
        );
        deny_all(
            verdict,
            r,
            check_pool_pod_annotations(
                &format!("{f}.podTemplate.podAnnotations"),
                t.pod_annotations.as_ref(),
            ),
        );
    }
}

fn check_data_paths(i: usize, pool: &NodeLocalPoolSpec, verdict: &mut Verdict) {
    let f = pool_field(i);
    let r = "GC-C21";
    let paths = pool.data_paths.as_deref().unwrap_or_default();
    if paths.len() > MAX_DATA_PATHS {
        verdict.deny("GC-NLP-LIMIT", format!("{f}.dataPaths"), format!("at most {MAX_DATA_PATHS} data paths are supported per pool; split the disks over several pools"));
    }
    let mut writable_total: i128 = 0;
    let mut writable = 0;
    for (j, d) in paths.iter().enumerate() {
        let df = format!("{f}.dataPaths[{j}]");
        deny_first(
            verdict,
            r,
            check_container_path(&format!("{df}.path"), &d.path),
        );
        deny_first(
            verdict,
            r,
            check_host_path(&format!("{df}.hostPath"), &d.host_path),
        );
        let read_only = d.read_only == Some(true);
        match (read_only, d.capacity.as_ref().map(milli_value)) {
            (true, Some(_)) => verdict.deny(r, format!("{df}.capacity"), "capacity: must be omitted when readOnly is true (a read-only migration path receives no new blocks)"),
            (false, Some(Some(v))) if v > 0 => {
                writable += 1;
                writable_total += v;
            }
            (false, _) => verdict.deny(r, format!("{df}.capacity"), "a positive capacity is required unless readOnly is true"),
            (true, None) => {}
        }
        if let Some(k) = paths[..j].iter().position(|o| overlaps(&o.path, &d.path)) {
            verdict.deny(r, format!("{df}.path"), format!("{:?} overlaps dataPaths[{k}].path {:?}; container paths must be distinct, non-overlapping directories", d.path, paths[k].path));
        }
    }
    if writable == 0 {
        verdict.deny(
            r,
            format!("{f}.dataPaths"),
            "at least one writable path with positive capacity is required",
        );
    } else if let Some(Some(cap)) = pool.capacity.as_ref().map(milli_value)
        && cap > writable_total
    {
        verdict.deny(r, format!("{f}.capacity"), format!("capacity: {} exceeds the combined writable dataPaths capacity {}; lower the pool capacity or add disks", format_bytes(cap), format_bytes(writable_total)));
    }
}

/// GC-C20 and GC-C21 (create-time shape of the pools).
pub fn check_shape(spec: &GarageClusterSpec, verdict: &mut Verdict) {
    let shape = Shape::of(spec);
    let pools = shape.pools();
    if pools.is_empty() {
        return;
    }
    let token = spec
        .admin
        .as_ref()
        .and_then(|a| a.admin_token_secret_ref.as_ref());
    if token.is_none_or(|t| t.name.trim().is_empty()) {
        verdict.deny("GC-C20", "spec.admin.adminTokenSecretRef", "spec.admin.adminTokenSecretRef: required with storage.nodeLocalPools because pool drains and activation use the Admin API; create the Secret and reference it");
    }
    if spec.zone_from.is_some() && shape.federated() {
        verdict.deny("GC-C20", "spec.zoneFrom", "spec.zoneFrom: not supported with node-local pools in a federated GarageCluster because remoteClusters[].zone identifies one physical site; use a static spec.zone");
    }
    if pools.len() > MAX_POOLS {
        verdict.deny(
            "GC-NLP-LIMIT",
            "spec.storage.nodeLocalPools",
            format!("at most {MAX_POOLS} node-local pools are supported per GarageCluster"),
        );
    }
    let mut seen = BTreeSet::new();
    for (i, pool) in pools.iter().enumerate() {
        check_pool(i, pool, &mut seen, verdict);
    }
    if spec.public_endpoint.is_some() && shape.storage_replicas() == 0 {
        if shape.storage_policy() != LayoutPolicy::Manual {
            verdict.deny("GC-C20", "spec.publicEndpoint", "spec.publicEndpoint cannot target a node-local-pool-only storage tier: its Service selects only the default storage group; use nodeLocalPools[].network.rpcPublicAddrTemplate or spec.network.rpcPublicAddrSubnet");
        } else {
            verdict.warn("GC-W11", "spec.publicEndpoint selects only Manual/default-storage GarageNodes and never node-local-pool pods; give each pool identity a direct address with rpcPublicAddrTemplate");
        }
    }
}

fn old_paths(old: Option<&GarageClusterSpec>) -> BTreeSet<(String, String)> {
    old.map(|o| Shape::of(o).pools())
        .unwrap_or_default()
        .iter()
        .enumerate()
        .flat_map(|(i, p)| {
            host_paths(i, p)
                .into_iter()
                .map(|(_, path)| (p.name.clone(), path))
        })
        .collect()
}

/// GC-NLP-OVERLAP: a HostPath may back one pool only, across every pool of
/// this and every other GarageCluster in any namespace. On
/// UPDATE a path the same pool already had is not re-judged, so a legacy
/// overlap does not strand unrelated edits.
pub fn check_exclusive_paths(
    this: &GarageCluster,
    old: Option<&GarageClusterSpec>,
    ctx: &Context,
    verdict: &mut Verdict,
) {
    let pools = Shape::of(&this.spec).pools();
    let before = old_paths(old);
    let is_new = |pool: &str, path: &str| !before.contains(&(pool.to_string(), path.to_string()));
    let all: Vec<(usize, &NodeLocalPoolSpec, String, String)> = pools
        .iter()
        .enumerate()
        .flat_map(|(i, p)| {
            host_paths(i, p)
                .into_iter()
                .map(move |(f, path)| (i, p, f, path))
        })
        .collect();
    for (a, (ia, pa, fa, path_a)) in all.iter().enumerate() {
        for (ib, pb, fb, path_b) in &all[..a] {
            if ia != ib
                && overlaps(path_a, path_b)
                && (is_new(&pa.name, path_a) || is_new(&pb.name, path_b))
            {
                verdict.deny("GC-NLP-OVERLAP", fa.clone(), format!("HostPath {path_a} overlaps {path_b} of pool {:?} ({fb}); HostPaths must be exclusive to one pool, so use a distinct directory", pb.name));
            }
        }
    }
    let (ns, name) = (
        this.metadata.namespace.as_deref().unwrap_or_default(),
        this.metadata.name.as_deref().unwrap_or_default(),
    );
    for other in &ctx.garage_clusters {
        let (ons, oname) = (
            other.metadata.namespace.as_deref().unwrap_or_default(),
            other.metadata.name.as_deref().unwrap_or_default(),
        );
        if ons == ns && oname == name {
            continue;
        }
        for (oi, op) in Shape::of(&other.spec).pools().iter().enumerate() {
            for (_, opath) in host_paths(oi, op) {
                for (_, p, f, path) in &all {
                    if is_new(&p.name, path) && overlaps(path, &opath) {
                        verdict.deny(
                            "GC-NLP-OVERLAP",
                            f.clone(),
                            overlap_message(path, &opath, &op.name, (ns, ons, oname)),
                        );
                    }
                }
            }
        }
    }
}

/// The refusal of `path`, which overlaps `other` of pool `pool` in GarageCluster
/// `other_ns/other_name`. Within one namespace it names them; across namespaces it says only
/// what kind of conflict it is and how a cluster administrator finds the other side, since
/// the requester may not be allowed to see another namespace's objects or Node paths.
fn overlap_message(
    path: &str,
    other: &str,
    pool: &str,
    (ns, other_ns, other_name): (&str, &str, &str),
) -> String {
    if ns == other_ns {
        return format!(
            "HostPath {path} overlaps {other} of node-local pool {pool:?} in GarageCluster {other_ns}/{other_name}; HostPaths must be exclusive to one Garage workload across every namespace, so use a distinct directory"
        );
    }
    format!(
        "HostPath {path} overlaps a HostPath of a node-local pool of a GarageCluster in another namespace; HostPaths must be exclusive to one Garage workload across every namespace, so use a distinct directory. A cluster administrator finds the other pool with `kubectl get garageclusters -A -o yaml` (its nodeLocalPools hostPath contains {path} or lies under it)"
    )
}

fn selected_nodes(spec: &GarageClusterSpec, ctx: &Context) -> usize {
    let pools = Shape::of(spec).pools();
    ctx.nodes
        .iter()
        .filter(|n| {
            let labels = n.metadata.labels.clone().unwrap_or_default();
            pools
                .iter()
                .any(|p| p.selector.as_ref().is_some_and(|s| matches(s, &labels)))
        })
        .count()
}

fn manual_storage_roles(this: &GarageCluster, ctx: &Context) -> usize {
    let (ns, name) = (
        this.metadata.namespace.as_deref().unwrap_or_default(),
        this.metadata.name.as_deref().unwrap_or_default(),
    );
    ctx.garage_nodes
        .iter()
        .filter(|n| {
            let node_ns = n.metadata.namespace.as_deref().unwrap_or_default();
            let target_ns = n
                .spec
                .cluster_ref
                .namespace
                .as_deref()
                .filter(|s| !s.is_empty())
                .unwrap_or(node_ns);
            let generated = n
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(LABEL_STORAGE_GROUP));
            target_ns == ns
                && n.spec.cluster_ref.name == name
                && n.spec.gateway != Some(true)
                && n.spec.backing != Some(NodeBacking::NodeLocalPool)
                && !generated
        })
        .count()
}

/// GC-NLP-NODES and GC-NLP-ROLES: the selected-Node and role limits, judged
/// against the Nodes and GarageNodes in the snapshot. Only growth past a
/// limit is refused, so an existing oversized layout stays drainable.
pub fn check_limits(
    this: &GarageCluster,
    old: Option<&GarageClusterSpec>,
    ctx: &Context,
    verdict: &mut Verdict,
) {
    let spec = &this.spec;
    if !Shape::of(spec).has_pools() {
        return;
    }
    let now = selected_nodes(spec, ctx);
    let before = old.map_or(0, |o| selected_nodes(o, ctx));
    if now > MAX_SELECTED_NODES && now > before {
        verdict.deny("GC-NLP-NODES", "spec.storage.nodeLocalPools", format!("the pool selectors select {now} Kubernetes Nodes; at most {MAX_SELECTED_NODES} are supported across all pools of one GarageCluster, so narrow the selectors"));
    }
    let default_roles = |s: &GarageClusterSpec| {
        let sh = Shape::of(s);
        if sh.managed_default_pool() {
            usize::try_from(sh.storage_replicas()).unwrap_or(0)
        } else {
            0
        }
    };
    let manual = manual_storage_roles(this, ctx);
    let roles_now = now + default_roles(spec) + manual;
    let roles_before = old.map_or(0, |o| before + default_roles(o) + manual);
    if roles_now > MAX_ROLES && roles_now > roles_before {
        verdict.deny("GC-NLP-ROLES", "spec.storage.nodeLocalPools", format!("this change would need {roles_now} positive-capacity Garage roles (pool Nodes, default-group replicas and Manual GarageNodes); Garage supports at most {MAX_ROLES}, so drain members before adding"));
    }
}
