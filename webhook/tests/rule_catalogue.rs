//! docs/admission-rules.md is the one place where a reader resolves a rule ID met in a denial,
//! a warning, a code comment or a document. This test keeps it complete and current: every ID
//! the webhook reports (passed to `deny` or `warn`, held in a constant or table, or in brackets
//! at the end of a message) and every ID-shaped token mentioned anywhere in the repository must
//! have a row in the catalogue's tables, and every row must name an ID the repository still
//! mentions.
//!
//! Only the standard library is used, so the scanners below are small hand-written lexers.

// A test that cannot read the repository should fail loudly, naming what it could not read.
#![allow(clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The catalogue, relative to the workspace root.
const CATALOGUE: &str = "docs/admission-rules.md";

/// This file, relative to the workspace root: its own text must not count as a mention.
const THIS_FILE: &str = "webhook/tests/rule_catalogue.rs";

/// Rule ID families known without looking at the code or the catalogue. Families found in the
/// code's rule IDs or in the catalogue are added to these, so a new family is checked as soon
/// as either names it; these keep a family checked even if its section were deleted. Tokens
/// such as `UTF-8`, `SHA-256` or `DNS-1123` are ID-shaped but belong to no family.
const SEED_FAMILIES: &[&str] = &[
    "AT", "CEL", "CONV", "DEF", "G1", "GB", "GC", "GK", "GN", "HA", "INV", "L", "PVC", "RG", "SC",
    "SH",
];

/// Where each ID was seen: ID to the places (file, and for code the route) that name it.
type Sightings = BTreeMap<String, BTreeSet<String>>;

/// The workspace root: the parent of this crate's manifest directory.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the webhook crate lives inside the workspace")
        .to_path_buf()
}

/// A character that continues a word, so an ID cannot start or end next to it.
fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The ID-shaped token starting at `chars[start]`, and where it ends, or `None`.
///
/// The shape is a family (`[A-Z][A-Z0-9]*`), one or more `-`-separated upper-case or digit
/// parts, optional `.digits` sub-rule parts (`GC-C21.17`) and an optional lower-case variant
/// letter after a digit (`GN-U4r`). A token followed by `*` names a family of rules (`GC-W*`), not a rule.
fn token_at(chars: &[char], start: usize) -> Option<(String, usize)> {
    let at = |i: usize| chars.get(i).copied();
    let upper_or_digit =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
    let digit = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit());
    if !at(start).is_some_and(|c| c.is_ascii_uppercase()) {
        return None;
    }
    if start > 0 && is_word(chars[start - 1]) {
        return None;
    }
    let mut i = start + 1;
    while upper_or_digit(at(i)) {
        i += 1;
    }
    let mut parts = 0;
    while at(i) == Some('-') && upper_or_digit(at(i + 1)) {
        i += 1;
        while upper_or_digit(at(i)) {
            i += 1;
        }
        parts += 1;
    }
    if parts == 0 {
        return None;
    }
    while at(i) == Some('.') && digit(at(i + 1)) {
        i += 1;
        while digit(at(i)) {
            i += 1;
        }
    }
    if digit(at(i - 1))
        && at(i).is_some_and(|c| c.is_ascii_lowercase())
        && !at(i + 1).is_some_and(is_word)
    {
        i += 1;
    }
    if at(i).is_some_and(|c| is_word(c) || c == '*') {
        return None;
    }
    Some((chars[start..i].iter().collect(), i))
}

/// Every ID-shaped token in `text`, left to right.
fn tokens(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match token_at(&chars, i) {
            Some((token, end)) => {
                out.push(token);
                i = end;
            }
            None => i += 1,
        }
    }
    out
}

/// The family of an ID: the part before its first `-`.
fn family(id: &str) -> &str {
    id.split('-').next().unwrap_or_default()
}

/// `text` when it is exactly one ID-shaped token.
fn whole_token(text: &str) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    token_at(&chars, 0)
        .filter(|(_, end)| *end == chars.len())
        .map(|(t, _)| t)
}

/// One string literal of a Rust source: its text (escapes left as written, which no rule ID
/// contains) and where it starts.
struct Literal {
    /// The literal's content between the quotes.
    text: String,
    /// Byte offset of the opening quote, to find what precedes it.
    start: usize,
}

/// The string literals of a Rust source, skipping comments and char literals (a `'"'` would
/// otherwise open a string) so that quotes inside them do not derail the scan.
fn literals(source: &str) -> Vec<Literal> {
    let chars: Vec<(usize, char)> = source.char_indices().collect();
    let at = |i: usize| chars.get(i).map(|(_, c)| *c);
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i].1;
        if c == '/' && at(i + 1) == Some('/') {
            while i < chars.len() && chars[i].1 != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == Some('*') {
            let mut depth = 1;
            i += 2;
            while i < chars.len() && depth > 0 {
                if chars[i].1 == '/' && at(i + 1) == Some('*') {
                    depth += 1;
                    i += 2;
                } else if chars[i].1 == '*' && at(i + 1) == Some('/') {
                    depth -= 1;
                    i += 2;
                } else {
                    i += 1;
                }
            }
        } else if c == '\'' {
            // A char literal ('x', '\n', '\''), else a lifetime or label.
            if at(i + 1) == Some('\\') {
                i += 3;
                while i < chars.len() && chars[i].1 != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == Some('\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c == 'r'
            && (i == 0 || !is_word(chars[i - 1].1) || chars[i - 1].1 == 'b')
            && matches!(at(i + 1), Some('"' | '#'))
        {
            let mut hashes = 0;
            let mut j = i + 1;
            while at(j) == Some('#') {
                hashes += 1;
                j += 1;
            }
            if at(j) != Some('"') {
                i += 1;
                continue;
            }
            let start = chars[j].0;
            let close: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            let body_start = chars[j].0 + 1;
            let end = source[body_start..]
                .find(&close)
                .map_or(source.len(), |e| body_start + e);
            out.push(Literal {
                text: source[body_start..end].to_owned(),
                start,
            });
            let resume = end + close.len();
            i = chars.partition_point(|(offset, _)| *offset < resume);
        } else if c == '"' {
            let start = chars[i].0;
            let mut text = String::new();
            i += 1;
            while i < chars.len() && chars[i].1 != '"' {
                if chars[i].1 == '\\' {
                    text.push('\\');
                    i += 1;
                }
                if let Some(&(_, ch)) = chars.get(i) {
                    text.push(ch);
                }
                i += 1;
            }
            i += 1;
            out.push(Literal { text, start });
        } else {
            i += 1;
        }
    }
    out
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d).expect("readable source directory") {
            let path = entry.expect("readable directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `path` relative to the workspace root, with `/` separators, for messages.
fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The last characters of the source before a literal, without whitespace, so that a call
/// spelled over several lines (as rustfmt writes long calls) reads like one written on one line.
fn compact_tail(before: &str) -> String {
    before
        .chars()
        .rev()
        .take(64)
        .filter(|c| !c.is_whitespace())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect()
}

/// Whether `compact` ends with a call of `name(`: a name starting with `.` is a method of any
/// receiver, any other name must not be the end of a longer name (`undeny(`).
fn ends_with_call(compact: &str, name: &str) -> bool {
    compact.ends_with(&format!("{name}("))
        && (name.starts_with('.') || !compact[..compact.len() - name.len() - 1].ends_with(is_word))
}

/// Whether the source text just before a literal is a call that takes a rule ID first:
/// `deny(`, `deny_all(verdict,` and `deny_first(verdict,`, or `.violation(`.
fn passes_rule_to_deny(before: &str) -> bool {
    let compact = compact_tail(before);
    ends_with_call(&compact, "deny")
        || ends_with_call(&compact, ".violation")
        || compact.ends_with("deny_all(verdict,")
        || compact.ends_with("deny_first(verdict,")
}

/// Whether the source text just before a literal is a `.warn(` call, whose first argument is
/// the warning's rule ID (`Verdict::warn` appends it to the message).
fn passes_rule_to_warn(before: &str) -> bool {
    ends_with_call(&compact_tail(before), ".warn")
}

/// What [`reported_ids`] found: the IDs and where, and how many `deny` and `warn` calls named
/// one, so the test can tell a scanner that stopped reading the code from a clean result.
struct Reported {
    /// Every reported ID, with the places that report it.
    ids: Sightings,
    /// `deny` calls (and their kin) with an ID literal.
    deny_calls: usize,
    /// `warn` calls with an ID literal.
    warn_calls: usize,
}

/// The rule IDs the webhook reports, by where they were found: the first argument of every
/// `deny` and `warn` call, every literal of the admission rules that is exactly an ID (IDs
/// reach `deny` through constants, tables and variables too), and every `[ID]` inside a
/// literal of `webhook/src` (a message may name another rule in brackets).
fn reported_ids(root: &Path) -> Reported {
    let src = root.join("webhook/src");
    let admission = src.join("admission");
    let mut ids = Sightings::new();
    let (mut deny_calls, mut warn_calls) = (0, 0);
    for path in rust_files(&src) {
        let source = fs::read_to_string(&path).expect("UTF-8 source");
        let file = relative(root, &path);
        for literal in literals(&source) {
            let id = whole_token(&literal.text);
            let before = &source[..literal.start];
            if let Some(id) = &id
                && passes_rule_to_deny(before)
            {
                deny_calls += 1;
                ids.entry(id.clone())
                    .or_default()
                    .insert(format!("{file} (deny)"));
            } else if let Some(id) = &id
                && passes_rule_to_warn(before)
            {
                warn_calls += 1;
                ids.entry(id.clone())
                    .or_default()
                    .insert(format!("{file} (warn)"));
            } else if let Some(id) = id.filter(|_| path.starts_with(&admission)) {
                ids.entry(id)
                    .or_default()
                    .insert(format!("{file} (literal)"));
            }
            for (i, _) in literal.text.match_indices('[') {
                let inner = &literal.text[i + 1..];
                if let Some(end) = inner.find(']')
                    && let Some(id) = whole_token(&inner[..end])
                {
                    ids.entry(id)
                        .or_default()
                        .insert(format!("{file} (bracketed)"));
                }
            }
        }
    }
    Reported {
        ids,
        deny_calls,
        warn_calls,
    }
}

/// The simple entries of the `.gitignore` in `dir` (a plain name, optionally anchored with a
/// leading `/`): `(name, anchored)`. Glob patterns are not needed by this repository.
fn ignored_names(dir: &Path) -> Vec<(String, bool)> {
    let Ok(text) = fs::read_to_string(dir.join(".gitignore")) else {
        return Vec::new();
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter(|l| !l.contains(['*', '?', '[', '!']))
        .filter_map(|l| {
            let anchored = l.starts_with('/');
            let name = l.trim_matches('/');
            (!name.contains('/')).then(|| (name.to_owned(), anchored))
        })
        .collect()
}

/// Every text file of the repository: the workspace without `.git`, build output and what the
/// `.gitignore` files exclude. A file that is not UTF-8 or holds a NUL byte is not text.
fn text_files(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, Vec<String>)> = vec![(root.to_path_buf(), Vec::new())];
    while let Some((dir, inherited)) = stack.pop() {
        let here = ignored_names(&dir);
        let skipped = |name: &str| {
            name == ".git"
                || name == "target"
                || inherited.iter().any(|n| n == name)
                || here.iter().any(|(n, _)| n == name)
        };
        let mut below = inherited.clone();
        below.extend(here.iter().filter(|(_, a)| !a).map(|(n, _)| n.clone()));
        for entry in fs::read_dir(&dir).expect("readable directory") {
            let entry = entry.expect("readable directory entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type().expect("file type");
            if skipped(&name) || kind.is_symlink() {
                continue;
            }
            let path = entry.path();
            if kind.is_dir() {
                stack.push((path, below.clone()));
            } else if let Ok(bytes) = fs::read(&path)
                && !bytes.contains(&0)
                && let Ok(text) = String::from_utf8(bytes)
            {
                out.push((path, text));
            }
        }
    }
    out.sort();
    out
}

/// One table row of the catalogue: its line number and the IDs of its first cell.
struct Row {
    /// 1-based line number in the catalogue.
    line: usize,
    /// The IDs the row lists.
    ids: Vec<String>,
    /// How many cells the row has.
    cells: usize,
}

/// The rows of the catalogue's tables, without header and separator rows.
fn catalogue_rows(text: &str) -> Vec<Row> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with('|'))
        .filter_map(|(n, l)| {
            let cells: Vec<&str> = l
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            let first = cells.first().copied().unwrap_or_default();
            (first != "ID" && !first.starts_with("---")).then(|| Row {
                line: n + 1,
                ids: tokens(first),
                cells: cells.len(),
            })
        })
        .collect()
}

/// Up to three places, for a message.
fn places(seen: &BTreeSet<String>) -> String {
    let shown: Vec<&str> = seen.iter().take(3).map(String::as_str).collect();
    let more = seen.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

#[test]
fn every_rule_id_in_the_repository_has_a_line_in_the_catalogue_and_no_line_is_stale() {
    let root = workspace();
    let catalogue = fs::read_to_string(root.join(CATALOGUE)).expect("the catalogue exists");
    let rows = catalogue_rows(&catalogue);
    let Reported {
        ids: reported,
        deny_calls,
        warn_calls,
    } = reported_ids(&root);

    // A scanner that finds nothing would let everything pass.
    assert!(
        deny_calls > 100 && reported.len() > 100,
        "the deny scanner found only {deny_calls} calls and {} IDs in webhook/src; it no longer reads the code",
        reported.len()
    );
    assert!(
        warn_calls > 50,
        "the warn scanner found only {warn_calls} calls in webhook/src; it no longer reads the code"
    );
    assert!(
        rows.len() > 100,
        "only {} catalogue rows parsed",
        rows.len()
    );

    let mut problems = Vec::new();
    let mut listed: BTreeMap<String, usize> = BTreeMap::new();
    for row in &rows {
        if row.cells != 3 {
            problems.push(format!(
                "{CATALOGUE}:{}: a row has {} cells; write `| ID | what it refuses or warns about | why |`",
                row.line, row.cells
            ));
        }
        if row.ids.is_empty() {
            problems.push(format!("{CATALOGUE}:{}: a row names no rule ID", row.line));
        }
        for id in &row.ids {
            // A row may repeat its ID in a range, e.g. `GC-W5 (GC-W5..W7)`.
            if let Some(previous) = listed.insert(id.clone(), row.line)
                && previous != row.line
            {
                problems.push(format!(
                    "{CATALOGUE}:{}: {id} is listed again (first on line {previous})",
                    row.line
                ));
            }
        }
    }

    let families: BTreeSet<&str> = SEED_FAMILIES
        .iter()
        .copied()
        .chain(reported.keys().map(|id| family(id)))
        .chain(listed.keys().map(|id| family(id)))
        .collect();
    let mut mentioned = Sightings::new();
    for (path, text) in text_files(&root) {
        let file = relative(&root, &path);
        if file == CATALOGUE || file == THIS_FILE {
            continue;
        }
        for id in tokens(&text) {
            if families.contains(family(&id)) {
                mentioned.entry(id).or_default().insert(file.clone());
            }
        }
    }

    for (id, seen) in &reported {
        if !listed.contains_key(id) {
            problems.push(format!(
                "{id} is reported by the webhook ({}) but has no row in {CATALOGUE}",
                places(seen)
            ));
        }
    }
    for (id, seen) in &mentioned {
        if !listed.contains_key(id) && !reported.contains_key(id) {
            problems.push(format!(
                "{id} is mentioned in {} but has no row in {CATALOGUE}",
                places(seen)
            ));
        }
    }
    for (id, line) in &listed {
        if !mentioned.contains_key(id) {
            problems.push(format!(
                "{CATALOGUE}:{line}: {id} is listed but nothing else in the repository mentions it; remove the stale row"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "the rule catalogue is out of step with the repository:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_token_scanner_finds_rule_ids_and_only_rule_shaped_tokens() {
    let found = tokens(
        "refused [GC-C15]; GC-C21.17, GN-U4r and GC-VAC-1 (GC-U1..U9); GC-W* is a family; \
         UTF-8 and SHA-256 are shaped alike; gc-c3 and [A-Za-z0-9] are not",
    );
    // `GC-W*` names a family, `A-Za` runs into a lower-case letter: neither is a token.
    let expected = [
        "GC-C15",
        "GC-C21.17",
        "GN-U4r",
        "GC-VAC-1",
        "GC-U1",
        "UTF-8",
        "SHA-256",
    ];
    assert_eq!(found, expected);
    // Shaped like IDs, but of no rule family, so they are never demanded of the catalogue.
    assert!(!SEED_FAMILIES.contains(&family("UTF-8")));
    assert!(!SEED_FAMILIES.contains(&family("SHA-256")));
}

#[test]
fn the_literal_scanner_reads_ids_passed_over_several_lines_and_skips_comments() {
    let source = "// \"GC-C1\" in a comment\nlet q = '\"';\nverdict.deny(\n    \"GN-C4\",\n    field,\n);\nlet w = r#\"x [GK-W3]\"#;\nverdict\n    .warn(\n        \"GC-W8\",\n        \"EmptyDir\",\n    );";
    let literals = literals(source);
    let texts: Vec<&str> = literals.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(texts, ["GN-C4", "x [GK-W3]", "GC-W8", "EmptyDir"]);
    assert!(passes_rule_to_deny(&source[..literals[0].start]));
    assert!(!passes_rule_to_deny("undeny("));
    assert!(passes_rule_to_warn(&source[..literals[2].start]));
    assert!(!passes_rule_to_warn(&source[..literals[0].start]));
    assert!(!passes_rule_to_warn("forewarn("));
}
