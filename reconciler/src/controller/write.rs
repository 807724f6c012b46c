//! Writes, each counted: create when absent, patch only when the live object does not already
//! hold what the patch writes, never touch an object another owner controls.

use std::fmt::Debug;

use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Error, Metrics};
use crate::desired::is_controlled_by;
use decide::patch_holds::first_difference;

/// What [`ensure`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The object was absent and has been created.
    Created,
    /// It differed from the desired state and has been patched.
    Patched,
    /// It already matched; nothing was written.
    Unchanged,
}

/// Creates `desired` or, when the live object does not hold what `patch(desired)` writes (the
/// rendered-hash annotation after a rendering change, or a label, annotation or field changed
/// or removed by hand; see [`decide::patch_holds`]), merge-patches it with that body. A live
/// object not controlled by `owner_uid` is an error.
///
/// A `desired` that carries a resourceVersion is an update of the object the decision read at
/// that version: the version goes into the patch as a precondition, so the API server refuses
/// it (409) if the object changed since, and an object gone since is [`Error::Stale`], never
/// created again here.
pub async fn ensure<K>(
    api: &Api<K>,
    metrics: &Metrics,
    desired: &K,
    owner_uid: &str,
    patch: impl FnOnce(&K) -> Result<serde_json::Value, Error>,
) -> Result<(Outcome, K), Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
    K::DynamicType: Default,
{
    let name = desired.name_any();
    let read_at = desired.meta().resource_version.clone();
    match api.get_opt(&name).await? {
        None if read_at.is_some() => Err(Error::Stale(format!(
            "{} {name} is gone since it was read",
            kind_of::<K>()
        ))),
        None => {
            metrics.wrote();
            let created = api.create(&PostParams::default(), desired).await?;
            tracing::info!(kind = %K::kind(&Default::default()), name, "created");
            Ok((Outcome::Created, created))
        }
        Some(live) => {
            if !is_controlled_by(&live, owner_uid) {
                return Err(Error::Foreign {
                    kind: kind_of::<K>(),
                    name,
                    owner: owner_uid.to_owned(),
                });
            }
            let mut body = patch(desired)?;
            if let (Some(version), Some(metadata)) = (read_at, body.get_mut("metadata")) {
                metadata["resourceVersion"] = serde_json::Value::String(version);
            }
            let current = serde_json::to_value(&live)
                .map_err(|e| Error::Encoding(format!("encoding {}: {e}", kind_of::<K>())))?;
            let Some(field) = first_difference(&body, &current) else {
                return Ok((Outcome::Unchanged, live));
            };
            metrics.wrote();
            let patched = api
                .patch(&name, &PatchParams::default(), &Patch::Merge(body))
                .await?;
            // The field's path only: its value may be a credential.
            tracing::info!(kind = %K::kind(&Default::default()), name, field, "updated");
            Ok((Outcome::Patched, patched))
        }
    }
}

/// Creates an immutable object when absent. A live one must be controlled by `owner_uid` and
/// satisfy `same` (its content is what the name promises); it is never changed.
pub async fn ensure_immutable<K>(
    api: &Api<K>,
    metrics: &Metrics,
    desired: &K,
    owner_uid: &str,
    same: impl FnOnce(&K) -> bool,
) -> Result<K, Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
    K::DynamicType: Default,
{
    let name = desired.name_any();
    let read_at = desired.meta().resource_version.clone();
    match api.get_opt(&name).await? {
        None if read_at.is_some() => Err(Error::Stale(format!(
            "{} {name} is gone since it was read",
            kind_of::<K>()
        ))),
        None => {
            metrics.wrote();
            match api.create(&PostParams::default(), desired).await {
                Ok(created) => {
                    tracing::info!(kind = %K::kind(&Default::default()), name, "created");
                    Ok(created)
                }
                // Another pass created it in between; check it like any live object.
                Err(kube::Error::Api(e)) if e.is_already_exists() => {
                    let live = api.get(&name).await?;
                    check_immutable(live, owner_uid, same)
                }
                Err(e) => Err(e.into()),
            }
        }
        Some(live) => check_immutable(live, owner_uid, same),
    }
}

fn check_immutable<K: Resource>(
    live: K,
    owner_uid: &str,
    same: impl FnOnce(&K) -> bool,
) -> Result<K, Error>
where
    K::DynamicType: Default,
{
    if !is_controlled_by(&live, owner_uid) {
        return Err(Error::Foreign {
            kind: kind_of::<K>(),
            name: live.meta().name.clone().unwrap_or_default(),
            owner: owner_uid.to_owned(),
        });
    }
    if !same(&live) {
        return Err(Error::ContentMismatch {
            kind: kind_of::<K>(),
            name: live.meta().name.clone().unwrap_or_default(),
        });
    }
    Ok(live)
}

/// Deletes `name` with `params`, counting the write. An object already gone is what the
/// caller wanted: it is success, reported as `false`; `true` when this call deleted it.
pub async fn delete_if_present<K>(
    api: &Api<K>,
    metrics: &Metrics,
    name: &str,
    params: &DeleteParams,
) -> Result<bool, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    metrics.wrote();
    match api.delete(name, params).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Deletes the object `name` when it exists and the owner with `uid` controls it: what a
/// switch turned off leaves (a disruption budget no longer asked for). Another's object of
/// that name is left alone. True when a delete was sent.
pub async fn remove_controlled<K>(
    api: &Api<K>,
    metrics: &Metrics,
    name: &str,
    uid: &str,
) -> Result<bool, Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let Some(live) = api.get_opt(name).await? else {
        return Ok(false);
    };
    if !crate::desired::is_controlled_by(&live, uid) || live.meta().deletion_timestamp.is_some() {
        return Ok(false);
    }
    let params = DeleteParams {
        preconditions: live.meta().uid.clone().map(|u| kube::api::Preconditions {
            uid: Some(u),
            resource_version: None,
        }),
        ..DeleteParams::background()
    };
    tracing::info!(name, "deleting an object no longer asked for");
    delete_if_present(api, metrics, name, &params).await
}

/// Merge-patches the status subresource.
pub async fn patch_status<K>(
    api: &Api<K>,
    metrics: &Metrics,
    name: &str,
    status: serde_json::Value,
) -> Result<(), Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    metrics.wrote();
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "status": status })),
    )
    .await?;
    Ok(())
}

fn kind_of<K: Resource>() -> &'static str
where
    K::DynamicType: Default,
{
    // Kinds are static for the typed resources used here; leaking one short string per kind
    // name is avoided by matching the known ones.
    match K::kind(&Default::default()).as_ref() {
        "Service" => "Service",
        "ConfigMap" => "ConfigMap",
        "Secret" => "Secret",
        "StatefulSet" => "StatefulSet",
        "PodDisruptionBudget" => "PodDisruptionBudget",
        "NetworkPolicy" => "NetworkPolicy",
        "GarageNode" => "GarageNode",
        _ => "object",
    }
}

/// The merge patch of a StatefulSet: claim templates and the selector are immutable, so only
/// its labels, annotations, replicas, pod template, update strategy and claim retention may
/// change. Without a spec the patch would null the live one's fields: an error, never a
/// write.
pub fn statefulset_patch(
    d: &k8s_openapi::api::apps::v1::StatefulSet,
) -> Result<serde_json::Value, Error> {
    let spec = d
        .spec
        .as_ref()
        .ok_or_else(|| Error::Encoding("the StatefulSet to patch has no spec".into()))?;
    Ok(serde_json::json!({
        "metadata": { "annotations": d.metadata.annotations, "labels": d.metadata.labels },
        "spec": {
            "replicas": spec.replicas,
            "template": &spec.template,
            "updateStrategy": spec.update_strategy.as_ref(),
            "persistentVolumeClaimRetentionPolicy": spec.persistent_volume_claim_retention_policy.as_ref(),
        }
    }))
}

/// The merge patch that converges labels, annotations and the whole spec of an object. An
/// object that cannot be encoded, or has no spec, is an error: a `null` spec in a merge patch
/// would delete the live one.
pub fn metadata_and_spec<K: Serialize + Resource>(desired: &K) -> Result<serde_json::Value, Error>
where
    K::DynamicType: Default,
{
    let value = serde_json::to_value(desired)
        .map_err(|e| Error::Encoding(format!("encoding {}: {e}", kind_of::<K>())))?;
    let spec = value
        .get("spec")
        .filter(|s| !s.is_null())
        .cloned()
        .ok_or_else(|| Error::Encoding(format!("{} to patch has no spec", kind_of::<K>())))?;
    Ok(serde_json::json!({
        "metadata": {
            "labels": desired.meta().labels,
            "annotations": desired.meta().annotations,
        },
        "spec": spec,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use k8s_openapi::api::core::v1::{ConfigMap, Service};

    use super::*;

    #[test]
    fn the_patch_carries_labels_annotations_and_the_whole_spec() {
        let svc: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "s", "labels": {"a": "1"}, "annotations": {"b": "2"}},
            "spec": {"ports": [{"port": 3900}]},
        }))
        .unwrap();
        let patch = metadata_and_spec(&svc).unwrap();
        assert_eq!(patch["metadata"]["labels"]["a"], "1");
        assert_eq!(patch["metadata"]["annotations"]["b"], "2");
        assert_eq!(patch["spec"]["ports"][0]["port"], 3900);
    }

    #[test]
    fn a_label_or_annotation_changed_by_hand_is_drift_and_one_added_is_not() {
        let svc = |labels: serde_json::Value, annotations: serde_json::Value| -> Service {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "s", "labels": labels, "annotations": annotations},
                "spec": {"ports": [{"port": 3900}]},
            }))
            .unwrap()
        };
        let desired = svc(
            serde_json::json!({"a": "1", "b": "2"}),
            serde_json::json!({"h": "x"}),
        );
        let table = [
            (
                "as rendered",
                serde_json::json!({"a": "1", "b": "2"}),
                serde_json::json!({"h": "x"}),
                true,
            ),
            (
                "a label added by someone else",
                serde_json::json!({"a": "1", "b": "2", "c": "3"}),
                serde_json::json!({"h": "x", "k": "v"}),
                true,
            ),
            (
                "a label removed",
                serde_json::json!({"a": "1"}),
                serde_json::json!({"h": "x"}),
                false,
            ),
            (
                "a label changed",
                serde_json::json!({"a": "1", "b": "9"}),
                serde_json::json!({"h": "x"}),
                false,
            ),
            (
                "an annotation changed",
                serde_json::json!({"a": "1", "b": "2"}),
                serde_json::json!({"h": "y"}),
                false,
            ),
            (
                "no labels at all",
                serde_json::Value::Null,
                serde_json::json!({"h": "x"}),
                false,
            ),
        ];
        for (case, labels, annotations, holds) in table {
            let live = svc(labels, annotations);
            let live = serde_json::to_value(&live).unwrap();
            let found = first_difference(&metadata_and_spec(&desired).unwrap(), &live);
            assert_eq!(found.is_none(), holds, "{case}: {found:?}");
        }
    }

    #[test]
    fn an_object_without_a_spec_is_an_error_not_a_null_spec() {
        let svc: Service =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "s"}})).unwrap();
        assert!(matches!(metadata_and_spec(&svc), Err(Error::Encoding(_))));
        // A kind that has no spec at all is refused the same way.
        let cm = ConfigMap::default();
        assert!(matches!(metadata_and_spec(&cm), Err(Error::Encoding(_))));
    }
}
