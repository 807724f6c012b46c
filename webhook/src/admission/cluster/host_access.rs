//! HA rules on a GarageCluster: its pools' HostPaths and every Garage container security
//! context it sets (storage tier, gateway tier, each pool's pod template).

use k8s_openapi::api::core::v1::SecurityContext;
use shared_types::garage_cluster::v1beta2::{GarageCluster, GarageClusterSpec};

use super::node_local_pools::host_paths;
use super::tiers::Shape;
use crate::admission::host_access::{check_container, check_host_paths};
use crate::admission::{Context, Verdict};

fn all_host_paths(spec: Option<&GarageClusterSpec>) -> Vec<(String, String)> {
    spec.map(|s| Shape::of(s).pools())
        .unwrap_or_default()
        .iter()
        .enumerate()
        .flat_map(|(i, p)| host_paths(i, p))
        .collect()
}

/// Every container security context of the spec, by field path; pool entries are keyed by
/// pool name so a reordered list is not read as a change.
fn containers(spec: &GarageClusterSpec) -> Vec<(String, String, Option<&SecurityContext>)> {
    let mut out = Vec::new();
    if let Some(s) = spec.storage.as_ref() {
        out.push((
            "spec.storage.containerSecurityContext".to_owned(),
            "storage".to_owned(),
            s.container_security_context.as_ref(),
        ));
        for (i, p) in s.node_local_pools.iter().flatten().enumerate() {
            out.push((
                format!("spec.storage.nodeLocalPools[{i}].podTemplate.containerSecurityContext"),
                format!("pool/{}", p.name),
                p.pod_template
                    .as_ref()
                    .and_then(|t| t.container_security_context.as_ref()),
            ));
        }
    }
    if let Some(g) = spec.gateway.as_ref() {
        out.push((
            "spec.gateway.containerSecurityContext".to_owned(),
            "gateway".to_owned(),
            g.container_security_context.as_ref(),
        ));
    }
    out
}

/// HA-PATH and HA-PRIV for a created (`old` is `None`) or updated GarageCluster.
pub fn check(
    new: &GarageCluster,
    old: Option<&GarageClusterSpec>,
    ctx: &Context,
    verdict: &mut Verdict,
) {
    let policy = &ctx.host_access;
    check_host_paths(
        policy,
        &all_host_paths(Some(&new.spec)),
        &all_host_paths(old),
        verdict,
    );
    let before = old.map(containers).unwrap_or_default();
    for (field, key, sc) in containers(&new.spec) {
        let was = before
            .iter()
            .find(|(_, k, _)| *k == key)
            .and_then(|(_, _, sc)| *sc);
        check_container(policy, &field, sc, was, verdict);
    }
}
