//! ConversionReview handling: batches, metadata preservation and hostile input.

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use kube::core::conversion::{ConversionResponse, ConversionReview};
use serde_json::{Value, json};
use support::*;
use webhook::convert::{V1ALPHA1, V1BETA1, V1BETA2, convert_object, convert_review};

fn review(desired: &str, objects: Vec<Value>) -> ConversionReview {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "desiredAPIVersion": desired,
            "objects": objects},
    }))
    .unwrap()
}

fn response(review: ConversionReview) -> ConversionResponse {
    review.response.expect("a response")
}

/// Metadata fields a typed round trip could reformat; they must come back byte for byte.
fn odd_metadata(api_version: &str, spec: Value) -> Value {
    let mut object = object(api_version, spec, Some(json!({"note": "x"})));
    object["metadata"]["creationTimestamp"] = json!("2024-05-01T10:00:00Z");
    object["metadata"]["managedFields"] = json!([{"manager": "kubectl", "operation": "Update",
        "apiVersion": api_version, "time": "2024-05-01T10:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {}}}]);
    object["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "ConfigMap",
        "name": "o", "uid": "u"}]);
    object
}

#[test]
fn a_batch_converts_in_order_and_keeps_metadata() {
    let spoke_object = odd_metadata(
        V1BETA1,
        json!({"replicas": 3, "storage": {"data": {"size": "1Ti"}}}),
    );
    let hub_object = odd_metadata(V1BETA2, json!({"storage": {"replicas": 2}}));
    let unified = object(V1BETA2, unified_spec(), None);
    let answer = response(convert_review(review(
        V1BETA1,
        vec![hub_object.clone(), spoke_object.clone(), unified],
    )));
    assert!(answer.result.is_success(), "{:?}", answer.result);
    assert_eq!(answer.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(answer.converted_objects.len(), 3);
    let first = &answer.converted_objects[0];
    assert_eq!(first["apiVersion"], V1BETA1);
    assert_eq!(first["kind"], "GarageCluster");
    assert_eq!(
        first["metadata"], hub_object["metadata"],
        "metadata untouched"
    );
    assert_eq!(first["spec"]["replicas"], 2);
    assert_eq!(
        answer.converted_objects[1], spoke_object,
        "already v1beta1: unchanged"
    );
    let third = &answer.converted_objects[2];
    assert_eq!(
        third["metadata"]["annotations"]["garage.rajsingh.info/v1beta2-only"],
        "gateway-tier-present"
    );
    let mut third_meta = third["metadata"].clone();
    third_meta.as_object_mut().unwrap().remove("annotations");
    assert_eq!(
        third_meta,
        object(V1BETA2, json!({}), None)["metadata"],
        "only annotations changed"
    );

    // And back: annotations disappear again, the rest is as before.
    let back = response(convert_review(review(
        V1BETA2,
        answer.converted_objects.clone(),
    )));
    assert!(back.result.is_success());
    assert_eq!(back.converted_objects[0], hub_object);
    assert_eq!(
        back.converted_objects[2],
        object(V1BETA2, unified_spec(), None)
    );
}

#[test]
fn v1alpha1_placeholder_keeps_only_metadata() {
    let hub_object = object(V1BETA2, unified_spec(), None);
    let alpha = convert_object(hub_object.clone(), V1ALPHA1).unwrap();
    assert_eq!(
        alpha,
        json!({"apiVersion": V1ALPHA1, "kind": "GarageCluster", "metadata": hub_object["metadata"]})
    );
    let back = convert_object(alpha, V1BETA1).unwrap();
    assert_eq!(
        back,
        json!({"apiVersion": V1BETA1, "kind": "GarageCluster", "metadata": hub_object["metadata"]})
    );
}

#[test]
fn hostile_objects_fail_with_a_message_naming_the_object() {
    let good = object(V1BETA1, json!({"replicas": 1}), None);
    let mut wrong_kind = object(V1BETA1, json!({}), None);
    wrong_kind["kind"] = json!("GarageNode");
    let mut unknown_version = object(V1BETA1, json!({}), None);
    unknown_version["apiVersion"] = json!("garage.rajsingh.info/v9");
    let mut no_api_version = object(V1BETA1, json!({}), None);
    no_api_version.as_object_mut().unwrap().remove("apiVersion");
    let mut no_metadata = object(V1BETA1, json!({}), None);
    no_metadata.as_object_mut().unwrap().remove("metadata");
    let bad_payload = object(
        V1BETA1,
        json!({"replicas": 1}),
        Some(json!({"garage.rajsingh.info/v1beta2-node-local-pools": "{"})),
    );
    // (case, object, fragments the message must contain)
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "not an object",
            json!("GarageCluster"),
            vec!["object 2 of 2", "is not a JSON object"],
        ),
        ("null", Value::Null, vec!["is not a JSON object"]),
        (
            "wrong kind",
            wrong_kind,
            vec!["GarageNode storage/garage", "converts only GarageCluster"],
        ),
        (
            "unknown apiVersion",
            unknown_version,
            vec!["garage.rajsingh.info/v9", "is not served"],
        ),
        ("no apiVersion", no_api_version, vec!["has no apiVersion"]),
        (
            "no metadata",
            no_metadata,
            vec!["GarageCluster without a name", "has no metadata"],
        ),
        (
            "spec of the wrong type",
            object(V1BETA1, json!({"replicas": "three"}), None),
            vec![
                "GarageCluster storage/garage",
                "does not decode as a garage.rajsingh.info/v1beta1",
            ],
        ),
        (
            "spec not an object",
            object(V1BETA1, json!([1, 2]), None),
            vec!["does not decode"],
        ),
        (
            "replicas overflow",
            object(V1BETA1, json!({"replicas": 4_294_967_296_i64}), None),
            vec!["does not decode"],
        ),
        (
            "broken pool payload",
            bad_payload,
            vec!["restore node-local pools"],
        ),
    ];
    for (case, hostile, fragments) in cases {
        let answer = response(convert_review(review(V1BETA2, vec![good.clone(), hostile])));
        assert!(answer.result.is_failure(), "{case}");
        assert!(
            answer.converted_objects.is_empty(),
            "{case}: nothing is returned on failure"
        );
        for fragment in fragments {
            assert!(
                answer.result.message.contains(fragment),
                "{case}: {}",
                answer.result.message
            );
        }
        assert!(
            answer
                .result
                .message
                .contains("to garage.rajsingh.info/v1beta2"),
            "{case}"
        );
    }
}

#[test]
fn malformed_reviews_fail_cleanly() {
    let no_request: ConversionReview = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}))
    .unwrap();
    let answer = response(convert_review(no_request));
    assert!(answer.result.is_failure());
    assert!(answer.result.message.contains("no request"));

    for desired in ["garage.rajsingh.info/v2", "apps/v1", ""] {
        let answer = response(convert_review(review(
            desired,
            vec![object(V1BETA1, json!({}), None)],
        )));
        assert!(answer.result.is_failure(), "{desired}");
        assert!(
            answer.result.message.contains("desiredAPIVersion"),
            "{desired}"
        );
        assert_eq!(answer.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
    }

    let empty = response(convert_review(review(V1BETA2, vec![])));
    assert!(empty.result.is_success() && empty.converted_objects.is_empty());
}

#[test]
fn leaked_v1beta1_bytes_are_read_through_the_review() {
    let leaked = object(
        V1BETA2,
        json!({"replicas": 4, "gateway": true,
        "connectTo": {"clusterRef": {"name": "g"}}, "storage": {"replicas": 0}}),
        None,
    );
    let answer = response(convert_review(review(V1BETA1, vec![leaked])));
    assert!(answer.result.is_success(), "{}", answer.result.message);
    let view = &answer.converted_objects[0]["spec"];
    // storage + gateway is a unified cluster: storage-first with the leaked replicas honoured.
    assert_eq!(view["replicas"], 4);
    assert_eq!(view["gateway"], false);
}

#[test]
fn version_constants_match_the_types() {
    use kube::Resource;
    use shared_types::garage_cluster::{v1beta1, v1beta2};
    assert_eq!(v1beta1::GarageCluster::api_version(&()), V1BETA1);
    assert_eq!(v1beta2::GarageCluster::api_version(&()), V1BETA2);
    assert_eq!(v1beta2::GarageCluster::kind(&()), webhook::convert::KIND);
    assert_eq!(v1beta2::GarageCluster::group(&()), webhook::convert::GROUP);
}
