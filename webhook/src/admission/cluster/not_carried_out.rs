//! GC-NC1: a request annotation of the Go operator that nothing here carries out, set or
//! changed by this write. Admitting it would tell the user yes and then do nothing; the denial
//! says what to do instead. A value already stored (a cluster taken over with one) is left to
//! stand: only the write that sets or changes it is refused.

use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::{
    ANNOTATION_PURGE_CLUSTER_LAYOUT_ABORT, ANNOTATION_RETRY_MIGRATION,
};

use super::immutability::set_or_changed;
use crate::admission::Verdict;

/// The annotations and what the denial tells the user instead.
const NOT_CARRIED_OUT: [(&str, &str); 2] = [
    (
        ANNOTATION_RETRY_MIGRATION,
        "the move from the Go operator's cluster-wide StatefulSet to per-node workloads is the Go operator's; run it there until LegacySTSMigrated is True, then switch",
    ),
    (
        ANNOTATION_PURGE_CLUSTER_LAYOUT_ABORT,
        "no replication-factor migration runs here (a factor change is refused), so there is none to abort",
    ),
];

/// GC-NC1 on the annotations `new` sets or changes relative to `old`.
pub fn check(old: Option<&GarageCluster>, new: &GarageCluster, verdict: &mut Verdict) {
    for (key, instead) in NOT_CARRIED_OUT {
        if set_or_changed(old, new, key).is_none() {
            continue;
        }
        verdict.deny(
            "GC-NC1",
            format!("metadata.annotations[{key}]"),
            format!("{key} is not carried out by this operator: {instead}"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> GarageCluster {
        let mut c: GarageCluster = serde_json::from_value(serde_json::json!({
            "apiVersion": "garage.rajsingh.info/v1beta2", "kind": "GarageCluster",
            "metadata": {"name": "g", "namespace": "ns"}, "spec": {}
        }))
        .unwrap();
        c.metadata.annotations = Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        c
    }

    fn denied(old: Option<&GarageCluster>, new: &GarageCluster) -> Vec<String> {
        let mut verdict = Verdict::new();
        check(old, new, &mut verdict);
        verdict
            .violations
            .iter()
            .map(|v| format!("{} {}: {}", v.rule, v.field, v.message))
            .collect()
    }

    #[test]
    fn setting_or_changing_one_is_refused_and_a_stored_one_stands() {
        for key in [
            ANNOTATION_RETRY_MIGRATION,
            ANNOTATION_PURGE_CLUSTER_LAYOUT_ABORT,
        ] {
            let set = with(&[(key, "true")]);
            let got = denied(None, &set);
            assert_eq!(got.len(), 1, "{key} on create: {got:?}");
            assert!(
                got[0].starts_with(&format!(
                    "GC-NC1 metadata.annotations[{key}]: {key} is not carried out"
                )),
                "{got:?}"
            );
            assert_eq!(denied(Some(&with(&[])), &set).len(), 1, "{key} added");
            assert_eq!(
                denied(Some(&with(&[(key, "x")])), &set).len(),
                1,
                "{key} changed"
            );
            assert!(denied(Some(&set), &set).is_empty(), "{key} stored stays");
            assert!(denied(Some(&set), &with(&[])).is_empty(), "{key} removed");
        }
        assert!(denied(None, &with(&[("example.com/other", "true")])).is_empty());
    }
}
