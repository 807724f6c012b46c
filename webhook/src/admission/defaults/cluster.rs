//! DEF-GC2 (v1beta2) and DEF-GC1 (v1beta1) GarageCluster defaulters.
//!
//! Deliberately not defaulted: `deletionPolicy` (omission is
//! meaningful: federated clusters derive Drain and deletion needs an explicit
//! value), `storage.replicas`/`gateway.replicas` (an explicit 0 must stay),
//! ports and images.

use shared_types::garage_cluster::common::{
    ConsistencyMode, LayoutManagementConfig, LayoutPolicy, ReplicationConfig,
    UnverifiedPeersPolicy, WebApiConfig,
};
use shared_types::garage_cluster::v1beta1;
use shared_types::garage_cluster::v1beta2::{self, HostPathType};

/// Replication factor used when none (or 0) is given.
const DEFAULT_FACTOR: i64 = 3;

/// `.<name>.<namespace>.svc`: the web endpoint's root domain. The leading
/// dot is what Garage expects for a suffix match.
fn root_domain(name: Option<&str>, namespace: Option<&str>) -> String {
    format!(
        ".{}.{}.svc",
        name.unwrap_or_default(),
        namespace.unwrap_or_default()
    )
}

fn default_replication(replication: &mut Option<ReplicationConfig>) {
    let r = replication.get_or_insert_with(ReplicationConfig::default);
    if r.factor.is_none_or(|f| f == 0) {
        r.factor = Some(DEFAULT_FACTOR);
    }
    r.consistency_mode
        .get_or_insert(ConsistencyMode::Consistent);
}

fn default_layout_management(layout: &mut Option<LayoutManagementConfig>) {
    // layoutManagement and drain are not created when absent: their presence
    // is the user's choice, only an empty policy inside them is filled.
    if let Some(drain) = layout.as_mut().and_then(|l| l.drain.as_mut()) {
        drain
            .unverified_peers_policy
            .get_or_insert(UnverifiedPeersPolicy::Block);
    }
}

fn default_web_api(web: &mut Option<WebApiConfig>, domain: String) {
    let web = web.get_or_insert_with(WebApiConfig::default);
    let enabled = *web.enabled.get_or_insert(true);
    if enabled && web.root_domain.as_deref().unwrap_or_default().is_empty() {
        web.root_domain = Some(domain);
    }
}

/// DEF-GC2: the v1beta2 GarageCluster with the webhook defaults applied.
pub fn default_cluster(obj: &v1beta2::GarageCluster) -> v1beta2::GarageCluster {
    let mut out = obj.clone();
    let domain = root_domain(
        out.metadata.name.as_deref(),
        out.metadata.namespace.as_deref(),
    );
    let spec = &mut out.spec;
    spec.layout_policy.get_or_insert(LayoutPolicy::Auto);
    default_replication(&mut spec.replication);
    default_layout_management(&mut spec.layout_management);
    for pool in spec
        .storage
        .iter_mut()
        .flat_map(|s| s.node_local_pools.iter_mut().flatten())
    {
        pool.metadata
            .host_path_type
            .get_or_insert(HostPathType::Directory);
        if let Some(data) = pool.data.as_mut() {
            data.host_path_type.get_or_insert(HostPathType::Directory);
        }
        for path in pool.data_paths.iter_mut().flatten() {
            path.host_path_type.get_or_insert(HostPathType::Directory);
        }
    }
    default_web_api(&mut spec.web_api, domain);
    out
}

/// DEF-GC1: the v1beta1 GarageCluster with the webhook defaults applied
/// (DEF-GC2 without node-local pools, which v1beta1 does not have).
pub fn default_cluster_v1beta1(obj: &v1beta1::GarageCluster) -> v1beta1::GarageCluster {
    let mut out = obj.clone();
    let domain = root_domain(
        out.metadata.name.as_deref(),
        out.metadata.namespace.as_deref(),
    );
    let spec = &mut out.spec;
    spec.layout_policy.get_or_insert(LayoutPolicy::Auto);
    default_replication(&mut spec.replication);
    default_layout_management(&mut spec.layout_management);
    default_web_api(&mut spec.web_api, domain);
    out
}
