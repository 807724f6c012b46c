//! Whether a grant lets one cross-namespace reference in. The webhook and the reconciler both
//! ask this, at admission and again at every reconcile, so the two cannot disagree.

use std::collections::BTreeMap;

use super::{GarageReferenceGrant, GrantFromKind, GrantToKind};

/// One reference from an object in one namespace to an object in the grant's namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reference<'a> {
    /// Kind of the referring object.
    pub from_kind: GrantFromKind,
    /// Namespace of the referring object.
    pub from_namespace: &'a str,
    /// Kind of the referenced object.
    pub to_kind: GrantToKind,
    /// Name of the referenced object.
    pub to_name: &'a str,
}

impl GarageReferenceGrant {
    /// True when this grant admits `reference`. `from_labels` are the labels of the referring
    /// namespace, `None` when they could not be read: a selector entry then admits nothing.
    ///
    /// A grant without `to` opens GarageClusters and GarageBuckets only; keys must be named
    /// explicitly. GarageAdminTokens never cross namespaces, whatever a grant says.
    pub fn permits(
        &self,
        reference: &Reference<'_>,
        from_labels: Option<&BTreeMap<String, String>>,
    ) -> bool {
        if reference.from_kind == GrantFromKind::GarageAdminToken {
            return false;
        }
        let from_ok = self.spec.from.iter().any(|f| {
            if f.kind != Some(reference.from_kind) {
                return false;
            }
            match (&f.namespace, &f.namespace_selector) {
                (Some(ns), None) => ns == reference.from_namespace,
                (None, Some(selector)) => {
                    from_labels.is_some_and(|labels| crate::selector::matches(selector, labels))
                }
                // Schema and admission refuse both and neither; admit nothing if one slips by.
                _ => false,
            }
        });
        let to_ok = match &self.spec.to {
            None => matches!(
                reference.to_kind,
                GrantToKind::GarageCluster | GrantToKind::GarageBucket
            ),
            Some(to) => to.iter().any(|t| {
                t.kind == Some(reference.to_kind)
                    && t.name.as_deref().is_none_or(|n| n == reference.to_name)
            }),
        };
        from_ok && to_ok
    }

    /// True when some entry of `from` needs the referring namespace's labels.
    pub fn reads_namespace_labels(&self) -> bool {
        self.spec
            .from
            .iter()
            .any(|f| f.namespace_selector.is_some())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn grant(v: serde_json::Value) -> GarageReferenceGrant {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "garage.rajsingh.info/v1beta1",
            "kind": "GarageReferenceGrant",
            "metadata": {"name": "g", "namespace": "storage"},
            "spec": v,
        }))
        .unwrap()
    }

    fn key_to(kind: GrantToKind, name: &str) -> Reference<'_> {
        Reference {
            from_kind: GrantFromKind::GarageKey,
            from_namespace: "apps",
            to_kind: kind,
            to_name: name,
        }
    }

    #[test]
    fn an_exact_namespace_admits_clusters_and_buckets_but_not_keys_without_to() {
        let g = grant(serde_json::json!({"from": [{"kind": "GarageKey", "namespace": "apps"}]}));
        assert!(g.permits(&key_to(GrantToKind::GarageCluster, "garage"), None));
        assert!(g.permits(&key_to(GrantToKind::GarageBucket, "b"), None));
        assert!(!g.permits(&key_to(GrantToKind::GarageKey, "k"), None));
        let other = Reference {
            from_namespace: "elsewhere",
            ..key_to(GrantToKind::GarageCluster, "garage")
        };
        assert!(!g.permits(&other, None));
    }

    #[test]
    fn the_kind_of_the_referrer_must_match() {
        let g = grant(serde_json::json!({"from": [{"kind": "GarageBucket", "namespace": "apps"}]}));
        assert!(!g.permits(&key_to(GrantToKind::GarageCluster, "garage"), None));
    }

    #[test]
    fn named_targets_admit_only_that_name() {
        let g = grant(serde_json::json!({
            "from": [{"kind": "GarageKey", "namespace": "apps"}],
            "to": [{"kind": "GarageBucket", "name": "shared"}, {"kind": "GarageKey"}],
        }));
        assert!(g.permits(&key_to(GrantToKind::GarageBucket, "shared"), None));
        assert!(!g.permits(&key_to(GrantToKind::GarageBucket, "private"), None));
        assert!(g.permits(&key_to(GrantToKind::GarageKey, "any"), None));
        assert!(!g.permits(&key_to(GrantToKind::GarageCluster, "garage"), None));
    }

    #[test]
    fn a_selector_reads_the_namespace_labels_and_fails_closed_without_them() {
        let g = grant(serde_json::json!({
            "from": [{"kind": "GarageKey", "namespaceSelector": {"matchLabels": {"team": "a"}}}],
        }));
        let team_a = BTreeMap::from([("team".to_owned(), "a".to_owned())]);
        let team_b = BTreeMap::from([("team".to_owned(), "b".to_owned())]);
        assert!(g.reads_namespace_labels());
        assert!(g.permits(&key_to(GrantToKind::GarageCluster, "c"), Some(&team_a)));
        assert!(!g.permits(&key_to(GrantToKind::GarageCluster, "c"), Some(&team_b)));
        assert!(!g.permits(&key_to(GrantToKind::GarageCluster, "c"), None));
        let everyone = grant(serde_json::json!({
            "from": [{"kind": "GarageKey", "namespaceSelector": {}}],
        }));
        assert!(everyone.permits(&key_to(GrantToKind::GarageCluster, "c"), Some(&team_b)));
    }

    #[test]
    fn admin_tokens_never_cross_namespaces() {
        let g =
            grant(serde_json::json!({"from": [{"kind": "GarageAdminToken", "namespace": "apps"}]}));
        let r = Reference {
            from_kind: GrantFromKind::GarageAdminToken,
            ..key_to(GrantToKind::GarageCluster, "garage")
        };
        assert!(!g.permits(&r, None));
    }
}
