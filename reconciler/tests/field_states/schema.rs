//! The field paths of every served version of every CRD in `crds/`.
//!
//! A path is written from the root of the object (`spec.storage.replicas`); an array of objects
//! adds `[]` (`spec.storage.data.paths[].capacity`). Descent stops at:
//! - scalars, maps and arrays of scalars (`spec.podLabels`, `spec.defaultNodeTags`);
//! - embedded Kubernetes types ([`EMBEDDED`] by property name, and every Secret key selector by
//!   its shape), which are Kubernetes' API rather than ours and are classified as a whole.
//!
//! The object envelope (`apiVersion`, `kind`, `metadata`) is not a field of the kind and is
//! left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

/// Property names that hold an embedded Kubernetes type in this API: pod template parts,
/// `LabelSelector`s, `Condition`s, claim templates and probes.
pub const EMBEDDED: &[&str] = &[
    "affinity",
    "conditions",
    "containerSecurityContext",
    "env",
    "envFrom",
    "imagePullSecrets",
    "namespaceSelector",
    "readinessProbe",
    "resources",
    "securityContext",
    "selector",
    "tolerations",
    "topologySpreadConstraints",
    "volumeClaimTemplateSpec",
];

/// The path sets, keyed `Kind/version`, with the embedded names the walk stopped at.
pub struct Schemas {
    /// Field paths per `Kind/version`.
    pub paths: BTreeMap<String, BTreeSet<String>>,
    /// Containers (objects with properties) per `Kind/version`, for group entries.
    pub containers: BTreeMap<String, BTreeSet<String>>,
    /// Which [`EMBEDDED`] names some schema holds; a name held nowhere is stale.
    pub embedded_seen: BTreeSet<&'static str>,
}

/// Walks every served version of every CRD file in `dir`.
pub fn load(dir: &Path) -> Schemas {
    let mut out = Schemas {
        paths: BTreeMap::new(),
        containers: BTreeMap::new(),
        embedded_seen: BTreeSet::new(),
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    for file in files {
        let crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(&file).expect("readable"))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let kind = crd["spec"]["names"]["kind"].as_str().expect("kind");
        for version in crd["spec"]["versions"].as_array().expect("versions") {
            if version.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let key = format!("{kind}/{}", version["name"].as_str().expect("version name"));
            let mut walk = Walk::default();
            walk.object(&version["schema"]["openAPIV3Schema"], "");
            out.paths.insert(key.clone(), walk.paths);
            out.containers.insert(key, walk.containers);
            out.embedded_seen.extend(walk.embedded_seen);
        }
    }
    out
}

/// One version's walk.
#[derive(Default)]
struct Walk {
    paths: BTreeSet<String>,
    containers: BTreeSet<String>,
    embedded_seen: BTreeSet<&'static str>,
}

impl Walk {
    /// The properties of an object schema at `prefix` (empty at the root).
    fn object(&mut self, schema: &Value, prefix: &str) {
        let Some(props) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (name, sub) in props {
            if prefix.is_empty() && matches!(name.as_str(), "apiVersion" | "kind" | "metadata") {
                continue;
            }
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            self.property(name, sub, path);
        }
    }

    fn property(&mut self, name: &str, schema: &Value, path: String) {
        if let Some(known) = EMBEDDED.iter().find(|e| **e == name) {
            self.embedded_seen.insert(known);
            self.paths.insert(path);
            return;
        }
        if is_secret_key_selector(schema) {
            self.paths.insert(path);
            return;
        }
        if has_properties(schema) {
            self.containers.insert(path.clone());
            self.object(schema, &path);
            return;
        }
        match schema.get("items") {
            Some(items) if has_properties(items) => {
                // Both `x` and `x[]` name the array as a group.
                self.containers.insert(path.clone());
                let path = format!("{path}[]");
                self.containers.insert(path.clone());
                self.object(items, &path);
            }
            _ => {
                self.paths.insert(path);
            }
        }
    }
}

fn has_properties(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty())
}

/// A core/v1 `SecretKeySelector`: exactly `key`, `name` and `optional`.
fn is_secret_key_selector(schema: &Value) -> bool {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| {
            let names: BTreeSet<&str> = p.keys().map(String::as_str).collect();
            names == BTreeSet::from(["key", "name", "optional"])
        })
}
