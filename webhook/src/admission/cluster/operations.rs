//! GC-OP1: a one-shot operational annotation (`trigger-snapshot`, `trigger-repair`,
//! `scrub-command`, `revert-layout`, `retry-block-resync`, `purge-blocks`, `connect-nodes`)
//! set to a value the reconciler could not run; GC-W22: a `purge-blocks` request, which deletes
//! objects for good. Only a value the write sets or changes is judged: one already stored is
//! the reconciler's to run or remove.

use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation::ANNOTATION_PURGE_BLOCKS;
use shared_types::operations::{self, Request};

use super::immutability::set_or_changed;
use crate::admission::Verdict;

/// GC-OP1 and GC-W22 on the annotations `new` sets or changes relative to `old`.
pub fn check(old: Option<&GarageCluster>, new: &GarageCluster, verdict: &mut Verdict) {
    for key in operations::ORDER {
        let Some(value) = set_or_changed(old, new, key) else {
            continue;
        };
        match operations::parse_request(key, value) {
            Some(Err(form)) => verdict.deny(
                "GC-OP1",
                format!("metadata.annotations[{key}]"),
                format!("{value:?} is not a value the operator can run; expected {form}"),
            ),
            Some(Ok(Request::PurgeBlocks(hashes))) if *key == ANNOTATION_PURGE_BLOCKS => {
                verdict.warn("GC-W22", format!(
                    "{ANNOTATION_PURGE_BLOCKS} permanently deletes every object that references the {} listed block(s), on every node; this cannot be undone",
                    hashes.len()
                ));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared_types::keys::annotation::ANNOTATION_TRIGGER_REPAIR;

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

    #[test]
    fn a_malformed_request_is_refused_with_its_form_and_a_purge_warned_about() {
        let mut v = Verdict::new();
        check(None, &with(&[(ANNOTATION_TRIGGER_REPAIR, "Scrub")]), &mut v);
        assert!(v.broke("GC-OP1"), "{v:?}");
        assert!(v.message().contains("Tables"), "{}", v.message());

        let hash = "ab".repeat(32);
        let mut v = Verdict::new();
        check(None, &with(&[(ANNOTATION_PURGE_BLOCKS, &hash)]), &mut v);
        assert!(v.allowed(), "{v:?}");
        assert!(
            v.warnings()
                .iter()
                .any(|w| w.contains("cannot be undone") && w.ends_with("[GC-W22]")),
            "{v:?}"
        );

        // A value already stored is not judged again.
        let stored = with(&[(ANNOTATION_TRIGGER_REPAIR, "Scrub")]);
        let mut v = Verdict::new();
        check(Some(&stored), &stored, &mut v);
        assert!(v.allowed());
    }
}
