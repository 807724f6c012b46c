//! Which GarageCluster a reference of a GarageBucket, GarageKey or GarageAdminToken leads to:
//! a reference without a namespace stays in its object's own. Reaching the cluster (the grant
//! a cross-namespace reference needs, the cluster object, an Admin API client) is the
//! reconciler's observe.

use shared_types::garage_key::GarageKey;

/// The namespace a reference from an object in `from_ns` points into.
pub fn target_namespace<'a>(from_ns: &'a str, namespace: Option<&'a str>) -> &'a str {
    namespace.filter(|n| !n.is_empty()).unwrap_or(from_ns)
}

/// True when `key`'s cluster reference leads to GarageCluster `ns`/`name`.
pub fn leads_to(key: &GarageKey, ns: &str, name: &str) -> bool {
    let from = key.metadata.namespace.as_deref().unwrap_or_default();
    key.spec.cluster_ref.name == name
        && target_namespace(from, key.spec.cluster_ref.namespace.as_deref()) == ns
}
