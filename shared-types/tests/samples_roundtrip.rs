//! Every manifest of our kinds among the Go operator's samples loads into the
//! Rust types and writes back with no field lost or changed.

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use shared_types::{
    garage_admin_token, garage_bucket, garage_cluster, garage_key, garage_node,
    garage_reference_grant,
};

fn samples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/upstream-samples")
}

/// Parses `doc` as `T`, serialises it again and returns both JSON values.
fn round_trip<T: DeserializeOwned + Serialize>(doc: &Value) -> Result<Value, String> {
    let typed: T = serde_json::from_value(doc.clone()).map_err(|e| e.to_string())?;
    serde_json::to_value(&typed).map_err(|e| e.to_string())
}

fn round_trip_by_kind(doc: &Value) -> Option<Result<Value, String>> {
    let api_version = doc.get("apiVersion")?.as_str()?;
    let kind = doc.get("kind")?.as_str()?;
    let version = api_version.strip_prefix("garage.rajsingh.info/")?;
    Some(match (kind, version) {
        ("GarageCluster", "v1beta2") => round_trip::<garage_cluster::v1beta2::GarageCluster>(doc),
        ("GarageCluster", "v1beta1") => round_trip::<garage_cluster::v1beta1::GarageCluster>(doc),
        ("GarageNode", "v1beta1") => round_trip::<garage_node::GarageNode>(doc),
        ("GarageBucket", "v1beta1") => round_trip::<garage_bucket::GarageBucket>(doc),
        ("GarageBucket", "v1alpha1") => round_trip::<garage_bucket::v1alpha1::GarageBucket>(doc),
        ("GarageKey", "v1beta1") => round_trip::<garage_key::GarageKey>(doc),
        ("GarageAdminToken", "v1beta1") => round_trip::<garage_admin_token::GarageAdminToken>(doc),
        ("GarageReferenceGrant", "v1beta1") => {
            round_trip::<garage_reference_grant::GarageReferenceGrant>(doc)
        }
        _ => Err(format!("no Rust type for {kind} {api_version}")),
    })
}

/// Object keys whose value is an empty map or list are kept by the types but
/// `null` is not a value any sample uses, so a plain equality check is exact.
#[test]
fn every_sample_of_our_kinds_round_trips_unchanged() {
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(samples_dir())
        .expect("samples directory is readable")
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let text = std::fs::read_to_string(&path).expect("sample is readable");
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("sample is valid YAML");
        for (index, doc) in docs.iter().enumerate() {
            let Some(result) = round_trip_by_kind(doc) else {
                continue;
            };
            let name = format!("{}#{index}", path.file_name().unwrap().to_string_lossy());
            match result {
                Ok(back) if back == *doc => checked += 1,
                Ok(back) => failures.push(format!(
                    "{name}: changed on round trip\n  in:  {doc}\n  out: {back}"
                )),
                Err(e) => failures.push(format!("{name}: does not parse: {e}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        checked >= 30,
        "only {checked} manifests of our kinds were found"
    );
    println!("{checked} manifests round-tripped unchanged");
}
