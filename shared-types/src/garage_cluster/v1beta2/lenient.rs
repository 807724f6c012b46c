//! Tolerant decoding of v1beta1-shaped values that can leak into a v1beta2
//! payload (for example from a client that mixed the two versions).
//!
//! v1beta1 spelled the gateway tier as `spec.gateway: true`. Refusing such a
//! payload would make the object unreadable; reading `true` as "no gateway"
//! would silently drop a tier. It is read as a gateway with every setting at
//! its default instead, and `false` or `null` as no gateway.

use serde::{Deserialize, Deserializer};

use super::GatewaySpec;

/// Decodes `spec.gateway` from either a GatewaySpec object or a v1beta1
/// boolean.
pub(crate) fn gateway<'de, D>(deserializer: D) -> Result<Option<GatewaySpec>, D::Error>
where
    D: Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Shape {
        Flag(bool),
        Spec(Box<GatewaySpec>),
    }
    Ok(match Option::<Shape>::deserialize(deserializer)? {
        None | Some(Shape::Flag(false)) => None,
        Some(Shape::Flag(true)) => Some(GatewaySpec::default()),
        Some(Shape::Spec(spec)) => Some(*spec),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::garage_cluster::v1beta2::GarageClusterSpec;

    fn gateway_of(value: serde_json::Value) -> Option<super::GatewaySpec> {
        let spec: GarageClusterSpec =
            serde_json::from_value(json!({ "gateway": value })).expect("spec parses");
        spec.gateway
    }

    #[test]
    fn v1beta1_true_reads_as_a_default_gateway() {
        assert_eq!(gateway_of(json!(true)), Some(Default::default()));
    }

    #[test]
    fn v1beta1_false_and_null_read_as_no_gateway() {
        assert_eq!(gateway_of(json!(false)), None);
        assert_eq!(gateway_of(json!(null)), None);
        let spec: GarageClusterSpec = serde_json::from_value(json!({})).expect("parses");
        assert_eq!(spec.gateway, None);
    }

    #[test]
    fn an_object_reads_as_itself() {
        let gateway = gateway_of(json!({ "replicas": 4 })).expect("gateway present");
        assert_eq!(gateway.replicas, Some(4));
    }

    #[test]
    fn a_string_is_still_an_error() {
        let parsed: Result<GarageClusterSpec, _> =
            serde_json::from_value(json!({ "gateway": "yes" }));
        assert!(parsed.is_err());
    }
}
