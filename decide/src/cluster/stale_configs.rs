//! Which config revisions (ConfigMaps) of a cluster are stale: no pod and no workload template
//! mounts them, and a node-local pool's own revisions only once its DaemonSet has rolled out
//! or the pool is gone. The decision prunes them once the storage rollout has converged.

use kube::ResourceExt;

use super::observed::Observed;
use crate::desired::Settings;

/// Config revisions of the cluster other than `current` that no pod and no StatefulSet or
/// DaemonSet template mounts. A pool's own revisions (which record its disk layout) go only
/// once its DaemonSet has fully rolled out, or once the pool, its DaemonSet and its members
/// are gone.
pub(super) fn stale_config_revisions(o: &Observed, current: &[&str], s: &Settings) -> Vec<String> {
    use k8s_openapi::api::core::v1::PodSpec;
    let mounted = |spec: Option<&PodSpec>| -> Vec<String> {
        spec.and_then(|s| s.volumes.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|v| v.config_map.as_ref().map(|c| c.name.clone()))
            .collect()
    };
    let mut used: Vec<String> = o
        .pods
        .iter()
        .flat_map(|p| mounted(p.spec.as_ref()))
        .collect();
    used.extend(
        o.statefulsets
            .iter()
            .flat_map(|s| mounted(s.spec.as_ref().and_then(|s| s.template.spec.as_ref()))),
    );
    used.extend(
        o.daemonsets
            .iter()
            .flat_map(|d| mounted(d.spec.as_ref().and_then(|s| s.template.spec.as_ref()))),
    );
    let prefix = format!("{}-", crate::names::config_base(&s.name));
    o.config_maps
        .iter()
        .filter(|c| {
            match c
                .labels()
                .get(shared_types::keys::label::LABEL_NODE_LOCAL_POOL)
            {
                Some(pool) => pool_rolled_out(o, s, pool),
                None => c.name_any().starts_with(&prefix),
            }
        })
        .map(ResourceExt::name_any)
        .filter(|n| !current.contains(&n.as_str()) && !used.contains(n))
        .collect()
}

/// True when pool `pool`'s DaemonSet has observed its current generation and every pod it
/// schedules is updated and available, or when the pool is no longer declared and neither
/// its DaemonSet nor a member is left.
fn pool_rolled_out(o: &Observed, s: &Settings, pool: &str) -> bool {
    let ds_name = crate::desired::pool::daemonset_name(&s.name, pool);
    let ds = o.daemonsets.iter().find(|d| d.name_any() == ds_name);
    if !s.pools.iter().any(|p| p.name == pool) {
        let members = o
            .pool_members
            .iter()
            .any(|gn| gn.spec.node_local_pool_name.as_deref() == Some(pool));
        return ds.is_none() && !members;
    }
    ds.filter(|d| d.metadata.deletion_timestamp.is_none())
        .and_then(|d| Some((d.metadata.generation, d.status.as_ref()?)))
        .is_some_and(|(generation, st)| {
            st.observed_generation == generation
                && st.updated_number_scheduled == Some(st.desired_number_scheduled)
                && st.number_available == Some(st.desired_number_scheduled)
        })
}
