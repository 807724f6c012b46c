//! Decoding of the form v1alpha1 stored: `bucketPermissions[].bucketRef` was the bucket's name
//! as a plain string. Objects written then are still in etcd and read as v1beta1 without
//! conversion, so a plain string decodes as a reference to that name in the key's namespace;
//! the next write stores the object form. Serialization always writes the object form.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::common::LocalObjectRef;

/// `bucketRef` in either form.
pub(super) fn bucket_ref<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<LocalObjectRef>, D::Error> {
    match Option::<Value>::deserialize(deserializer)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(name)) => Ok(Some(LocalObjectRef {
            name,
            namespace: None,
        })),
        Some(object) => serde_json::from_value(object)
            .map(Some)
            .map_err(D::Error::custom),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use crate::garage_key::BucketPermission;

    #[test]
    fn a_plain_string_bucket_ref_decodes_as_a_name_and_is_written_as_an_object() {
        let legacy: BucketPermission =
            serde_json::from_value(json!({"bucketRef": "my-bucket", "read": true})).unwrap();
        assert_eq!(legacy.bucket_ref.as_ref().unwrap().name, "my-bucket");
        assert_eq!(legacy.bucket_ref.as_ref().unwrap().namespace, None);
        assert_eq!(
            serde_json::to_value(&legacy).unwrap(),
            json!({"bucketRef": {"name": "my-bucket"}, "read": true})
        );
        let object: BucketPermission = serde_json::from_value(
            json!({"bucketRef": {"name": "b", "namespace": "other"}, "read": true}),
        )
        .unwrap();
        assert_eq!(
            object.bucket_ref.unwrap().namespace.as_deref(),
            Some("other")
        );
        let absent: BucketPermission = serde_json::from_value(json!({"bucketId": "x"})).unwrap();
        assert!(absent.bucket_ref.is_none());
        assert!(serde_json::from_value::<BucketPermission>(json!({"bucketRef": 7})).is_err());
    }
}
