//! Adding and removing this operator's finalizer. Both are merge patches carrying the
//! `resourceVersion` they were computed from, so a concurrent change of the finalizer list
//! (another controller's finalizer, a user edit) is never overwritten: the API server answers
//! 409 and the next pass recomputes.

use std::fmt::Debug;

use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::{Error, Metrics};

/// True when `object` carries `finalizer`.
pub fn has<K: Resource>(object: &K, finalizer: &str) -> bool {
    object.finalizers().iter().any(|f| f == finalizer)
}

/// The finalizer list with `finalizer` added or removed; `None` when nothing changes.
pub fn updated(current: &[String], finalizer: &str, present: bool) -> Option<Vec<String>> {
    let has = current.iter().any(|f| f == finalizer);
    match (has, present) {
        (false, true) => {
            let mut list = current.to_vec();
            list.push(finalizer.to_owned());
            Some(list)
        }
        (true, false) => Some(
            current
                .iter()
                .filter(|f| *f != finalizer)
                .cloned()
                .collect(),
        ),
        _ => None,
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_change_only_when_membership_does() {
        let f = "x/finalizer";
        assert_eq!(updated(&[], f, false), None);
        assert_eq!(updated(&[], f, true), Some(vec![f.to_owned()]));
        let both = vec!["other".to_owned(), f.to_owned()];
        assert_eq!(updated(&both, f, true), None);
        assert_eq!(updated(&both, f, false), Some(vec!["other".to_owned()]));
    }
}
