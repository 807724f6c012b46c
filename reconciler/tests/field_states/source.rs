//! What the reconciler's source does with names, parsed with `syn`: which struct fields it
//! reads and writes, which paths (constants) it names, which functions it calls, and the
//! messages it reports as `Unsupported`.
//!
//! Test code (`#[cfg(test)]` items, `tests.rs`, `*_tests.rs`, `fixtures.rs`,
//! `test_support.rs`) is skipped: a field only a test touches is not acted on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use syn::ext::IdentExt;
use syn::visit::Visit;

/// Names found in a body of source.
#[derive(Debug, Default)]
pub struct Names {
    /// Field names read: `x.field` and `Struct { field, .. }` patterns (a write `x.f = v` is
    /// an `x.f` too: the check is coarse).
    pub read: BTreeSet<String>,
    /// Field names written: struct literal fields and `x.field = v`.
    pub written: BTreeSet<String>,
    /// Last segment of every path expression (`ANNOTATION_DRAIN`, `keys::ANNOTATION_DRAIN`).
    pub paths: BTreeSet<String>,
    /// Names of the functions and methods called.
    pub calls: BTreeSet<String>,
    /// String literals passed to a call whose path ends in `Unsupported`.
    pub unsupported: Vec<String>,
}

/// Scans every non-test `.rs` file under each of `roots` that exists.
pub fn scan(roots: &[&Path]) -> Names {
    let mut names = Names::default();
    for root in roots.iter().filter(|r| r.is_dir()) {
        for file in rust_files(root) {
            names.visit_file(&parse(&file));
        }
    }
    names
}

/// The field names each function of the files under `root` reads, and the paths (constants)
/// it names, by function name.
pub fn reads_by_function(root: &Path) -> BTreeMap<String, Names> {
    let mut out: BTreeMap<String, Names> = BTreeMap::new();
    for file in rust_files(root) {
        let mut bodies = Bodies::default();
        bodies.visit_file(&parse(&file));
        for (name, names) in bodies.0 {
            let entry = out.entry(name).or_default();
            entry.read.extend(names.read);
            entry.paths.extend(names.paths);
        }
    }
    out
}

/// Parses one file, panicking with its name.
pub fn parse(file: &Path) -> syn::File {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// Every `.rs` file under `root` that is not a test file, sorted.
pub fn rust_files(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("directory entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let test_file = matches!(&*name, "tests.rs" | "fixtures.rs" | "test_support.rs")
                || name.ends_with("_tests.rs");
            if path.is_dir() {
                dirs.push(path);
            } else if name.ends_with(".rs") && !test_file {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `#[cfg(test)]` on an item.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Path>()
                .is_ok_and(|p| p.is_ident("test"))
    })
}

fn member_name(m: &syn::Member) -> Option<String> {
    match m {
        syn::Member::Named(ident) => Some(ident.unraw().to_string()),
        syn::Member::Unnamed(_) => None,
    }
}

impl<'ast> Visit<'ast> for Names {
    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        if !test_only(&i.attrs) {
            syn::visit::visit_item_mod(self, i);
        }
    }
    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        if !test_only(&i.attrs) {
            syn::visit::visit_item_fn(self, i);
        }
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !test_only(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }
    fn visit_expr_field(&mut self, e: &'ast syn::ExprField) {
        self.read.extend(member_name(&e.member));
        syn::visit::visit_expr_field(self, e);
    }
    fn visit_field_pat(&mut self, p: &'ast syn::FieldPat) {
        self.read.extend(member_name(&p.member));
        syn::visit::visit_field_pat(self, p);
    }
    fn visit_field_value(&mut self, f: &'ast syn::FieldValue) {
        self.written.extend(member_name(&f.member));
        syn::visit::visit_field_value(self, f);
    }
    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        if let syn::Expr::Field(f) = &*a.left {
            self.written.extend(member_name(&f.member));
        }
        syn::visit::visit_expr_assign(self, a);
    }
    // A constant in a match arm (`ANNOTATION_DRAIN => ..`) parses as an identifier pattern;
    // one in SCREAMING_CASE is a constant, not a new binding.
    fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
        let name = p.ident.unraw().to_string();
        if name.len() > 1
            && name
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        {
            self.paths.insert(name);
        }
        syn::visit::visit_pat_ident(self, p);
    }
    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        self.paths
            .extend(p.path.segments.last().map(|s| s.ident.to_string()));
        syn::visit::visit_expr_path(self, p);
    }
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        self.calls.insert(m.method.to_string());
        syn::visit::visit_expr_method_call(self, m);
    }
    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let syn::Expr::Path(p) = &*c.func {
            let last = p.path.segments.last().map(|s| s.ident.to_string());
            if last.as_deref() == Some("Unsupported") {
                self.unsupported.extend(c.args.iter().filter_map(literal));
            }
            self.calls.extend(last);
        }
        syn::visit::visit_expr_call(self, c);
    }
}

fn literal(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => Some(s.value()),
        _ => None,
    }
}

/// The fields each function body reads, by function name (free functions and methods).
#[derive(Default)]
struct Bodies(BTreeMap<String, Names>);

impl Bodies {
    fn record(&mut self, name: &syn::Ident, block: &syn::Block) {
        let mut names = Names::default();
        names.visit_block(block);
        let entry = self.0.entry(name.to_string()).or_default();
        entry.read.extend(names.read);
        entry.paths.extend(names.paths);
    }
}

impl<'ast> Visit<'ast> for Bodies {
    fn visit_item_mod(&mut self, i: &'ast syn::ItemMod) {
        if !test_only(&i.attrs) {
            syn::visit::visit_item_mod(self, i);
        }
    }
    fn visit_item_fn(&mut self, i: &'ast syn::ItemFn) {
        if !test_only(&i.attrs) {
            self.record(&i.sig.ident, &i.block);
        }
    }
    fn visit_impl_item_fn(&mut self, i: &'ast syn::ImplItemFn) {
        if !test_only(&i.attrs) {
            self.record(&i.sig.ident, &i.block);
        }
    }
}
