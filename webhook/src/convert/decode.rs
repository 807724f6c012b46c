//! Decoding the objects of a ConversionReview into the typed GarageCluster versions.

use serde_json::Value;
use shared_types::garage_cluster::{v1beta1, v1beta2};

use super::ConvertError;
use super::review::{V1BETA1, V1BETA2};

/// Decodes a v1beta1 GarageCluster.
pub fn decode_v1beta1(object: Value) -> Result<v1beta1::GarageCluster, ConvertError> {
    serde_json::from_value(object).map_err(|source| ConvertError::Decode {
        api_version: V1BETA1.to_owned(),
        source,
    })
}

/// Decodes a v1beta2 GarageCluster, tolerating v1beta1 bytes that leaked into it
/// (CONV-15): `spec.gateway: true` is read by the shared type itself, and a top-level
/// `spec.replicas` is honoured by [`repair_leaked_replicas`].
pub fn decode_v1beta2(mut object: Value) -> Result<v1beta2::GarageCluster, ConvertError> {
    repair_leaked_replicas(&mut object);
    serde_json::from_value(object).map_err(|source| ConvertError::Decode {
        api_version: V1BETA2.to_owned(),
        source,
    })
}

/// Copies a stray top-level `spec.replicas` into `spec.storage.replicas` when the latter is 0 or
/// absent and the former is a non-zero 32-bit integer, and says whether it did.
///
/// v1beta2 has no top-level replicas, so such a value can only come from a v1beta1 payload
/// served under the v1beta2 name. Ignoring it would read the storage group as zero replicas and
/// let the reconciler scale every Auto storage node away; honouring it can only keep nodes. An
/// explicit `storage.replicas: 0` without a top-level value stays 0.
pub fn repair_leaked_replicas(object: &mut Value) -> bool {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return false;
    };
    let Some(leaked) = spec
        .get("replicas")
        .and_then(Value::as_i64)
        .and_then(|r| i32::try_from(r).ok())
        .filter(|r| *r != 0)
    else {
        return false;
    };
    let Some(storage) = spec.get_mut("storage").and_then(Value::as_object_mut) else {
        return false;
    };
    let unset = match storage.get("replicas") {
        None | Some(Value::Null) => true,
        Some(value) => value.as_i64() == Some(0),
    };
    if unset {
        storage.insert("replicas".to_owned(), Value::from(leaked));
    }
    unset
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn leaked_replicas_table() {
        // (spec, repaired, storage.replicas afterwards)
        let cases = [
            (
                json!({"replicas": 4, "storage": {"replicas": 0}}),
                true,
                Some(4),
            ),
            (json!({"replicas": 4, "storage": {}}), true, Some(4)),
            (
                json!({"replicas": 4, "storage": {"replicas": null}}),
                true,
                Some(4),
            ),
            (
                json!({"replicas": 4, "storage": {"replicas": 2}}),
                false,
                Some(2),
            ),
            (json!({"storage": {"replicas": 0}}), false, Some(0)),
            (json!({"replicas": 0, "storage": {}}), false, None),
            (json!({"replicas": 4}), false, None),
            (json!({"replicas": "4", "storage": {}}), false, None),
            (
                json!({"replicas": 4_294_967_296_i64, "storage": {}}),
                false,
                None,
            ),
        ];
        for (spec, repaired, want) in cases {
            let mut object = json!({ "spec": spec.clone() });
            assert_eq!(repair_leaked_replicas(&mut object), repaired, "{spec}");
            let got = object["spec"]["storage"]["replicas"].as_i64();
            assert_eq!(got, want, "{spec}");
        }
        let mut not_an_object = json!(["spec"]);
        assert!(!repair_leaked_replicas(&mut not_an_object));
    }
}
