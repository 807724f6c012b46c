//! Every GarageCluster among the Go operator's sample manifests (converted to v1beta2 where it
//! is a v1beta1 one, as the API server does through the webhook) is either taken whole by the
//! reconciler's settings (a management handle: by where it reaches its Admin API; an edge
//! gateway: by the storage cluster it joins, a sibling or one outside this Kubernetes cluster)
//! or refused
//! naming exactly the field this version does not build yet.
//! A sample that starts being taken, or is refused for another field, fails here until the
//! table says so.

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use decide::cluster::handle;
use decide::desired::{DesiredError, Settings};
use serde_json::Value;
use shared_types::garage_cluster::{v1beta1, v1beta2};

/// Sample file and document index, and what the settings say: `None` when they are taken,
/// else the field named as not built yet.
const EXPECTED: &[(&str, Option<&str>)] = &[
    ("cosi_garagecluster-e2e.yaml#1", None),
    ("garage_v1beta1_garagecluster.yaml#0", None),
    ("garage_v1beta1_garagecluster_ephemeral.yaml#0", None),
    ("garage_v1beta1_garagecluster_ephemeral.yaml#1", None),
    ("garage_v1beta1_garagecluster_gateway.yaml#0", None),
    ("garage_v1beta2_garagecluster.yaml#0", None),
    (
        "garage_v1beta2_garagecluster.yaml#1",
        Some("spec.remoteClusters"),
    ),
    ("garage_v1beta2_garagecluster_auto_per_node.yaml#0", None),
    ("garage_v1beta2_garagecluster_eject_to_manual.yaml#0", None),
    ("garage_v1beta2_garagecluster_ephemeral.yaml#0", None),
    ("garage_v1beta2_garagecluster_ephemeral.yaml#1", None),
    ("garage_v1beta2_garagecluster_gateway.yaml#0", None),
    (
        "garage_v1beta2_garagecluster_gateway.yaml#1",
        Some(
            "spec.publicEndpoint on an edge gateway (its members share one garage.toml: give the address peers dial in spec.gateway.rpcPublicAddr, one edge per address)",
        ),
    ),
    (
        "garage_v1beta2_garagecluster_management_handle.yaml#0",
        None,
    ),
    ("garage_v1beta2_garagecluster_node_local_pools.yaml#0", None),
    ("garage_v1beta2_garagecluster_zone_from.yaml#0", None),
];

/// Every GarageCluster document of the samples, as v1beta2, named `file#index`.
fn samples() -> Vec<(String, v1beta2::GarageCluster)> {
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
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        for (index, mut doc) in docs.into_iter().enumerate() {
            if doc["kind"] != "GarageCluster" {
                continue;
            }
            // The API server sets these; the samples cannot.
            doc["metadata"]["uid"] = Value::from(format!("uid-{file}-{index}"));
            if doc["metadata"]["namespace"].is_null() {
                doc["metadata"]["namespace"] = Value::from("default");
            }
            let cluster = match doc["apiVersion"].as_str() {
                Some("garage.rajsingh.info/v1beta1") => {
                    let old: v1beta1::GarageCluster = serde_json::from_value(doc).unwrap();
                    webhook::convert::to_v1beta2(old).unwrap()
                }
                _ => serde_json::from_value(doc).unwrap(),
            };
            out.push((format!("{file}#{index}"), cluster));
        }
    }
    out
}

#[test]
fn every_sample_is_taken_or_refused_naming_what_it_lacks() {
    let found = samples();
    let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
    let expected: Vec<&str> = EXPECTED.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, expected, "the samples changed; update the table");
    for ((name, cluster), (_, want)) in found.iter().zip(EXPECTED) {
        // A management handle renders nothing: it is taken when it says where its Admin API is.
        if handle::is_handle(cluster) {
            let source = handle::admin_source(cluster);
            assert!(source.is_ok(), "{name}: {source:?}");
            assert_eq!(*want, None, "{name}");
            continue;
        }
        // An edge gateway is taken when it renders and says which cluster it joins.
        let settings = if decide::desired::edge::is_edge(cluster) {
            decide::cluster::edge::joins(cluster).and_then(|_| Settings::from_edge(cluster))
        } else {
            Settings::from_cluster(cluster)
        };
        let got = match settings {
            Ok(_) => None,
            Err(DesiredError::Unsupported(field)) => Some(field),
            Err(e) => panic!("{name}: refused as invalid, not as unbuilt: {e}"),
        };
        assert_eq!(got, *want, "{name}");
    }
}
