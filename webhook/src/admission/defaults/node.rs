//! DEF-GN: the GarageNode defaulter. It canonicalises identities so that
//! every later comparison (immutability, acknowledgements, drain tokens)
//! sees one spelling of a node ID.

use crate::admission::shared::node_id::canonical_id;
use shared_types::garage_node::GarageNode;
use shared_types::keys::annotation::{
    ANNOTATION_ACKNOWLEDGE_LOST_SOURCE, ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID,
};

/// Garage's default RPC port, used for an external node without one.
const DEFAULT_RPC_PORT: i32 = 3901;

/// DEF-GN: the GarageNode with the webhook defaults applied.
pub fn default_node(obj: &GarageNode) -> GarageNode {
    let mut out = obj.clone();
    if let Some(id) = out.spec.node_id.as_mut() {
        *id = canonical_id(id);
    }
    if let Some(annotations) = out.metadata.annotations.as_mut() {
        for key in [
            ANNOTATION_ACKNOWLEDGE_LOST_SOURCE,
            ANNOTATION_NODE_LOCAL_POOL_RECOVERY_NODE_ID,
        ] {
            if let Some(value) = annotations.get_mut(key) {
                *value = canonical_id(value);
            }
        }
    }
    if let Some(external) = out.spec.external.as_mut()
        && external.port.is_none_or(|p| p == 0)
    {
        external.port = Some(DEFAULT_RPC_PORT);
    }
    out
}
