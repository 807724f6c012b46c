//! The checks, over everything they compare loaded once.

use std::collections::{BTreeMap, BTreeSet};

use super::entries::{self, Classification, Entry, State};
use super::schema::{self, Schemas};
use super::source::{self, Names};
use super::{repo, serde_names};

/// Markers around the generated gap list in `docs/compatibility.md`.
const BEGIN: &str = "<!-- field-states gaps: begin -->";
const END: &str = "<!-- field-states gaps: end -->";

/// What the checks compare.
pub struct World {
    schemas: Schemas,
    file: Classification,
    code: Names,
    shared_fns: BTreeMap<String, source::Names>,
    rust_names: BTreeMap<String, BTreeSet<String>>,
    annotations: BTreeSet<String>,
    rule_ids: BTreeSet<String>,
}

impl World {
    /// Loads the CRDs, the file, the reconciler's source and the rule catalogue.
    pub fn load() -> Self {
        let repo = repo();
        let shared = repo.join("shared-types/src");
        Self {
            schemas: schema::load(&repo.join("crds")),
            file: entries::load(&repo.join("docs/compatibility/field-states.yaml")),
            code: source::scan(&[&repo.join("reconciler/src"), &repo.join("decide/src")]),
            shared_fns: source::reads_by_function(&shared),
            rust_names: serde_names::json_to_rust(&shared),
            annotations: annotation_constants(&shared.join("keys/annotation.rs")),
            rule_ids: rule_ids(
                &std::fs::read_to_string(repo.join("docs/admission-rules.md")).expect("rules"),
            ),
        }
    }

    /// Every `(Kind/version, path, entry key, entry)`, one per schema path that has an entry.
    fn classified(&self) -> impl Iterator<Item = (&String, &String, &String, &Entry)> {
        self.schemas.paths.iter().flat_map(move |(kv, paths)| {
            let entries = self.file.fields.get(kv);
            paths.iter().filter_map(move |p| {
                let (key, entry) = entries.and_then(|e| entries::entry_for(e, p))?;
                Some((kv, p, key, entry))
            })
        })
    }

    /// Paths and annotations without an entry, entries naming nothing, misused groups.
    pub fn coverage_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (kv, paths) in &self.schemas.paths {
            let entries = self.file.fields.get(kv);
            for p in paths {
                if entries.and_then(|e| entries::entry_for(e, p)).is_none() {
                    out.push(format!("{kv} {p}: no entry; classify it"));
                }
            }
        }
        for (kv, entries) in &self.file.fields {
            let Some(paths) = self.schemas.paths.get(kv) else {
                out.push(format!(
                    "{kv}: no served CRD version of that name; remove it"
                ));
                continue;
            };
            let containers = &self.schemas.containers[kv];
            for (key, entry) in entries {
                if containers.contains(key) {
                    // A status field not written at all is one gap; a spec gap is listed
                    // field by field so that each one shows.
                    if entry.state == State::Gap && !key.starts_with("status.") {
                        out.push(format!(
                            "{kv} {key}: a spec gap is listed field by field, not as a group"
                        ));
                    }
                } else if !paths.contains(key) {
                    out.push(format!(
                        "{kv} {key}: no such field in crds/; remove or rename it"
                    ));
                }
            }
        }
        for name in self.annotations.difference(&keys(&self.file.annotations)) {
            out.push(format!("annotation {name}: no entry; classify it"));
        }
        for name in keys(&self.file.annotations).difference(&self.annotations) {
            out.push(format!(
                "annotation {name}: no such constant in shared-types/src/keys/annotation.rs"
            ));
        }
        for name in schema::EMBEDDED {
            if !self.schemas.embedded_seen.contains(name) {
                out.push(format!(
                    "embedded name {name} is held by no schema; drop it"
                ));
            }
        }
        out
    }

    /// The Rust field names `json` stands for, or a problem.
    fn rust_names(&self, kv: &str, path: &str, json: &str) -> Result<&BTreeSet<String>, String> {
        self.rust_names.get(json).ok_or_else(|| {
            format!("{kv} {path}: no field in shared-types/src serialises as `{json}`")
        })
    }

    /// Acted-on entries whose names the code does not read (or, under `status`, write).
    pub fn acted_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (kv, path, key, entry) in self.classified() {
            if entry.state != State::Acted {
                continue;
            }
            let (missing, how) = self.unused_names(kv, path, key, entry, &mut out);
            if !missing.is_empty() {
                out.push(format!(
                    "{kv} {path} (entry {key}): never {how} in reconciler/src: {}",
                    missing.join(", ")
                ));
            }
        }
        for (name, entry) in &self.file.annotations {
            // Or named by the shared-types function of `via`, which the reconciler calls.
            let via = entry.via.as_ref().is_some_and(|v| {
                self.code.calls.contains(v)
                    && self
                        .shared_fns
                        .get(v)
                        .is_some_and(|f| f.paths.contains(name))
            });
            if entry.state == State::Acted && !self.code.paths.contains(name) && !via {
                out.push(format!("annotation {name}: never named in reconciler/src"));
            }
        }
        out.dedup();
        out
    }

    /// Gap entries every path of which the code reads (status: writes) by every name, so
    /// probably not gaps; and `read_elsewhere` notes that no longer apply.
    pub fn read_gaps(&self) -> Vec<String> {
        let mut out = Vec::new();
        // Per gap entry: whether each path it covers has all its names used.
        let mut used: BTreeMap<(&String, &String), (bool, &Entry, &'static str)> = BTreeMap::new();
        for (kv, path, key, entry) in self.classified() {
            if entry.state == State::Gap {
                let (missing, how) = self.unused_names(kv, path, key, entry, &mut out);
                let all = used.entry((kv, key)).or_insert((true, entry, how));
                all.0 &= missing.is_empty();
            }
        }
        for ((kv, key), (all_used, entry, how)) in used {
            match (all_used, &entry.read_elsewhere) {
                (true, None) => out.push(format!(
                    "{kv} {key}: every name of it is {how} in reconciler/src; say `acted`, or \
                     `read_elsewhere` with where those names belong to something else"
                )),
                (false, Some(_)) => out.push(format!(
                    "{kv} {key}: `read_elsewhere` is stale, the names are not all {how}"
                )),
                _ => {}
            }
        }
        for (name, entry) in &self.file.annotations {
            if entry.state == State::Gap && self.code.paths.contains(name) {
                out.push(format!("annotation {name}: named in reconciler/src"));
            }
        }
        out
    }

    /// The Rust names along `path` that the code does not read (status: write), and which of
    /// the two was looked for. Names the types do not know are reported into `out`.
    fn unused_names(
        &self,
        kv: &str,
        path: &str,
        key: &str,
        entry: &Entry,
        out: &mut Vec<String>,
    ) -> (Vec<String>, &'static str) {
        let (segments, found, how) = match path.strip_prefix("status.") {
            Some(rest) => (rest, &self.code.written, "written"),
            None => (
                path.strip_prefix("spec.").unwrap_or(path),
                &self.code.read,
                "read",
            ),
        };
        let via = self.via_reads(kv, key, entry, out);
        let mut missing = Vec::new();
        for json in entries::segments(segments) {
            match self.rust_names(kv, path, json) {
                Err(e) => out.push(e),
                Ok(names) => {
                    let hit = names
                        .iter()
                        .any(|n| found.contains(n) || via.is_some_and(|v| v.contains(n)));
                    if !hit {
                        missing.extend(names.iter().map(|n| format!("`{n}`")));
                    }
                }
            }
        }
        (missing, how)
    }

    /// The field reads of the entry's `via` function, when the reconciler calls it.
    fn via_reads(
        &self,
        kv: &str,
        key: &str,
        entry: &Entry,
        out: &mut Vec<String>,
    ) -> Option<&BTreeSet<String>> {
        let via = entry.via.as_ref()?;
        let reads = self.shared_fns.get(via).map(|f| &f.read);
        if reads.is_none() || !self.code.calls.contains(via) {
            out.push(format!(
                "{kv} {key}: via `{via}` must be a function of shared-types/src that reconciler/src calls"
            ));
        }
        reads
    }

    /// Refused entries without a known rule or `Unsupported` message; no-ops without a reason.
    pub fn refusal_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let named = self
            .file
            .fields
            .iter()
            .flat_map(|(kv, e)| e.iter().map(move |(k, v)| (format!("{kv} {k}"), k, v)))
            .chain(
                self.file
                    .annotations
                    .iter()
                    .map(|(k, v)| (format!("annotation {k}"), k, v)),
            );
        for (label, key, entry) in named {
            match (entry.state, entry.rule.as_deref()) {
                (State::Refused, Some("Unsupported")) => {
                    let reported = self
                        .code
                        .unsupported
                        .iter()
                        .any(|m| m == key || m.starts_with(&format!("{key} ")));
                    if !reported {
                        out.push(format!(
                            "{label}: no `Unsupported(\"{key}...\")` in reconciler/src"
                        ));
                    }
                }
                (State::Refused, Some(id)) if !self.rule_ids.contains(id) => {
                    out.push(format!(
                        "{label}: rule {id} is not in docs/admission-rules.md"
                    ));
                }
                (State::Refused, None) => {
                    out.push(format!("{label}: refused by what? give `rule`"));
                }
                (State::NoOp, _) if !entry.why.contains("Go operator") => {
                    out.push(format!(
                        "{label}: a no-op must say why the Go operator ignores it too"
                    ));
                }
                (State::Acted | State::NoOp | State::Gap, Some(_)) => {
                    out.push(format!("{label}: `rule` belongs to refused entries only"));
                }
                _ => {}
            }
        }
        out
    }

    /// One line per gap, as the compatibility page lists them.
    pub fn gap_lines(&self) -> Vec<String> {
        let fields = self
            .file
            .fields
            .iter()
            .flat_map(|(kv, e)| e.iter().map(move |(k, v)| (format!("{kv} {k}"), v)));
        let annotations = self
            .file
            .annotations
            .iter()
            .map(|(k, v)| (format!("annotation {k}"), v));
        fields
            .chain(annotations)
            .filter(|(_, e)| e.state == State::Gap)
            .map(|(label, e)| format!("- `{label}`: {}", e.why))
            .collect()
    }

    /// How many schema paths and annotations are in `state`, and how many entries.
    pub fn count(&self, state: State) -> (usize, usize) {
        let paths = self.classified().filter(|c| c.3.state == state).count();
        let entries = self.file.fields.values().flat_map(|e| e.values());
        let annotations = self.file.annotations.values();
        let in_state = |e: &&Entry| e.state == state;
        let annotation_count = annotations.filter(in_state).count();
        (
            paths + annotation_count,
            entries.filter(in_state).count() + annotation_count,
        )
    }
}

fn keys(map: &BTreeMap<String, Entry>) -> BTreeSet<String> {
    map.keys().cloned().collect()
}

/// The names of the `pub const` items of `annotation.rs`.
fn annotation_constants(file: &std::path::Path) -> BTreeSet<String> {
    source::parse(file)
        .items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Const(c) => Some(c.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// The IDs in the first column of the rule tables.
fn rule_ids(page: &str) -> BTreeSet<String> {
    page.lines()
        .filter_map(|l| l.strip_prefix("| ")?.split(" |").next())
        .filter(|id| {
            id.contains('-')
                && id
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || "-.".contains(c))
        })
        .map(str::to_owned)
        .collect()
}

/// The gap lines between the markers of the compatibility page.
pub fn listed_gaps(page: &str) -> Vec<String> {
    let Some((_, rest)) = page.split_once(BEGIN) else {
        return vec![format!("(no `{BEGIN}` marker)")];
    };
    let block = rest.split_once(END).map_or(rest, |(b, _)| b);
    block
        .lines()
        .filter(|l| l.starts_with("- "))
        .map(str::to_owned)
        .collect()
}
