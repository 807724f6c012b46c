//! What the status says of Garage's layout: its history (at most 64 versions, newest first),
//! the version and role count staged for the next apply, and how many nodes still move data
//! off an older version. Each is a copy of what Garage reported in the pass, so a converged
//! cluster publishes the same values pass after pass.

use garage_api_types::LayoutVersionStatus;
use shared_types::garage_cluster::common::{LayoutHistoryStatus, LayoutVersionSummary};
use shared_types::garage_cluster::v1beta2::GarageClusterStatus;

use super::observed::GarageRead;

/// The most history entries status keeps (the CRD's bound).
pub const MAX_VERSIONS: usize = 64;

fn count(n: impl TryInto<i64>) -> Option<i64> {
    n.try_into().ok()
}

/// Fills the layout fields of `status` from `read`.
pub fn fill(status: &mut GarageClusterStatus, read: &GarageRead) {
    let h = &read.history;
    let mut versions: Vec<LayoutVersionSummary> = h
        .versions
        .iter()
        .map(|v| LayoutVersionSummary {
            version: count(v.version),
            status: Some(
                match &v.status {
                    LayoutVersionStatus::Current => "Current",
                    LayoutVersionStatus::Draining => "Draining",
                    LayoutVersionStatus::Historical => "Historical",
                    LayoutVersionStatus::Other(s) => s.as_str(),
                }
                .to_owned(),
            ),
            storage_nodes: count(v.storage_nodes),
            gateway_nodes: count(v.gateway_nodes),
        })
        .collect();
    versions.sort_by_key(|v| std::cmp::Reverse(v.version));
    versions.truncate(MAX_VERSIONS);
    status.layout_history = Some(LayoutHistoryStatus {
        current_version: count(h.current_version),
        min_ack: count(h.min_ack),
        versions: Some(versions),
    });
    let staged = read.layout.has_staged_changes();
    status.staged_layout_version = staged.then(|| count(read.layout.version + 1)).flatten();
    status.staged_roles = staged
        .then(|| i32::try_from(read.layout.staged_role_changes.len()).ok())
        .flatten();
    status.draining_nodes = count(read.status.nodes.iter().filter(|n| n.draining).count());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{layout, settled, status};

    fn read(history: garage_api_types::LayoutHistory, staged: &[serde_json::Value]) -> GarageRead {
        GarageRead {
            status: status(3, &[]),
            layout: layout(3, &[], staged),
            history,
            health: None,
            every_view_healthy: true,
            build: None,
            worker_variables: Default::default(),
        }
    }

    #[test]
    fn the_history_is_newest_first_and_bounded_and_staging_is_reported() {
        let mut many: garage_api_types::LayoutHistory = settled(100);
        many.versions = (1..=100)
            .map(|v| {
                serde_json::from_value(serde_json::json!({
                    "version": v, "status": if v == 100 { "Current" } else { "Historical" },
                    "storageNodes": 3, "gatewayNodes": 0
                }))
                .unwrap()
            })
            .collect();
        let mut s = GarageClusterStatus::default();
        fill(&mut s, &read(many, &[]));
        let h = s.layout_history.unwrap();
        let versions = h.versions.unwrap();
        assert_eq!(versions.len(), MAX_VERSIONS);
        assert_eq!(versions[0].version, Some(100));
        assert_eq!(versions[0].status.as_deref(), Some("Current"));
        assert_eq!(h.current_version, Some(100));
        assert_eq!((s.staged_layout_version, s.staged_roles), (None, None));
        assert_eq!(s.draining_nodes, Some(0));

        let id = crate::fixtures::id(7);
        let staged =
            [serde_json::json!({"id": id.as_str(), "zone": "z", "capacity": 1, "tags": []})];
        let mut s = GarageClusterStatus::default();
        fill(&mut s, &read(settled(3), &staged));
        assert_eq!(
            (s.staged_layout_version, s.staged_roles),
            (Some(4), Some(1))
        );
    }
}
