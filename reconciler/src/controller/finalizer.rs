//! Adding and removing this operator's finalizer. Both are merge patches carrying the
//! `resourceVersion` they were computed from, so a concurrent change of the finalizer list
//! (another controller's finalizer, a user edit) is never overwritten: the API server answers
//! 409 and the next pass recomputes.

use std::fmt::Debug;

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::{Error, Metrics};

// The finalizer lists are decided without I/O; the writes are here.
pub use decide::finalizers::{has, updated};

/// Makes `finalizer` present or absent on `object`; no write when it already is.
pub async fn set<K>(
    api: &Api<K>,
    metrics: &Metrics,
    object: &K,
    finalizer: &str,
    present: bool,
) -> Result<(), Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let Some(list) = updated(object.finalizers(), finalizer, present) else {
        return Ok(());
    };
    metrics.wrote();
    let patch = serde_json::json!({
        "metadata": {
            "resourceVersion": object.resource_version(),
            "finalizers": list,
        }
    });
    match api
        .patch(
            &object.name_any(),
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        // Removing from an object that is already gone is done.
        Err(kube::Error::Api(e)) if e.code == 404 && !present => Ok(()),
        Err(e) => Err(e.into()),
    }
}
