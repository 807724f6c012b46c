//! Every GarageCluster among the Go operator's sample manifests converts both ways and back.

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use kube::core::conversion::ConversionReview;
use serde_json::{Value, json};
use shared_types::garage_cluster::{v1beta1, v1beta2};
use webhook::convert::{V1BETA1, V1BETA2, convert_review, to_v1beta1, to_v1beta2};

fn samples() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/upstream-samples");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap();
        for (index, doc) in docs.into_iter().enumerate() {
            let group_ok = doc["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("garage.rajsingh.info/"));
            if group_ok && doc["kind"] == "GarageCluster" {
                let name = path.file_name().unwrap().to_string_lossy();
                out.push((format!("{name}#{index}"), doc));
            }
        }
    }
    out
}

/// The v1beta1 view writes `gateway: false` (as the Go operator does) and leaves out an empty
/// `storage`; neither changes what the object means.
fn canonical_v1beta1(mut doc: Value) -> Value {
    let spec = doc["spec"].as_object_mut().unwrap();
    spec.entry("gateway").or_insert(json!(false));
    if spec.get("storage") == Some(&json!({})) {
        spec.remove("storage");
    }
    doc
}

fn through_review(doc: &Value, desired: &str) -> Value {
    let review: ConversionReview = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": "u", "desiredAPIVersion": desired, "objects": [doc]},
    }))
    .unwrap();
    let response = convert_review(review).response.unwrap();
    assert!(response.result.is_success(), "{}", response.result.message);
    response.converted_objects.into_iter().next().unwrap()
}

#[test]
fn every_garage_cluster_sample_converts_both_ways() {
    let samples = samples();
    let mut counts = (0, 0);
    for (name, doc) in samples {
        match doc["apiVersion"].as_str().unwrap() {
            V1BETA1 => {
                counts.0 += 1;
                let typed: v1beta1::GarageCluster = serde_json::from_value(doc.clone()).unwrap();
                let hub = to_v1beta2(typed).unwrap_or_else(|e| panic!("{name}: {e}"));
                let back = to_v1beta1(hub).unwrap_or_else(|e| panic!("{name}: {e}"));
                let back = serde_json::to_value(back).unwrap();
                assert_eq!(back, canonical_v1beta1(doc.clone()), "{name}");
                let via_review = through_review(&through_review(&doc, V1BETA2), V1BETA1);
                assert_eq!(
                    via_review,
                    canonical_v1beta1(doc),
                    "{name} through ConversionReview"
                );
            }
            V1BETA2 => {
                counts.1 += 1;
                let typed: v1beta2::GarageCluster = serde_json::from_value(doc.clone()).unwrap();
                let view = to_v1beta1(typed).unwrap_or_else(|e| panic!("{name}: {e}"));
                let back = to_v1beta2(view).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(serde_json::to_value(back).unwrap(), doc, "{name}");
                let via_review = through_review(&through_review(&doc, V1BETA1), V1BETA2);
                assert_eq!(via_review, doc, "{name} through ConversionReview");
            }
            other => panic!("{name}: unexpected apiVersion {other}"),
        }
    }
    println!(
        "{} v1beta1 and {} v1beta2 GarageCluster samples converted",
        counts.0, counts.1
    );
    assert!(
        counts.0 >= 3 && counts.1 >= 8,
        "samples missing: {counts:?}"
    );
}
