//! Whether an update of a pool's DaemonSet keeps every disk: the live DaemonSet's disk
//! layout record must agree with what it mounts, and the desired layout must keep every disk
//! either of them shows. Checked on the live object again right before the update is written,
//! because a DaemonSet that drops a disk takes that disk's data off every member of the pool.

use k8s_openapi::api::apps::v1::DaemonSet;

use crate::desired::disk_layout;

/// The live DaemonSet's record agrees with its mounts, and the desired one's layout keeps
/// every disk both show.
pub fn layout_keeps_disks(live: &DaemonSet, desired: &DaemonSet) -> Result<(), String> {
    let to = disk_layout::recorded(desired.metadata.annotations.as_ref())
        .ok_or("the desired DaemonSet has no disk layout record")??;
    let actual = disk_layout::mounted(live)?;
    let mut from = vec![actual.clone()];
    if let Some(record) = disk_layout::recorded(live.metadata.annotations.as_ref()) {
        let record = record?;
        if !disk_layout::matches_mounts(&record, &actual) {
            return Err("its HostPath mounts differ from its recorded disk layout".into());
        }
        from.push(record);
    }
    let breaches: Vec<String> = from
        .iter()
        .flat_map(|f| disk_layout::violations("the pool", f, &to))
        .collect();
    if breaches.is_empty() {
        Ok(())
    } else {
        Err(breaches.join("; "))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use serde_json::json;
    use shared_types::garage_cluster::v1beta2::NodeLocalPoolSpec;
    use shared_types::keys::annotation::ANNOTATION_STORAGE_DISK_LAYOUT;

    use super::*;

    /// A DaemonSet mounting `/data/<d>` from `/d/<d>` for each of `disks`, recording `record`.
    fn ds(disks: &[&str], record: &[&str]) -> DaemonSet {
        let pool = |disks: &[&str]| -> NodeLocalPoolSpec {
            let paths: Vec<serde_json::Value> = disks
                .iter()
                .map(|d| json!({"path": format!("/data/{d}"), "hostPath": format!("/d/{d}"), "capacity": "1Gi"}))
                .collect();
            serde_json::from_value(
                json!({"name": "p", "metadata": {"hostPath": "/m"}, "dataPaths": paths}),
            )
            .unwrap()
        };
        let mut mounts = vec![json!({"name": "metadata", "mountPath": "/data/metadata"})];
        let mut volumes =
            vec![json!({"name": "metadata", "hostPath": {"path": "/m", "type": "Directory"}})];
        for (i, d) in disks.iter().enumerate() {
            mounts.push(json!({"name": format!("data-{i}"), "mountPath": format!("/data/{d}")}));
            volumes.push(json!({"name": format!("data-{i}"), "hostPath": {"path": format!("/d/{d}"), "type": "Directory"}}));
        }
        serde_json::from_value(json!({
            "metadata": {"name": "x", "annotations": {
                ANNOTATION_STORAGE_DISK_LAYOUT: disk_layout::of_pool(&pool(record)).to_json(),
            }},
            "spec": {"selector": {}, "template": {"spec": {
                "containers": [{"name": "garage", "volumeMounts": mounts}],
                "volumes": volumes,
            }}},
        }))
        .unwrap()
    }

    #[test]
    fn the_live_daemonset_is_checked_again_before_it_is_updated() {
        // (case, live mounts, live record, desired, allowed)
        for (name, mounts, record, desired, allowed) in [
            (
                "unchanged",
                &["a", "b"][..],
                &["a", "b"][..],
                &["a", "b"][..],
                true,
            ),
            (
                "a disk added",
                &["a", "b"],
                &["a", "b"],
                &["a", "b", "c"],
                true,
            ),
            ("a disk dropped", &["a", "b"], &["a", "b"], &["a"], false),
            (
                "a record edited since",
                &["a", "b"],
                &["a"],
                &["a", "b"],
                false,
            ),
        ] {
            let got = layout_keeps_disks(&ds(mounts, record), &ds(desired, desired));
            assert_eq!(got.is_ok(), allowed, "{name}: {got:?}");
        }
    }
}
