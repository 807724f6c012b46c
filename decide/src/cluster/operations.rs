//! The one-shot operational annotations of a GarageCluster (`trigger-snapshot`,
//! `trigger-repair`, `scrub-command`, `revert-layout`, `retry-block-resync`, `purge-blocks`,
//! `connect-nodes`): the one request a pass runs, taken in a fixed order. Act runs it through
//! the Admin API, records it in `status.lastOperation` and removes the annotation; a malformed
//! value is recorded as failed and removed; a Garage failure is recorded and the annotation
//! kept, so the next pass tries again.

use shared_types::keys::annotation::ANNOTATION_REVERT_LAYOUT;
use shared_types::operations::{self, Request};

use super::observed::{GarageView, Observed};

/// The request a pass runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// Its annotation.
    pub annotation: &'static str,
    /// The value the pass read (the removal is conditioned on it).
    pub value: String,
    /// What it asks for, or the form the value must take.
    pub request: Result<Request, String>,
}

/// The request to run this pass: none while Garage cannot be asked, and `revert-layout` (with
/// those after it) held while a drain or rollout is recorded, whose layout steps it could undo.
pub fn next(o: &Observed, transaction_recorded: bool) -> Option<Pending> {
    if !matches!(o.garage, GarageView::Read(_)) {
        return None;
    }
    let annotations = o.cluster.metadata.annotations.as_ref()?;
    // One request a pass, in the fixed order.
    let (annotation, value, request) = operations::ORDER.iter().find_map(|key| {
        let value = annotations.get(*key)?;
        operations::parse_request(key, value).map(|r| (*key, value.clone(), r))
    })?;
    if annotation == ANNOTATION_REVERT_LAYOUT && transaction_recorded && request.is_ok() {
        return None;
    }
    Some(Pending {
        annotation,
        value,
        request,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use shared_types::keys::annotation::{ANNOTATION_PURGE_BLOCKS, ANNOTATION_TRIGGER_SNAPSHOT};

    fn observed(annotations: &[(&str, &str)], garage: bool) -> Observed {
        let mut c = crate::fixtures::cluster(3);
        c.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        );
        let garage = if garage {
            GarageView::Read(Box::new(super::super::observed::GarageRead {
                status: crate::fixtures::status(1, &[]),
                layout: crate::fixtures::layout(1, &[], &[]),
                history: crate::fixtures::settled(1),
                health: None,
                every_view_healthy: true,
                build: None,
                worker_variables: Default::default(),
            }))
        } else {
            GarageView::Unavailable("no pod answers".into())
        };
        crate::fixtures::observed_cluster(c, garage)
    }

    #[test]
    fn one_request_a_pass_and_a_revert_waits_for_a_transaction() {
        let o = observed(&[(ANNOTATION_TRIGGER_SNAPSHOT, "true")], true);
        assert_eq!(
            next(&o, false).map(|p| p.request),
            Some(Ok(Request::Snapshot))
        );
        let o = observed(&[(ANNOTATION_TRIGGER_SNAPSHOT, "true")], false);
        assert_eq!(next(&o, false), None, "Garage cannot be asked");
        let o = observed(&[(ANNOTATION_REVERT_LAYOUT, "true")], true);
        assert_eq!(next(&o, true), None, "held during a transaction");
        assert!(next(&o, false).is_some());
        // A malformed value is recorded and removed even during a transaction.
        let o = observed(&[(ANNOTATION_REVERT_LAYOUT, "maybe")], true);
        assert!(next(&o, true).is_some_and(|p| p.request.is_err()));
        let o = observed(&[(ANNOTATION_PURGE_BLOCKS, "zz")], true);
        let p = next(&o, false).unwrap();
        assert_eq!(
            (p.annotation, p.value.as_str()),
            (ANNOTATION_PURGE_BLOCKS, "zz")
        );
    }
}
