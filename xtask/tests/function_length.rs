//! The shape of the product code. No product function is longer than 120 lines: a function that
//! long does several things, and its reader cannot see which decision a line belongs to. Product code is every `.rs` file of
//! the product crates' `src/` that is not a test file; a function is counted from the line of
//! its `fn` to the line of its closing brace, found at the signature's indentation (rustfmt
//! puts it there).

use std::path::{Path, PathBuf};

/// The crates that ship, by directory under the workspace root.
const PRODUCT: &[&str] = &[
    "shared-types/src",
    "webhook/src",
    "reconciler/src",
    "garage-admin/src",
    "garage-api-types/src",
    "decide/src",
    "certs/src",
];

/// Longest function allowed, in lines.
const LIMIT: usize = 120;

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A test file: named for tests, or inside a `tests` directory.
fn is_test_file(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.contains("test"))
        || path.components().any(|c| c.as_os_str() == "tests")
}

/// Every `.rs` file of the product crates, test files included.
fn product_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in PRODUCT {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(
        files.len() > 100,
        "only {} product files found under {}: the scan is looking in the wrong place",
        files.len(),
        root.display()
    );
    files
}

/// The name of the function a line starts, when it starts one with a body.
fn starts_function(line: &str) -> Option<&str> {
    let mut rest = line.trim_start();
    for prefix in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    if line.trim_end().ends_with(';') {
        return None;
    }
    rest.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .filter(|n| !n.is_empty())
}

/// `(lines, first line, name)` of every function in `text` longer than `limit`.
fn long_functions(text: &str, limit: usize) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = starts_function(line) else {
            continue;
        };
        let indent = line.len() - line.trim_start().len();
        let Some(open) = (i..lines.len()).find(|j| lines[*j].trim_end().ends_with('{')) else {
            continue;
        };
        let close = (open + 1..lines.len()).find(|j| {
            let l = lines[*j];
            l.len() - l.trim_start().len() == indent && l.trim_start().starts_with('}')
        });
        if let Some(close) = close
            && close - i + 1 > limit
        {
            out.push((close - i + 1, i + 1, name.to_owned()));
        }
    }
    out
}

#[test]
fn no_product_function_is_longer_than_120_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let files: Vec<PathBuf> = product_files(&root)
        .into_iter()
        .filter(|f| !is_test_file(f.strip_prefix(&root).unwrap_or(f)))
        .collect();
    let mut long = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for (n, at, name) in long_functions(&text, LIMIT) {
            long.push(format!(
                "{}:{at} {name}: {n} lines",
                file.strip_prefix(&root).unwrap_or(file).display()
            ));
        }
    }
    assert!(
        long.is_empty(),
        "functions over {LIMIT} lines; split them into named parts:\n{}",
        long.join("\n")
    );
}

#[test]
fn the_scan_finds_a_long_function_and_ignores_declarations() {
    let body = "    let x = 1;\n".repeat(130);
    let text = format!(
        "fn short() {{\n    1\n}}\n\npub async fn long(a: u8) -> u8 {{\n{body}}}\n\n    fn declared(&self);\n"
    );
    let found = long_functions(&text, LIMIT);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].2, "long");
    assert_eq!(found[0].0, 132);
    assert!(long_functions(&text, 200).is_empty());
}

/// One place for unit tests in every product crate: a short module keeps them at its end in
/// `#[cfg(test)] mod tests { ... }`; a longer one puts them in `<module>/tests.rs` (for
/// `foo.rs` and for `foo/mod.rs` alike), and a tests module that grows splits into
/// `<module>/tests/<topic>.rs`. These are the paths Rust looks in by itself, so a reader finds
/// a module's tests without reading an attribute. Fails on a `#[path = ...]` attribute and on
/// a file named `*_tests.rs`.
#[test]
fn unit_tests_live_where_rust_looks_for_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut found = Vec::new();
    for file in product_files(&root) {
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        if shown.ends_with("_tests.rs") {
            found.push(format!(
                "{shown}: a `_tests.rs` file; move it to its module's tests.rs"
            ));
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("#[path") {
                found.push(format!(
                    "{shown}:{}: a #[path] attribute; put the module where Rust looks for it",
                    i + 1
                ));
            }
        }
    }
    assert!(
        found.is_empty(),
        "unit tests outside the one layout:\n{}",
        found.join("\n")
    );
}
