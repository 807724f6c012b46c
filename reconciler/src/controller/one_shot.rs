//! The end of a one-shot request annotation: once the request ran, its annotations are
//! removed with a JSON patch that first tests each value the pass read, so a value the user
//! changed meanwhile is a new request and stays.

use std::fmt::Debug;

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{Context, Error};

/// Removes `annotations` (key and the value read) from `object` if every one still holds its
/// value; nothing when one changed or the object is gone.
pub async fn remove_request<K>(
    api: &Api<K>,
    object: &K,
    annotations: &[(String, String)],
    ctx: &Context,
) -> Result<(), Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    if annotations.is_empty() {
        return Ok(());
    }
    let mut ops = Vec::new();
    for (key, value) in annotations {
        let path = format!(
            "/metadata/annotations/{}",
            key.replace('~', "~0").replace('/', "~1")
        );
        ops.push(json!({"op": "test", "path": path, "value": value}));
        ops.push(json!({"op": "remove", "path": path}));
    }
    let patch: json_patch::Patch = serde_json::from_value(serde_json::Value::Array(ops))
        .map_err(|e| Error::Encoding(format!("the annotation removal: {e}")))?;
    ctx.metrics.wrote();
    match api
        .patch(
            &object.name_any(),
            &PatchParams::default(),
            &Patch::Json::<()>(patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        // Changed or removed meanwhile: a new request, or nothing left to remove.
        Err(kube::Error::Api(e)) if e.code == 422 || e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
