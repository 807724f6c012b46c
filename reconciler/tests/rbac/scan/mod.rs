//! A scan of the reconciler's source for the Kubernetes API calls it makes: each `Api<K>` value,
//! the kind `K` it is for, and the verbs called on it, parsed with `syn`.
//!
//! It follows an `Api` value from where it is made (`Api::<K>::namespaced(..)` and the other
//! constructors, a function returning `Api<K>` such as `scoped::<K>(..)`, a struct field or
//! parameter typed `Api<K>`) through `let` bindings and `.clone()` to:
//! - a method of `Api` (`get_opt` is `get`, `replace` is `update`, `patch_status` is `patch` on
//!   `status`, ...);
//! - a function of this crate taking `Api<K>` or `&Api<K>`, including generic helpers
//!   (`ensure`, `finalizer::set`, `write::patch_status`), whose verbs are carried back to the
//!   caller's kind, and generic functions called with a turbofish (`owned_of::<Service>`);
//! - kube-runtime's watchers (`Controller::new`, `.owns`, `.watches`, `watcher`), which list
//!   and watch; and kube-runtime's event `Recorder`, which creates and patches Events.
//!
//! A call is resolved to the function it names through the calling module's `use` items and
//! `crate::`, `self::`, `super::` paths; a method call (`x.f(..)`), whose receiver's type the
//! scan does not know, to the methods of that name.
//!
//! Whatever it cannot follow is reported as a problem rather than passed over: an `Api` value
//! used in any other way (stored in a collection, passed to a function it does not know), a
//! method of `Api` it does not map, a constructor whose kind it cannot tell, a generic helper
//! it cannot tell from another of the same name, a client call that bypasses `Api`
//! (`request`, discovery).
//!
//! Limits: it reads types only where they are written (a `let` annotation, a parameter, a
//! field, a turbofish), counts every function as reachable, ignores glob imports and does not
//! see `Api` values held in closure parameters or in patterns other than a plain name (such a
//! value is missed, not misread). Test code (`#[cfg(test)]` items, `tests.rs`, `*_tests.rs`,
//! `fixtures.rs`, `test_support.rs`) is skipped.

mod items;
mod syntax;
mod walk;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use items::{Callee, Items, module_of};

/// One API call the source makes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Use {
    /// The Rust type name of the kind (`Pod`, `GarageCluster`).
    pub kind: String,
    /// The RBAC verb.
    pub verb: &'static str,
    /// The subresource, if any.
    pub subresource: Option<&'static str>,
    /// `file: function`, for messages.
    pub at: String,
}

/// What a scan found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Every call, with its kind resolved.
    pub uses: BTreeSet<Use>,
    /// What the scan could not follow; a non-empty list is a failure.
    pub problems: Vec<String>,
}

/// The kind an `Api` value is for: a named type, or a type parameter of the function.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Target {
    Kind(String),
    Param(String),
}

/// A call of a generic function of the source, with what it binds the type parameters to.
#[derive(Debug, Clone)]
struct CallSite {
    callee: Callee,
    bindings: Vec<(String, Target)>,
}

/// The facts of one function body.
#[derive(Debug, Default)]
struct Body {
    uses: Found,
    calls: Vec<CallSite>,
}

/// Calls by target, verb and subresource.
type Found = BTreeSet<(Target, &'static str, Option<&'static str>)>;

/// Scans every source file under `root`.
pub fn scan_dir(root: &Path) -> Scan {
    let mut files = Vec::new();
    collect(root, root, &mut files);
    scan_sources(&files)
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            collect(root, &path, out);
        } else if name.ends_with(".rs") && !is_test_file(name) {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let shown = path.strip_prefix(root).unwrap_or(&path).display();
            out.push((shown.to_string(), text));
        }
    }
}

fn is_test_file(name: &str) -> bool {
    matches!(name, "tests.rs" | "fixtures.rs" | "test_support.rs") || name.ends_with("_tests.rs")
}

/// Scans `(path, text)` source files, paths relative to the crate's `src`, as one crate.
pub fn scan_sources(files: &[(String, String)]) -> Scan {
    let mut scan = Scan::default();
    let mut parsed = Vec::new();
    for (name, text) in files {
        match syn::parse_file(text) {
            Ok(file) => parsed.push((name.clone(), module_of(name), file)),
            Err(e) => scan.problems.push(format!("{name}: does not parse: {e}")),
        }
    }
    let mut items = Items::default();
    for (_, module, file) in &parsed {
        items.read(module, file);
    }
    let mut bodies: BTreeMap<String, Vec<(String, Body)>> = BTreeMap::new();
    for (name, module, file) in &parsed {
        let imports = items.imports(module, file);
        let mut walker =
            walk::Walker::new(name, module.clone(), imports, &items, &mut scan.problems);
        syn::visit::Visit::visit_file(&mut walker, file);
        for (function, body) in walker.bodies {
            bodies
                .entry(function.clone())
                .or_default()
                .push((format!("{name}: {function}"), body));
        }
    }
    resolve(&bodies, &mut scan);
    scan
}

/// Carries the verbs of generic helpers back to their callers until nothing changes, then
/// keeps, per function body, the calls on named kinds.
fn resolve(bodies: &BTreeMap<String, Vec<(String, Body)>>, scan: &mut Scan) {
    let mut found: BTreeMap<&str, Found> = bodies
        .iter()
        .map(|(key, list)| {
            let all = list.iter().flat_map(|(_, b)| b.uses.iter().cloned());
            (key.as_str(), all.collect())
        })
        .collect();
    loop {
        let mut added = Vec::new();
        for (key, list) in bodies {
            for (_, body) in list {
                added.extend(bound(body, &found).into_iter().map(|u| (key.as_str(), u)));
            }
        }
        let mut changed = false;
        for (key, u) in added {
            changed |= found.entry(key).or_default().insert(u);
        }
        if !changed {
            break;
        }
    }
    for list in bodies.values() {
        for (at, body) in list {
            for call in &body.calls {
                check_bound(at, call, &found, &mut scan.problems);
            }
            for (target, verb, subresource) in body.uses.iter().cloned().chain(bound(body, &found))
            {
                if let Target::Kind(kind) = target {
                    scan.uses.insert(Use {
                        kind,
                        verb,
                        subresource,
                        at: at.clone(),
                    });
                }
            }
        }
    }
    scan.problems.sort();
    scan.problems.dedup();
}

/// The type parameters of generic `Api` calls of the callee: every one must be bound here.
fn check_bound(
    at: &str,
    call: &CallSite,
    found: &BTreeMap<&str, Found>,
    problems: &mut Vec<String>,
) {
    let params = |key: &str| -> Vec<String> {
        found
            .get(key)
            .into_iter()
            .flatten()
            .filter_map(|(t, _, _)| match t {
                Target::Param(p) => Some(p.clone()),
                Target::Kind(_) => None,
            })
            .collect()
    };
    match &call.callee {
        Callee::Ours(key) => {
            for p in params(key) {
                if !call.bindings.iter().any(|(q, _)| *q == p) {
                    problems.push(format!(
                        "{at}: the scan cannot tell the kind {p} of {key} here (name it with a \
                         turbofish or pass the Api)"
                    ));
                }
            }
        }
        Callee::Ambiguous(keys) => {
            if keys.iter().any(|k| !params(k).is_empty()) {
                problems.push(format!(
                    "{at}: calls one of {}, which the scan cannot tell apart (call it by its \
                     path)",
                    keys.join(", ")
                ));
            }
        }
        Callee::Other => {}
    }
}

/// The calls `body` makes through generic helpers, with the helpers' type parameters bound
/// to what the call site passes.
fn bound(body: &Body, found: &BTreeMap<&str, Found>) -> Found {
    let mut out = Found::new();
    for call in &body.calls {
        let Callee::Ours(key) = &call.callee else {
            continue;
        };
        for (target, verb, sub) in found.get(key.as_str()).into_iter().flatten() {
            let Target::Param(p) = target else { continue };
            for (param, to) in &call.bindings {
                if param == p {
                    out.insert((to.clone(), *verb, *sub));
                }
            }
        }
    }
    out
}
