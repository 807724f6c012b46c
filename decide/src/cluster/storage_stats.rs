//! `status.storageStats`: the data filesystems Garage reports for its nodes, summed, as the
//! Go operator reports them: the total, what is free, and the difference as used. Dashboards
//! written for the Go operator read these three figures.
//!
//! Free space moves with every object written, so the figures would change on nearly every
//! pass, and every status write wakes the controllers for one more pass. The recorded figures
//! are kept while the total and the used space have each moved by less than one percent of
//! the total. The total moves too on some file systems (a ZFS dataset's size is its use plus
//! the pool's free space), so an exact comparison of it would rewrite the status on every
//! write anywhere on the pool. The partition counts of the same object are never written by the Go operator either;
//! `status.health` carries Garage's own partition figures.

use garage_api_types::ClusterStatus;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use shared_types::garage_cluster::common::StorageStats;
use shared_types::quantity::QuantityValue;

/// The figures to publish, from what Garage reports (`status`) and what is recorded
/// (`current`). With no data filesystem reported (no node answers with one yet) the record
/// stays as it is.
pub fn stats(current: Option<&StorageStats>, status: &ClusterStatus) -> Option<StorageStats> {
    let (total, available) = status
        .nodes
        .iter()
        .filter_map(|n| n.data_partition.as_ref())
        .fold((0u64, 0u64), |(t, a), p| {
            (t.saturating_add(p.total), a.saturating_add(p.available))
        });
    if total == 0 {
        return current.cloned();
    }
    let used = total.saturating_sub(available);
    if let Some(recorded) = current
        && let (Some(t), Some(u)) = (
            bytes(recorded.total_capacity.as_ref()),
            bytes(recorded.used_capacity.as_ref()),
        )
        && t.abs_diff(total).saturating_mul(100) < total
        && u.abs_diff(used).saturating_mul(100) < total
    {
        return Some(recorded.clone());
    }
    Some(StorageStats {
        total_capacity: Some(binary(total)),
        used_capacity: Some(binary(used)),
        available_capacity: Some(binary(total - used)),
        ..StorageStats::default()
    })
}

/// A recorded figure in bytes; `None` when absent or not a whole number of bytes.
fn bytes(q: Option<&Quantity>) -> Option<u64> {
    let value = QuantityValue::try_from(q?).ok()?.value()?;
    u64::try_from(value).ok()
}

/// `bytes` as Kubernetes writes a binary quantity: the largest binary suffix that keeps the
/// number whole, or plain bytes.
fn binary(bytes: u64) -> Quantity {
    const SUFFIXES: [(&str, u32); 6] = [
        ("Ei", 60),
        ("Pi", 50),
        ("Ti", 40),
        ("Gi", 30),
        ("Mi", 20),
        ("Ki", 10),
    ];
    let text = SUFFIXES
        .iter()
        .find(|(_, shift)| bytes != 0 && bytes.trailing_zeros() >= *shift)
        .map_or_else(
            || bytes.to_string(),
            |(suffix, shift)| format!("{}{suffix}", bytes >> shift),
        );
    Quantity(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const GI: u64 = 1 << 30;

    fn status(partitions: &[Option<(u64, u64)>]) -> ClusterStatus {
        let nodes: Vec<_> = partitions
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let mut node = json!({"id": format!("{i:064x}"), "isUp": true, "draining": false});
                if let Some((available, total)) = p {
                    node["dataPartition"] = json!({"available": available, "total": total});
                }
                node
            })
            .collect();
        serde_json::from_value(json!({"layoutVersion": 1, "nodes": nodes})).unwrap()
    }

    fn figures(s: &StorageStats) -> (String, String, String) {
        let text = |q: &Option<Quantity>| q.as_ref().map(|q| q.0.clone()).unwrap_or_default();
        (
            text(&s.total_capacity),
            text(&s.used_capacity),
            text(&s.available_capacity),
        )
    }

    #[test]
    fn the_data_filesystems_of_every_node_are_summed() {
        let read = status(&[Some((GI, 2 * GI)), Some((GI / 2, 2 * GI)), None]);
        let got = stats(None, &read).unwrap();
        assert_eq!(
            figures(&got),
            ("4Gi".into(), "2560Mi".into(), "1536Mi".into())
        );
        assert_eq!(got.total_partitions, None);
        assert_eq!(got.healthy_partitions, None);
    }

    #[test]
    fn nothing_reported_keeps_the_record() {
        let recorded = stats(None, &status(&[Some((GI, 2 * GI))])).unwrap();
        assert_eq!(
            stats(Some(&recorded), &status(&[None, None])),
            Some(recorded)
        );
        assert_eq!(stats(None, &status(&[])), None);
    }

    #[test]
    fn the_record_stays_while_use_moves_by_less_than_a_percent() {
        let total = 100 * GI;
        let recorded = stats(None, &status(&[Some((60 * GI, total))])).unwrap();
        // 0.9% more in use: the same figures, no write.
        let a_little = status(&[Some((60 * GI - 9 * GI / 10, total))]);
        assert_eq!(stats(Some(&recorded), &a_little), Some(recorded.clone()));
        // A whole percent: written again.
        let a_percent = status(&[Some((59 * GI, total))]);
        assert_eq!(
            figures(&stats(Some(&recorded), &a_percent).unwrap()),
            ("100Gi".into(), "41Gi".into(), "59Gi".into())
        );
        // A new total of a percent or more (a disk added) is written.
        let grown = status(&[Some((60 * GI, total)), Some((2 * GI, 2 * GI))]);
        assert_eq!(figures(&stats(Some(&recorded), &grown).unwrap()).0, "102Gi");
        // A total that wanders by less (a ZFS dataset whose pool is written to elsewhere)
        // keeps the record.
        let wandered = status(&[Some((60 * GI - (300 << 20), total - (300 << 20)))]);
        assert_eq!(stats(Some(&recorded), &wandered), Some(recorded.clone()));
    }

    #[test]
    fn quantities_read_as_kubernetes_writes_them() {
        for (bytes, text) in [
            (0, "0"),
            (1, "1"),
            (1536, "1536"),
            (3 << 10, "3Ki"),
            (5 << 30, "5Gi"),
            ((5 << 30) + 1, "5368709121"),
            (1 << 60, "1Ei"),
        ] {
            assert_eq!(binary(bytes).0, text, "{bytes}");
            assert_eq!(super::bytes(Some(&binary(bytes))), Some(bytes), "{text}");
        }
    }
}
