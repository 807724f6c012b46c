//! GB-OP1: a `cleanup-mpu` request the reconciler could not run, `cleanup-mpu` set to anything
//! but `true` or `cleanup-mpu-older-than` not a duration of at least a second. Only values
//! the write sets or changes are judged: a request already stored is the reconciler's to run.

use shared_types::garage_bucket::GarageBucket;
use shared_types::keys::annotation::{ANNOTATION_CLEANUP_MPU, ANNOTATION_CLEANUP_MPU_OLDER_THAN};
use shared_types::operations::parse_cleanup;

use crate::admission::Verdict;

fn annotation<'a>(b: &'a GarageBucket, key: &str) -> Option<&'a str> {
    b.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// GB-OP1 on the clean-up annotations `new` sets or changes relative to `old`.
pub fn check(old: Option<&GarageBucket>, new: &GarageBucket, verdict: &mut Verdict) {
    let keys = [ANNOTATION_CLEANUP_MPU, ANNOTATION_CLEANUP_MPU_OLDER_THAN];
    let changed = keys
        .iter()
        .any(|k| old.and_then(|o| annotation(o, k)) != annotation(new, k));
    if !changed {
        return;
    }
    let request = parse_cleanup(
        annotation(new, ANNOTATION_CLEANUP_MPU),
        annotation(new, ANNOTATION_CLEANUP_MPU_OLDER_THAN),
    );
    if let Some(Err((key, form))) = request {
        verdict.deny(
            "GB-OP1",
            format!("metadata.annotations[{key}]"),
            format!(
                "{:?} is not a value the operator can run; expected {form}",
                annotation(new, key).unwrap_or_default()
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> GarageBucket {
        let mut b: GarageBucket = serde_json::from_value(serde_json::json!({
            "apiVersion": "garage.rajsingh.info/v1beta1", "kind": "GarageBucket",
            "metadata": {"name": "b", "namespace": "ns"},
            "spec": {"clusterRef": {"name": "g"}}
        }))
        .unwrap();
        b.metadata.annotations = Some(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        b
    }

    #[test]
    fn a_cleanup_request_is_refused_unless_the_reconciler_can_run_it() {
        for (pairs, allowed) in [
            (vec![(ANNOTATION_CLEANUP_MPU, "true")], true),
            (
                vec![
                    (ANNOTATION_CLEANUP_MPU, "true"),
                    (ANNOTATION_CLEANUP_MPU_OLDER_THAN, "7d"),
                ],
                true,
            ),
            (vec![(ANNOTATION_CLEANUP_MPU, "yes")], false),
            (
                vec![
                    (ANNOTATION_CLEANUP_MPU, "true"),
                    (ANNOTATION_CLEANUP_MPU_OLDER_THAN, "a week"),
                ],
                false,
            ),
            // The age alone requests nothing, and is judged with the request.
            (vec![(ANNOTATION_CLEANUP_MPU_OLDER_THAN, "a week")], true),
        ] {
            let mut v = Verdict::new();
            check(None, &with(&pairs), &mut v);
            assert_eq!(v.allowed(), allowed, "{pairs:?}: {v:?}");
            if !allowed {
                assert!(v.broke("GB-OP1"), "{v:?}");
                assert!(v.message().contains("expected"), "{}", v.message());
            }
        }
        // A stored request is not judged again.
        let stored = with(&[(ANNOTATION_CLEANUP_MPU, "yes")]);
        let mut v = Verdict::new();
        check(Some(&stored), &stored, &mut v);
        assert!(v.allowed());
    }
}
