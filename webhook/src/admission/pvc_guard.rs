//! The PersistentVolumeClaim finalizer guard (`PVC-*`).
//!
//! The reservation finalizer is on every claim a live Garage member mounts:
//! the reconciler sets it and releases it only after a proven drain or when
//! the whole store is destroyed, so a deleted claim stays (terminating, its
//! volume intact) meanwhile. The storage-rollout finalizers are the Go
//! operator's per-rollout barrier; this reconciler does not set them (its
//! rollout records the claim UIDs instead), but claims of a cluster taken
//! over from the Go operator may still carry them. Anyone may add finalizers
//! or edit a claim; only the controller's own ServiceAccount may remove these
//! barriers.

use super::{Operation, Verdict};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use shared_types::keys::finalizer::{FINALIZER_PVC_RESERVATION, FINALIZER_STORAGE_ROLLOUT_PREFIX};

/// Hex digits in a storage-rollout finalizer token.
const ROLLOUT_TOKEN_LEN: usize = 16;

/// Status message of an allowed request that removed no barrier (PVC-4).
pub const ALLOWED_NOT_REMOVED: &str = "managed PVC replacement barrier was not removed";
/// Status message of an allowed removal by the controller (PVC-5).
pub const ALLOWED_CONTROLLER_REMOVED: &str =
    "controller service account removed managed PVC replacement barrier";

/// PVC-3: whether `finalizer` is one the guard protects.
pub fn is_protected(finalizer: &str) -> bool {
    if finalizer == FINALIZER_PVC_RESERVATION {
        return true;
    }
    finalizer
        .strip_prefix(FINALIZER_STORAGE_ROLLOUT_PREFIX)
        .is_some_and(|token| {
            token.len() == ROLLOUT_TOKEN_LEN
                && token
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
}

/// PVC-1 (resource part): the webhook serves only `persistentvolumeclaims`
/// in core/v1 without a subresource. The adapter calls this with the
/// AdmissionRequest's resource before decoding.
pub fn check_target(group: &str, version: &str, resource: &str, subresource: &str) -> Verdict {
    let mut verdict = Verdict::new();
    if !(group.is_empty()
        && version == "v1"
        && resource == "persistentvolumeclaims"
        && subresource.is_empty())
    {
        verdict.deny(
            "PVC-1",
            "request.resource",
            format!("managed PVC finalizer webhook accepts only core/v1 PersistentVolumeClaim UPDATE requests, got {group}/{version} {resource}{}{subresource}; fix the webhook configuration's rules", if subresource.is_empty() { "" } else { "/" }),
        );
    }
    verdict
}

fn finalizers(pvc: &PersistentVolumeClaim) -> &[String] {
    pvc.metadata.finalizers.as_deref().unwrap_or_default()
}

/// Guards protected finalizer removal on a PVC UPDATE. `username` is the
/// requester's `userInfo.username`; `controller_username` is
/// `system:serviceaccount:<namespace>:<serviceaccount>` of the reconciler.
pub fn guard_pvc_finalizers(
    operation: Operation,
    old: Option<&PersistentVolumeClaim>,
    new: Option<&PersistentVolumeClaim>,
    username: &str,
    controller_username: &str,
) -> Verdict {
    let mut verdict = Verdict::new();
    if operation != Operation::Update {
        verdict.deny(
            "PVC-1",
            "request.operation",
            format!("managed PVC finalizer webhook accepts only core/v1 PersistentVolumeClaim UPDATE requests, got {operation:?}; fix the webhook configuration's operations"),
        );
        return verdict;
    }
    let (Some(old), Some(new)) = (old, new) else {
        verdict.deny(
            "PVC-2",
            "request.object",
            "the UPDATE request must carry both the old and the new PersistentVolumeClaim",
        );
        return verdict;
    };
    let kept = finalizers(new);
    let removed = finalizers(old)
        .iter()
        .find(|f| is_protected(f) && !kept.contains(f));
    let Some(removed) = removed else {
        return verdict;
    };
    // An empty configured identity must never match an anonymous requester.
    if controller_username.is_empty() || username != controller_username {
        verdict.deny(
            "PVC-5",
            "metadata.finalizers",
            format!("operator PVC identity finalizer {removed:?} may be removed only by controller service account {controller_username:?}; let the operator finish its replacement transaction instead of removing the barrier by hand"),
        );
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CONTROLLER: &str = "system:serviceaccount:garage-operator:garage-reconciler";
    const TENANT: &str = "alice";
    const ROLLOUT: &str = "garage.rajsingh.info/storage-rollout-0123456789abcdef";

    fn pvc(finalizers: &[&str], labels: serde_json::Value) -> PersistentVolumeClaim {
        serde_json::from_value(json!({
            "metadata": {"name": "data-n-0", "namespace": "garage", "finalizers": finalizers, "labels": labels},
            "spec": {}
        }))
        .unwrap()
    }

    fn update(old: &[&str], new: &[&str], user: &str) -> Verdict {
        guard_pvc_finalizers(
            Operation::Update,
            Some(&pvc(old, json!({}))),
            Some(&pvc(new, json!({}))),
            user,
            CONTROLLER,
        )
    }

    #[test]
    fn table() {
        struct Case {
            name: &'static str,
            old: &'static [&'static str],
            new: &'static [&'static str],
            user: &'static str,
            rule: Option<&'static str>,
        }
        let cases = [
            Case {
                name: "tenant removes pvc-reservation",
                old: &[FINALIZER_PVC_RESERVATION],
                new: &[],
                user: TENANT,
                rule: Some("PVC-5"),
            },
            Case {
                name: "tenant removes storage-rollout token",
                old: &[ROLLOUT],
                new: &[],
                user: TENANT,
                rule: Some("PVC-5"),
            },
            Case {
                name: "controller removes pvc-reservation",
                old: &[FINALIZER_PVC_RESERVATION],
                new: &[],
                user: CONTROLLER,
                rule: None,
            },
            Case {
                name: "controller removes rollout token",
                old: &[ROLLOUT, "kubernetes.io/pvc-protection"],
                new: &["kubernetes.io/pvc-protection"],
                user: CONTROLLER,
                rule: None,
            },
            Case {
                name: "tenant adds a finalizer",
                old: &[],
                new: &[FINALIZER_PVC_RESERVATION],
                user: TENANT,
                rule: None,
            },
            Case {
                name: "tenant removes an unprotected finalizer",
                old: &["kubernetes.io/pvc-protection", FINALIZER_PVC_RESERVATION],
                new: &[FINALIZER_PVC_RESERVATION],
                user: TENANT,
                rule: None,
            },
            Case {
                name: "upper-case token is not protected",
                old: &["garage.rajsingh.info/storage-rollout-0123456789ABCDEF"],
                new: &[],
                user: TENANT,
                rule: None,
            },
            Case {
                name: "short token is not protected",
                old: &["garage.rajsingh.info/storage-rollout-0123"],
                new: &[],
                user: TENANT,
                rule: None,
            },
            Case {
                name: "reordering keeps the barrier",
                old: &[ROLLOUT, FINALIZER_PVC_RESERVATION],
                new: &[FINALIZER_PVC_RESERVATION, ROLLOUT],
                user: TENANT,
                rule: None,
            },
            Case {
                name: "another service account is a tenant",
                old: &[FINALIZER_PVC_RESERVATION],
                new: &[],
                user: "system:serviceaccount:garage-operator:garage-webhook",
                rule: Some("PVC-5"),
            },
        ];
        for case in cases {
            let verdict = update(case.old, case.new, case.user);
            match case.rule {
                Some(rule) => assert!(verdict.broke(rule), "{}: {verdict:?}", case.name),
                None => assert!(verdict.allowed(), "{}: {verdict:?}", case.name),
            }
        }
    }

    #[test]
    fn the_denial_names_the_finalizer_and_the_service_account() {
        let verdict = update(&[ROLLOUT], &[], TENANT);
        assert!(verdict.message().contains(ROLLOUT));
        assert!(
            verdict
                .message()
                .contains("may be removed only by controller service account")
        );
        assert!(verdict.message().contains(CONTROLLER));
    }

    #[test]
    fn tenant_label_change_is_allowed() {
        let verdict = guard_pvc_finalizers(
            Operation::Update,
            Some(&pvc(&[FINALIZER_PVC_RESERVATION], json!({}))),
            Some(&pvc(
                &[FINALIZER_PVC_RESERVATION],
                json!({"team": "storage"}),
            )),
            TENANT,
            CONTROLLER,
        );
        assert!(verdict.allowed());
    }

    #[test]
    fn only_updates_are_accepted() {
        let claim = pvc(&[], json!({}));
        for op in [Operation::Create, Operation::Delete] {
            let verdict =
                guard_pvc_finalizers(op, Some(&claim), Some(&claim), CONTROLLER, CONTROLLER);
            assert!(verdict.broke("PVC-1"), "{op:?}");
        }
    }

    #[test]
    fn missing_objects_are_refused() {
        let claim = pvc(&[], json!({}));
        assert!(
            guard_pvc_finalizers(Operation::Update, None, Some(&claim), TENANT, CONTROLLER)
                .broke("PVC-2")
        );
    }

    #[test]
    fn an_unconfigured_controller_identity_matches_nobody() {
        let verdict = guard_pvc_finalizers(
            Operation::Update,
            Some(&pvc(&[FINALIZER_PVC_RESERVATION], json!({}))),
            Some(&pvc(&[], json!({}))),
            "",
            "",
        );
        assert!(verdict.broke("PVC-5"));
    }

    #[test]
    fn the_target_must_be_core_v1_claims() {
        assert!(check_target("", "v1", "persistentvolumeclaims", "").allowed());
        assert!(check_target("", "v1", "persistentvolumeclaims", "status").broke("PVC-1"));
        assert!(check_target("", "v1", "pods", "").broke("PVC-1"));
        assert!(check_target("apps", "v1", "persistentvolumeclaims", "").broke("PVC-1"));
    }
}
