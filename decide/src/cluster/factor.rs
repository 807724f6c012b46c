//! A change of `spec.replication.factor` on a running cluster is refused, not rolled out.
//!
//! Garage keeps the replication factor in its layout and refuses to start a node whose
//! garage.toml names another one: rolling a new factor one pod at a time would take each
//! replaced pod down for good. Changing it needs a migration of the whole layout (the
//! `purge-cluster-layout` request), which this version does not run; until the spec names the
//! factor the pods run with again, the cluster pass renders and changes nothing.

use k8s_openapi::api::core::v1::PodSpec;
use kube::ResourceExt;

use super::observed::{GarageView, Observed};
use crate::desired::DesiredError;
use crate::desired::config::CONFIG_KEY;

/// The replication factor in a garage.toml.
fn factor_in(toml: &str) -> Option<u32> {
    toml.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "replication_factor")
            .then(|| v.trim().parse().ok())
            .flatten()
    })
}

/// The config revision a pod (or a workload's pod template) mounts.
fn config_of(spec: Option<&PodSpec>) -> Option<&str> {
    spec?
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == "config")?
        .config_map
        .as_ref()
        .map(|c| c.name.as_str())
}

/// The factors the cluster's pods run with, read from the config revisions they mount, and
/// those their workloads would start a pod with (all pods may be down).
fn running(o: &Observed) -> Vec<u32> {
    let specs = o
        .pods
        .iter()
        .map(|p| p.spec.as_ref())
        .chain(
            o.statefulsets
                .iter()
                .map(|w| w.spec.as_ref().and_then(|s| s.template.spec.as_ref())),
        )
        .chain(
            o.daemonsets
                .iter()
                .map(|w| w.spec.as_ref().and_then(|s| s.template.spec.as_ref())),
        );
    let mut out: Vec<u32> = specs
        .filter_map(config_of)
        .filter_map(|name| o.config_maps.iter().find(|c| c.name_any() == name))
        .filter_map(|c| factor_in(c.data.as_ref()?.get(CONFIG_KEY)?))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The refusal when the spec asks for another factor than the running pods have, once Garage
/// holds a layout (before the first layout nothing is persisted yet and the factor may
/// change). A layout that cannot be read counts as held: the safe side.
pub fn refused_change(o: &Observed, wanted: u32) -> Option<DesiredError> {
    let running = running(o);
    let other: Vec<String> = running
        .iter()
        .filter(|f| **f != wanted)
        .map(u32::to_string)
        .collect();
    if other.is_empty() {
        return None;
    }
    if let GarageView::Read(read) = &o.garage
        && read.layout.version == 0
    {
        return None;
    }
    Some(DesiredError::UnsupportedChange {
        field: "spec.replication.factor",
        message: format!(
            "the pods run with replication factor {} and the spec asks for {wanted}; Garage refuses to start a node whose factor differs from its layout's, and the migration that changes it (garage.rajsingh.info/purge-cluster-layout) is not built in this operator version. Set spec.replication.factor back to {}; nothing is rendered or changed until then",
            other.join(", "),
            other.join(", ")
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_factor_is_read_from_a_rendered_config() {
        assert_eq!(
            factor_in("metadata_dir = \"/x\"\nreplication_factor = 3\n"),
            Some(3)
        );
        assert_eq!(factor_in("replication_factor=2"), Some(2));
        assert_eq!(factor_in("db_engine = \"lmdb\"\n"), None);
        assert_eq!(factor_in("replication_factor = three\n"), None);
    }
}
