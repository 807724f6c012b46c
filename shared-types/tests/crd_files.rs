//! Checks on the generated CRD files in `crds/`: they parse, they stay under
//! etcd's object size limit, and their schemas cover the Go operator's CRDs.

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

/// etcd rejects objects over 1.5 MiB by default.
const ETCD_OBJECT_LIMIT: usize = 1_572_864;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn yaml_docs(dir: &Path) -> Vec<(String, Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("readable");
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let parsed: Value = serde_saphyr::from_str(&text).expect("valid YAML");
        // Two reference files hold bare version lists rather than CRDs.
        if parsed.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition") {
            out.push((name, parsed));
        }
    }
    out
}

#[test]
fn every_generated_crd_parses_and_fits_in_etcd() {
    let dir = repo().join("crds");
    let docs = yaml_docs(&dir);
    assert_eq!(docs.len(), 6, "one CRD file per kind");
    for (name, doc) in &docs {
        let crd: CustomResourceDefinition =
            serde_json::from_value(doc.clone()).unwrap_or_else(|e| panic!("{name}: {e}"));
        let bytes = std::fs::metadata(dir.join(name)).expect("file").len() as usize;
        let json = serde_json::to_vec(doc).expect("serialisable").len();
        println!(
            "{name}: {bytes} bytes YAML, {json} bytes JSON, versions {:?}",
            crd.spec
                .versions
                .iter()
                .map(|v| &v.name)
                .collect::<Vec<_>>()
        );
        assert!(
            bytes < ETCD_OBJECT_LIMIT && json < ETCD_OBJECT_LIMIT,
            "{name} is {bytes} bytes; etcd's object limit is {ETCD_OBJECT_LIMIT}"
        );
        let storage: Vec<_> = crd.spec.versions.iter().filter(|v| v.storage).collect();
        assert_eq!(storage.len(), 1, "{name}: exactly one storage version");
    }
}

/// Field paths of a schema, cutting embedded core Kubernetes types three
/// levels below the field that holds them (they are Kubernetes' API, not
/// ours, and the Go operator inlines them in full).
fn paths(schema: &Value, prefix: String, depth_left: i32, out: &mut BTreeSet<String>) {
    const CORE: &[&str] = &[
        "podTemplate",
        "affinity",
        "tolerations",
        "resources",
        "securityContext",
        "podSecurityContext",
        "topologySpreadConstraints",
        "nodeSelector",
        "env",
        "envFrom",
        "volumes",
        "volumeMounts",
        "initContainers",
        "sidecars",
        "containers",
        "dataSource",
        "dataSourceRef",
        "selector",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
        "lifecycle",
        "imagePullSecrets",
        "volumeClaimTemplateSpec",
        "service",
        "extraVolumes",
        "extraVolumeMounts",
    ];
    out.insert(prefix.clone());
    if depth_left == 0 {
        return;
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (key, sub) in props {
            let next = if depth_left > 0 {
                depth_left - 1
            } else if CORE.contains(&key.as_str()) {
                3
            } else {
                -1
            };
            paths(sub, format!("{prefix}.{key}"), next, out);
        }
    }
    if let Some(items) = schema.get("items").filter(|v| v.is_object()) {
        paths(items, format!("{prefix}[]"), depth_left, out);
    }
    if let Some(extra) = schema.get("additionalProperties").filter(|v| v.is_object()) {
        paths(extra, format!("{prefix}{{}}"), depth_left, out);
    }
}

fn served_paths(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut result = BTreeMap::new();
    for (_, crd) in yaml_docs(dir) {
        let kind = crd["spec"]["names"]["kind"]
            .as_str()
            .expect("kind")
            .to_owned();
        for version in crd["spec"]["versions"].as_array().expect("versions") {
            if version.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let mut found = BTreeSet::new();
            paths(
                &version["schema"]["openAPIV3Schema"],
                String::new(),
                -1,
                &mut found,
            );
            let name = version["name"].as_str().expect("version name");
            result.insert(format!("{kind}/{name}"), found);
        }
    }
    // The served GarageBucket v1alpha1 schema is kept in its own file there.
    result
}

#[test]
fn schemas_cover_the_go_operator_crds() {
    let reference_dir = repo().join("tests/fixtures/upstream-crds");
    let mut reference = served_paths(&reference_dir);
    let alpha: Vec<Value> = serde_saphyr::from_str(
        &std::fs::read_to_string(reference_dir.join("garagebucket_v1alpha1_version.yaml"))
            .expect("readable"),
    )
    .expect("valid YAML");
    let mut alpha_paths = BTreeSet::new();
    paths(
        &alpha[0]["schema"]["openAPIV3Schema"],
        String::new(),
        -1,
        &mut alpha_paths,
    );
    reference.insert("GarageBucket/v1alpha1".to_owned(), alpha_paths);

    let ours = served_paths(&repo().join("crds"));
    let compatibility = std::fs::read_to_string(repo().join("docs/compatibility.md"))
        .expect("docs/compatibility.md exists");
    let (mut total, mut present) = (0, 0);
    let mut problems = Vec::new();
    for (key, want) in &reference {
        let have = ours.get(key).cloned().unwrap_or_default();
        let hit = want.intersection(&have).count();
        total += want.len();
        present += hit;
        let pct = 100.0 * hit as f64 / want.len() as f64;
        println!("{key}: {hit}/{} ({pct:.1}%)", want.len());
        if pct < 97.0 {
            problems.push(format!("{key} covers only {pct:.1}%"));
        }
        for missing in want.difference(&have) {
            if !compatibility.contains(&format!("`{key}:{missing}`")) {
                problems.push(format!("{key}:{missing} is missing and not explained"));
            }
        }
    }
    let pct = 100.0 * present as f64 / total as f64;
    println!("total: {present}/{total} ({pct:.1}%)");
    assert!(pct >= 98.0, "total coverage {pct:.1}% is under 98%");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
