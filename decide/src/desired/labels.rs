//! The operator's label sets and the selectors built from them.

use std::collections::BTreeMap;

use shared_types::garage_node;
use shared_types::keys::label::{self, value};

/// Labels on cluster-level objects: Services, Secrets, ConfigMaps, the PDB.
pub fn cluster_labels(cluster: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (label::LABEL_APP_NAME.into(), value::APP_NAME_GARAGE.into()),
        (label::LABEL_APP_INSTANCE.into(), cluster.into()),
        (
            label::LABEL_APP_MANAGED_BY.into(),
            value::MANAGED_BY_OPERATOR.into(),
        ),
        (label::LABEL_CLUSTER.into(), cluster.into()),
    ])
}

/// Labels on an operator-generated Auto storage GarageNode.
pub fn generated_node_labels(cluster: &str, node: &str) -> BTreeMap<String, String> {
    generated_tier_node_labels(cluster, node, value::TIER_STORAGE)
}

/// Labels on an operator-generated Auto GarageNode of `tier` (storage or gateway).
pub fn generated_tier_node_labels(
    cluster: &str,
    node: &str,
    tier: &str,
) -> BTreeMap<String, String> {
    BTreeMap::from([
        (label::LABEL_CLUSTER.into(), cluster.into()),
        (label::LABEL_TIER.into(), tier.into()),
        (
            label::LABEL_APP_MANAGED_BY.into(),
            value::MANAGED_BY_GENERATED_NODE.into(),
        ),
        (label::LABEL_AUTO_NODE_SLOT.into(), node.into()),
    ])
}

/// Labels on a storage GarageNode's StatefulSet, its pod template and its claims.
pub fn storage_pod_labels(cluster: &str, node: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        (label::LABEL_APP_NAME.into(), value::APP_NAME_GARAGE.into()),
        (label::LABEL_APP_INSTANCE.into(), cluster.into()),
        (
            label::LABEL_APP_COMPONENT.into(),
            value::COMPONENT_NODE.into(),
        ),
        (
            label::LABEL_APP_MANAGED_BY.into(),
            value::MANAGED_BY_OPERATOR.into(),
        ),
        (label::LABEL_CLUSTER.into(), cluster.into()),
        (label::LABEL_TIER.into(), value::TIER_STORAGE.into()),
        (
            label::LABEL_STORAGE_GROUP.into(),
            value::STORAGE_GROUP_DEFAULT.into(),
        ),
    ]);
    labels.insert(label::LABEL_NODE.into(), node.into());
    labels
}

/// Labels on a gateway GarageNode's StatefulSet, its pod template and its claim: the storage
/// set with the gateway tier and no storage group (a gateway belongs to none).
pub fn gateway_pod_labels(cluster: &str, node: &str) -> BTreeMap<String, String> {
    let mut labels = storage_pod_labels(cluster, node);
    labels.insert(label::LABEL_TIER.into(), value::TIER_GATEWAY.into());
    labels.remove(label::LABEL_STORAGE_GROUP);
    labels
}

/// Labels on the pods of `node`, by its tier.
pub fn node_pod_labels(cluster: &str, node: &garage_node::GarageNode) -> BTreeMap<String, String> {
    let name = node.metadata.name.as_deref().unwrap_or_default();
    if node.spec.gateway == Some(true) {
        gateway_pod_labels(cluster, name)
    } else {
        storage_pod_labels(cluster, name)
    }
}

/// Selector of the gateway tier: the gateway API Service and the gateway PDB.
pub fn gateway_selector(cluster: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (label::LABEL_APP_NAME.into(), value::APP_NAME_GARAGE.into()),
        (label::LABEL_APP_INSTANCE.into(), cluster.into()),
        (label::LABEL_TIER.into(), value::TIER_GATEWAY.into()),
    ])
}

/// Selector of a GarageNode StatefulSet (immutable once created).
pub fn node_selector(node: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            label::LABEL_APP_MANAGED_BY.into(),
            value::MANAGED_BY_OPERATOR.into(),
        ),
        (label::LABEL_NODE.into(), node.into()),
    ])
}

/// Selector of the storage PDB (kept from the Go operator for in-place upgrades).
pub fn storage_pdb_selector(cluster: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (label::LABEL_APP_NAME.into(), value::APP_NAME_GARAGE.into()),
        (label::LABEL_APP_INSTANCE.into(), cluster.into()),
        (label::LABEL_TIER.into(), value::TIER_STORAGE.into()),
    ])
}

/// Selector of the primary API Service: the storage tier of the cluster.
pub fn api_selector(cluster: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (label::LABEL_CLUSTER.into(), cluster.into()),
        (label::LABEL_TIER.into(), value::TIER_STORAGE.into()),
    ])
}

/// Selector of the headless RPC Service: every pod of the cluster.
pub fn headless_selector(cluster: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(label::LABEL_CLUSTER.into(), cluster.into())])
}

/// `k=v,k=v` form of a selector, for list calls.
pub fn selector_string(selector: &BTreeMap<String, String>) -> String {
    selector
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subset(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> bool {
        a.iter().all(|(k, v)| b.get(k) == Some(v))
    }

    #[test]
    fn pods_match_every_selector_that_targets_them() {
        let pod = storage_pod_labels("g", "g-storage-0");
        for selector in [
            node_selector("g-storage-0"),
            storage_pdb_selector("g"),
            api_selector("g"),
            headless_selector("g"),
        ] {
            assert!(subset(&selector, &pod), "{selector:?} misses the pod");
        }
        assert!(!subset(&node_selector("g-storage-1"), &pod));
        assert!(!subset(&gateway_selector("g"), &pod));
    }

    #[test]
    fn gateway_pods_match_the_gateway_tier_only() {
        let pod = gateway_pod_labels("g", "g-gateway-0");
        for selector in [
            node_selector("g-gateway-0"),
            gateway_selector("g"),
            headless_selector("g"),
        ] {
            assert!(subset(&selector, &pod), "{selector:?} misses the pod");
        }
        for selector in [storage_pdb_selector("g"), api_selector("g")] {
            assert!(!subset(&selector, &pod), "{selector:?} takes a gateway");
        }
    }

    #[test]
    fn generated_nodes_carry_the_distinct_managed_by_value() {
        let l = generated_node_labels("g", "g-storage-0");
        assert_eq!(l[label::LABEL_APP_MANAGED_BY], "operator");
        assert_eq!(
            selector_string(&headless_selector("g")),
            "garage.rajsingh.info/cluster=g"
        );
    }
}
