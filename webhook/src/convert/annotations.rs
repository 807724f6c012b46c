//! The reserved annotations that carry v1beta2-only data through a v1beta1 view, and the
//! 256 KiB budget those annotations must fit in (CONV-9).
//!
//! v1beta1 cannot express a unified gateway tier, edge-gateway settings such as `env`, or
//! node-local pools. Conversion to v1beta1 serialises them into payload annotations and lists
//! what it wrote in a marker annotation; conversion back restores them and removes every trace,
//! so a v1beta2 object never carries these keys.

use std::collections::BTreeMap;

use serde::Serialize;
use shared_types::garage_cluster::v1beta2;

use super::ConvertError;

pub use shared_types::keys::annotation::ANNOTATION_V1BETA2_GATEWAY_TIER;
pub use shared_types::keys::annotation::ANNOTATION_V1BETA2_NODE_LOCAL_POOLS;
pub use shared_types::keys::annotation::ANNOTATION_V1BETA2_ONLY;

/// Component of [`ANNOTATION_V1BETA2_ONLY`] saying that [`ANNOTATION_V1BETA2_GATEWAY_TIER`]
/// carries the v1beta2 gateway tier.
pub const MARKER_GATEWAY_TIER_PRESENT: &str = "gateway-tier-present";
/// Component of [`ANNOTATION_V1BETA2_ONLY`] saying that [`ANNOTATION_V1BETA2_NODE_LOCAL_POOLS`]
/// carries the v1beta2 node-local pools.
pub const MARKER_NODE_LOCAL_POOLS_PRESENT: &str = "node-local-pools-present";

/// Kubernetes' limit on the total size of an object's annotations: the bytes of every key plus
/// every value. An object exactly at the limit is valid.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// The annotation map of an object.
pub type Annotations = BTreeMap<String, String>;

/// Adds `component` to a comma-separated marker list unless it is already one of its entries.
pub fn append_component(current: &str, component: &str) -> String {
    if current.split(',').any(|c| c == component) {
        current.to_owned()
    } else if current.is_empty() {
        component.to_owned()
    } else {
        format!("{current},{component}")
    }
}

/// Removes every `component` entry, and empty entries, from a comma-separated marker list.
pub fn remove_component(current: &str, component: &str) -> String {
    current
        .split(',')
        .filter(|c| !c.is_empty() && *c != component)
        .collect::<Vec<_>>()
        .join(",")
}

/// Size of annotations as Kubernetes counts it: key bytes plus value bytes.
pub fn annotations_size(annotations: &Annotations) -> usize {
    annotations.iter().map(|(k, v)| k.len() + v.len()).sum()
}

/// Whether `size` bytes of annotations are accepted by Kubernetes (the limit itself is).
pub fn within_budget(size: usize) -> bool {
    size <= TOTAL_ANNOTATION_SIZE_LIMIT
}

/// Upper bound of the annotation size of the v1beta1 view of `hub` (rule CONV-9), for admission
/// to refuse a v1beta2 object that could not be read through v1beta1.
///
/// 0 when the object has neither a gateway tier nor node-local pools, as conversion then adds
/// nothing. Otherwise every existing annotation counts, plus the payloads and markers. A gateway
/// counts even when it is a plain edge gateway that gets no payload: the bound stays valid for
/// whatever edit later makes the payload necessary.
pub fn projected_v1beta1_annotation_size(
    hub: &v1beta2::GarageCluster,
) -> Result<usize, ConvertError> {
    let pools = hub
        .spec
        .storage
        .as_ref()
        .and_then(|s| s.node_local_pools.as_ref())
        .filter(|p| !p.is_empty());
    let gateway = hub.spec.gateway.as_ref();
    if pools.is_none() && gateway.is_none() {
        return Ok(0);
    }
    let mut size = 0;
    let mut markers = Vec::new();
    if let Some(gateway) = gateway {
        size +=
            ANNOTATION_V1BETA2_GATEWAY_TIER.len() + encode_payload("gateway tier", gateway)?.len();
        markers.push(MARKER_GATEWAY_TIER_PRESENT);
    }
    if let Some(pools) = pools {
        size += ANNOTATION_V1BETA2_NODE_LOCAL_POOLS.len()
            + encode_payload("node-local pools", pools)?.len();
        markers.push(MARKER_NODE_LOCAL_POOLS_PRESENT);
    }
    let mut has_marker_key = false;
    for (key, value) in hub.metadata.annotations.iter().flatten() {
        if key == ANNOTATION_V1BETA2_GATEWAY_TIER || key == ANNOTATION_V1BETA2_NODE_LOCAL_POOLS {
            continue;
        }
        if key == ANNOTATION_V1BETA2_ONLY {
            has_marker_key = true;
            let augmented = markers
                .iter()
                .fold(value.clone(), |acc, m| append_component(&acc, m));
            size += key.len() + augmented.len();
        } else {
            size += key.len() + value.len();
        }
    }
    if !has_marker_key {
        size += ANNOTATION_V1BETA2_ONLY.len() + markers.join(",").len();
    }
    Ok(size)
}

/// Refuses a v1beta2 object whose v1beta1 view could exceed [`TOTAL_ANNOTATION_SIZE_LIMIT`];
/// returns the projected size otherwise.
pub fn check_annotation_budget(hub: &v1beta2::GarageCluster) -> Result<usize, ConvertError> {
    let size = projected_v1beta1_annotation_size(hub)?;
    if within_budget(size) {
        Ok(size)
    } else {
        Err(ConvertError::AnnotationBudget {
            size,
            limit: TOTAL_ANNOTATION_SIZE_LIMIT,
        })
    }
}

/// The payload bytes written into an annotation: compact JSON, the exact bytes counted by the
/// budget.
pub(crate) fn encode_payload<T: Serialize + ?Sized>(
    what: &'static str,
    value: &T,
) -> Result<String, ConvertError> {
    serde_json::to_string(value).map_err(|source| ConvertError::EncodePayload { what, source })
}

/// The node-local pools payload decoded as conversion to v1beta2 restores it. Admission
/// (G1-C8) decodes with this too, so it judges exactly the pools conversion would restore.
pub(crate) fn decode_pools(
    payload: &str,
) -> Result<Vec<v1beta2::NodeLocalPoolSpec>, serde_json::Error> {
    serde_json::from_str(payload)
}

/// The gateway-tier payload decoded as conversion to v1beta2 restores it (see
/// [`decode_pools`]).
pub(crate) fn decode_gateway(payload: &str) -> Result<v1beta2::GatewaySpec, serde_json::Error> {
    serde_json::from_str(payload)
}

/// The payloads [`take_transport`] would take off `annotations`, leaving them as they are:
/// what conversion to v1beta2 would restore from this object.
pub(crate) fn peek_transport(annotations: Option<&Annotations>) -> Payloads {
    take_transport(&mut annotations.cloned())
}

/// Payloads taken off a v1beta1 view.
#[derive(Debug, Default)]
pub(crate) struct Payloads {
    /// Value of [`ANNOTATION_V1BETA2_NODE_LOCAL_POOLS`], when present and non-empty.
    pub pools: Option<String>,
    /// Value of [`ANNOTATION_V1BETA2_GATEWAY_TIER`], when present and non-empty.
    pub gateway: Option<String>,
}

/// Removes the payloads and this webhook's marker components from `annotations` and returns the
/// payloads. Leaves `None` rather than an empty map behind when it emptied the map, so that a
/// converted object does not gain an `annotations: {}` it never had (the API server never stores
/// an empty map, so `None` is also what a round trip of a stored object gives back).
pub(crate) fn take_transport(annotations: &mut Option<Annotations>) -> Payloads {
    let Some(map) = annotations.as_mut() else {
        return Payloads::default();
    };
    let before = map.len();
    let pools = map.remove(ANNOTATION_V1BETA2_NODE_LOCAL_POOLS);
    let gateway = map.remove(ANNOTATION_V1BETA2_GATEWAY_TIER);
    if let Some(value) = map.get(ANNOTATION_V1BETA2_ONLY) {
        let ours =
            |c: &str| c == MARKER_GATEWAY_TIER_PRESENT || c == MARKER_NODE_LOCAL_POOLS_PRESENT;
        // A list without our components is the user's business and stays byte for byte.
        if value.split(',').any(ours) {
            let rest = [MARKER_GATEWAY_TIER_PRESENT, MARKER_NODE_LOCAL_POOLS_PRESENT]
                .iter()
                .fold(value.clone(), |acc, m| remove_component(&acc, m));
            if rest.is_empty() {
                map.remove(ANNOTATION_V1BETA2_ONLY);
            } else {
                map.insert(ANNOTATION_V1BETA2_ONLY.to_owned(), rest);
            }
        }
    }
    if map.is_empty() && before > 0 {
        *annotations = None;
    }
    Payloads {
        pools: pools.filter(|p| !p.is_empty()),
        gateway: gateway.filter(|g| !g.is_empty()),
    }
}

/// Writes payloads and their markers onto a v1beta1 view (gateway marker first, then pools).
/// Returns the resulting annotation size when anything was written.
pub(crate) fn put_transport(
    annotations: &mut Option<Annotations>,
    payloads: Payloads,
) -> Option<usize> {
    if payloads.pools.is_none() && payloads.gateway.is_none() {
        return None;
    }
    let map = annotations.get_or_insert_with(Annotations::new);
    let mut markers = map
        .get(ANNOTATION_V1BETA2_ONLY)
        .cloned()
        .unwrap_or_default();
    if let Some(gateway) = payloads.gateway {
        map.insert(ANNOTATION_V1BETA2_GATEWAY_TIER.to_owned(), gateway);
        markers = append_component(&markers, MARKER_GATEWAY_TIER_PRESENT);
    }
    if let Some(pools) = payloads.pools {
        map.insert(ANNOTATION_V1BETA2_NODE_LOCAL_POOLS.to_owned(), pools);
        markers = append_component(&markers, MARKER_NODE_LOCAL_POOLS_PRESENT);
    }
    map.insert(ANNOTATION_V1BETA2_ONLY.to_owned(), markers);
    Some(annotations_size(map))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_follows_the_three_cases() {
        let cases = [
            ("", "gateway-tier-present", "gateway-tier-present"),
            ("user", "gateway-tier-present", "user,gateway-tier-present"),
            (
                "a,gateway-tier-present",
                "gateway-tier-present",
                "a,gateway-tier-present",
            ),
            // A component is matched as a whole entry, never as a substring.
            (
                "xgateway-tier-present",
                "gateway-tier-present",
                "xgateway-tier-present,gateway-tier-present",
            ),
        ];
        for (current, component, want) in cases {
            assert_eq!(
                append_component(current, component),
                want,
                "{current:?} + {component}"
            );
        }
    }

    #[test]
    fn remove_drops_the_component_and_empty_entries() {
        let cases = [
            ("gateway-tier-present", ""),
            ("a,,gateway-tier-present,b", "a,b"),
            ("gateway-tier-present,gateway-tier-present", ""),
            ("a", "a"),
        ];
        for (current, want) in cases {
            assert_eq!(
                remove_component(current, MARKER_GATEWAY_TIER_PRESENT),
                want,
                "{current:?}"
            );
        }
    }

    #[test]
    fn take_keeps_foreign_marker_lists_untouched() {
        let mut annotations = Some(Annotations::from([(
            ANNOTATION_V1BETA2_ONLY.to_owned(),
            "a,,b".to_owned(),
        )]));
        let payloads = take_transport(&mut annotations);
        assert!(payloads.pools.is_none() && payloads.gateway.is_none());
        assert_eq!(
            annotations
                .and_then(|a| a.get(ANNOTATION_V1BETA2_ONLY).cloned())
                .as_deref(),
            Some("a,,b")
        );
    }

    #[test]
    fn take_leaves_no_empty_map() {
        let mut annotations = Some(Annotations::from([(
            ANNOTATION_V1BETA2_GATEWAY_TIER.to_owned(),
            String::new(),
        )]));
        let payloads = take_transport(&mut annotations);
        assert!(
            payloads.gateway.is_none(),
            "an empty payload restores nothing"
        );
        assert_eq!(annotations, None);
        let mut explicit_empty = Some(Annotations::new());
        take_transport(&mut explicit_empty);
        assert_eq!(explicit_empty, Some(Annotations::new()));
    }
}
