//! The request bodies the bench sends.

use std::path::Path;

use anyhow::{Context as _, Result};
use serde_json::{Value, json};

pub(super) fn first_document(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
        .with_context(|| format!("parsing {}", path.display()))?;
    docs.into_iter()
        .next()
        .with_context(|| format!("{} holds no document", path.display()))
}

pub(super) fn admission_review(object: &Value) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000001",
            "kind": {"group": "garage.rajsingh.info", "version": "v1beta2", "kind": "GarageCluster"},
            "resource": {"group": "garage.rajsingh.info", "version": "v1beta2", "resource": "garageclusters"},
            "requestKind": {"group": "garage.rajsingh.info", "version": "v1beta2", "kind": "GarageCluster"},
            "requestResource": {"group": "garage.rajsingh.info", "version": "v1beta2", "resource": "garageclusters"},
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "operation": "CREATE",
            "userInfo": {"username": "bench", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": null,
            "dryRun": false,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "CreateOptions"}
        }
    }))?)
}

pub(super) fn conversion_review(objects: &[Value], to: &str) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec(&json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "00000000-0000-0000-0000-000000000002",
            "desiredAPIVersion": to,
            "objects": objects,
        }
    }))?)
}
