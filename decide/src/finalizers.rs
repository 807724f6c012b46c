//! Finalizer lists: whether an object carries one, and the list with one added or removed.
//! The reconciler writes the list as a merge patch guarded by the object's resourceVersion.

use kube::{Resource, ResourceExt};

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
