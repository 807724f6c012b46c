//! The crates that hold decisions and data types have no I/O, and the compiler keeps it so:
//! `decide` and `garage-api-types` must not depend, directly or through any crate, on a
//! Kubernetes client, an async runtime, an HTTP stack, TLS or sockets. Were one of those to
//! enter, code in these crates could reach the network, and their tests would no longer prove
//! what a decision does from its inputs alone.
//!
//! The dependencies are read from `cargo metadata` and followed feature by feature, the way
//! cargo builds the crate on its own: `cargo metadata` reports each package's dependencies
//! with the features of the whole workspace unified (the reconciler turns on `kube`'s client),
//! so its resolved graph alone would blame `decide` for what only the reconciler asks for.
//! Only normal dependencies count (not dev or build ones), on every target platform.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::process::Command;

use serde_json::Value;

/// The crates that must stay free of I/O.
const PURE: &[&str] = &["decide", "garage-api-types"];

/// Crates that do I/O (or exist to): none may be in a pure crate's dependencies.
const FORBIDDEN: &[&str] = &[
    "tokio",
    "reqwest",
    "hyper",
    "hyper-util",
    "kube-client",
    "kube-runtime",
    "rustls",
    "mio",
    "socket2",
    "tower",
    "axum",
];

/// One declared normal dependency of a package.
struct Dep {
    /// The name features refer to it by: its rename, or its package name.
    key: String,
    /// The package it names.
    package: String,
    /// The crate name it is renamed to, as the resolved graph lists it.
    rename: Option<String>,
    optional: bool,
    default_features: bool,
    features: Vec<String>,
}

/// What `cargo metadata` says of one package.
struct Package {
    name: String,
    /// Its features and what each turns on.
    features: BTreeMap<String, Vec<String>>,
    deps: Vec<Dep>,
    /// The resolved normal dependencies: crate name to package id.
    resolved: Vec<(String, String)>,
}

fn metadata() -> BTreeMap<String, Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("cargo metadata runs");
    assert!(out.status.success(), "cargo metadata failed: {out:?}");
    let doc: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let mut resolved: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for node in doc["resolve"]["nodes"]
        .as_array()
        .expect("a resolved graph")
    {
        let normal = node["deps"].as_array().into_iter().flatten().filter(|d| {
            d["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|k| k["kind"].is_null())
        });
        resolved.insert(
            text(&node["id"]),
            normal
                .map(|d| (text(&d["name"]), text(&d["pkg"])))
                .collect(),
        );
    }
    let packages = doc["packages"].as_array().expect("packages");
    packages
        .iter()
        .map(|p| {
            let id = text(&p["id"]);
            let package = Package {
                name: text(&p["name"]),
                features: serde_json::from_value(p["features"].clone()).expect("features"),
                deps: p["dependencies"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|d| d["kind"].is_null())
                    .map(dep)
                    .collect(),
                resolved: resolved.remove(&id).unwrap_or_default(),
            };
            (id, package)
        })
        .collect()
}

fn dep(d: &Value) -> Dep {
    let package = text(&d["name"]);
    let rename = d["rename"].as_str().map(str::to_owned);
    Dep {
        key: rename.clone().unwrap_or_else(|| package.clone()),
        rename: rename.map(|r| r.replace('-', "_")),
        package,
        optional: d["optional"].as_bool().unwrap_or(false),
        default_features: d["uses_default_features"].as_bool().unwrap_or(true),
        features: serde_json::from_value(d["features"].clone()).unwrap_or_default(),
    }
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_owned()
}

/// What the enabled features of one package turn on: its optional dependencies, and features
/// of its dependencies (`None` as the feature: the dependency itself).
fn expand(p: &Package, enabled: &BTreeSet<String>) -> BTreeSet<(String, Option<String>)> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = enabled.iter().cloned().collect();
    let mut turned_on = BTreeSet::new();
    let mut weak = Vec::new();
    while let Some(f) = todo.pop() {
        if !seen.insert(f.clone()) {
            continue;
        }
        if let Some(dep) = f.strip_prefix("dep:") {
            turned_on.insert((dep.to_owned(), None));
        } else if let Some((dep, feature)) = f.split_once("?/") {
            weak.push((dep.to_owned(), feature.to_owned()));
        } else if let Some((dep, feature)) = f.split_once('/') {
            turned_on.insert((dep.to_owned(), None));
            turned_on.insert((dep.to_owned(), Some(feature.to_owned())));
        } else if let Some(values) = p.features.get(&f) {
            todo.extend(values.iter().cloned());
        } else {
            // An optional dependency no `dep:` names is a feature of its own name.
            turned_on.insert((f, None));
        }
    }
    for (dep, feature) in weak {
        let on = turned_on.contains(&(dep.clone(), None))
            || p.deps.iter().any(|d| d.key == dep && !d.optional);
        if on {
            turned_on.insert((dep, Some(feature)));
        }
    }
    turned_on
}

/// Every package a build of `root` on its own compiles, with the package it was reached from.
fn closure(packages: &BTreeMap<String, Package>, root: &str) -> BTreeMap<String, Option<String>> {
    let mut features: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut parent: BTreeMap<String, Option<String>> = BTreeMap::from([(root.to_owned(), None)]);
    features.insert(root.to_owned(), BTreeSet::from(["default".to_owned()]));
    let mut queue = VecDeque::from([root.to_owned()]);
    while let Some(id) = queue.pop_front() {
        let p = &packages[&id];
        let turned_on = expand(p, &features[&id]);
        for d in &p.deps {
            if d.optional && !turned_on.contains(&(d.key.clone(), None)) {
                continue;
            }
            let mut wanted: BTreeSet<String> = d.features.iter().cloned().collect();
            if d.default_features {
                wanted.insert("default".into());
            }
            wanted.extend(
                turned_on
                    .iter()
                    .filter(|(k, f)| *k == d.key && f.is_some())
                    .filter_map(|(_, f)| f.clone()),
            );
            let targets = p.resolved.iter().filter(|(name, pkg)| {
                packages[pkg].name == d.package && d.rename.as_ref().is_none_or(|r| r == name)
            });
            for (_, pkg) in targets {
                let known = features.entry(pkg.clone()).or_default();
                let before = known.len();
                known.extend(wanted.iter().cloned());
                let new = !parent.contains_key(pkg);
                if new {
                    parent.insert(pkg.clone(), Some(id.clone()));
                }
                if new || known.len() > before {
                    queue.push_back(pkg.clone());
                }
            }
        }
    }
    parent
}

/// `a -> b -> c`: how `id` is reached from the root.
fn path(
    packages: &BTreeMap<String, Package>,
    parent: &BTreeMap<String, Option<String>>,
    id: &str,
) -> String {
    let mut names = vec![packages[id].name.clone()];
    let mut at = id.to_owned();
    while let Some(Some(up)) = parent.get(&at) {
        names.push(packages[up].name.clone());
        at = up.clone();
    }
    names.reverse();
    names.join(" -> ")
}

#[test]
fn pure_crates_depend_on_no_io() {
    let packages = metadata();
    let mut found = Vec::new();
    for root in PURE {
        let id = packages
            .iter()
            .find(|(_, p)| p.name == *root)
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| panic!("{root} is a workspace member"));
        let reached = closure(&packages, &id);
        for pkg in reached.keys() {
            if FORBIDDEN.contains(&packages[pkg].name.as_str()) {
                found.push(path(&packages, &reached, pkg));
            }
        }
    }
    assert!(
        found.is_empty(),
        "crates with no I/O depend on crates that do it:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_walk_sees_what_the_reconciler_pulls_in() {
    // The walk must find I/O where there is some, or the test above proves nothing.
    let packages = metadata();
    let (id, _) = packages
        .iter()
        .find(|(_, p)| p.name == "reconciler")
        .expect("the reconciler is a workspace member");
    let reached = closure(&packages, id);
    let names: BTreeSet<&str> = reached.keys().map(|k| packages[k].name.as_str()).collect();
    for io in ["tokio", "kube-client", "kube-runtime", "hyper", "rustls"] {
        assert!(names.contains(io), "the reconciler reaches {io}");
    }
}
