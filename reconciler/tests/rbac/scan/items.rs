//! The items of the whole source, read before any function body: the signatures of functions
//! (by module path), the struct fields typed `Api<K>`, the modules, and per file the names its
//! `use` items bring in, so that a call resolves to the function it names.

use std::collections::{BTreeSet, HashMap};

use syn::visit::Visit;
use syn::{FnArg, ReturnType};

use super::Target;
use super::syntax::{api_kind, is_test_only, target};

/// What calls need to know of a function of the scanned source.
#[derive(Debug, Clone, Default)]
pub struct Signature {
    pub type_params: Vec<String>,
    /// By argument position (without `self`): the kind of an `Api` parameter.
    pub api_params: Vec<Option<Target>>,
    pub returns_api: Option<Target>,
}

impl Signature {
    fn of(sig: &syn::Signature) -> Self {
        let type_params: Vec<String> = sig
            .generics
            .type_params()
            .map(|p| p.ident.to_string())
            .collect();
        let api_params = sig
            .inputs
            .iter()
            .filter_map(|a| match a {
                FnArg::Typed(t) => Some(api_kind(&t.ty).and_then(|k| target(k, &type_params))),
                FnArg::Receiver(_) => None,
            })
            .collect();
        let returns_api = match &sig.output {
            ReturnType::Type(_, ty) => api_kind(ty).and_then(|k| target(k, &type_params)),
            ReturnType::Default => None,
        };
        Signature {
            type_params,
            api_params,
            returns_api,
        }
    }
}

/// What a call path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Callee {
    /// A function of the source, by key.
    Ours(String),
    /// Several functions of the source share the name and the path does not say which.
    Ambiguous(Vec<String>),
    /// Nothing of the source (another crate, or a closure or local).
    Other,
}

/// The items of every file.
#[derive(Default)]
pub struct Items {
    pub signatures: HashMap<String, Vec<Signature>>,
    by_name: HashMap<String, BTreeSet<String>>,
    pub fields: HashMap<String, String>,
    modules: BTreeSet<String>,
}

/// `module::name`, or `name` at the crate root.
pub fn join(module: &str, name: &str) -> String {
    if module.is_empty() {
        name.to_owned()
    } else {
        format!("{module}::{name}")
    }
}

/// The module a file is: `controller/write.rs` is `controller::write`, `controller/mod.rs` is
/// `controller`, `lib.rs` the root.
pub fn module_of(file: &str) -> String {
    let path = file.trim_end_matches(".rs");
    let path = path.trim_end_matches("/mod");
    if path == "lib" {
        return String::new();
    }
    path.replace('/', "::")
}

/// Where a visitor is: the module, and the type of the enclosing `impl` block.
#[derive(Debug, Clone, Default)]
pub struct Position {
    pub module: String,
    pub impl_type: Option<String>,
}

/// A visitor that keeps its [`Position`] through inline modules and `impl` blocks and skips
/// test code; its `visit_item_mod` and `visit_item_impl` call these.
pub trait Positioned<'ast>: Visit<'ast> + Sized {
    /// Where the visitor is.
    fn position(&mut self) -> &mut Position;

    /// Called on entering an inline module.
    fn entered_module(&mut self) {}

    /// Called for every function outside test code.
    fn function(&mut self, sig: &'ast syn::Signature, block: &'ast syn::Block);

    fn enter_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_test_only(&m.attrs) {
            return;
        }
        let outer = self.position().clone();
        self.position().module = join(&outer.module, &m.ident.to_string());
        self.entered_module();
        syn::visit::visit_item_mod(self, m);
        *self.position() = outer;
    }

    fn enter_impl(&mut self, i: &'ast syn::ItemImpl) {
        if is_test_only(&i.attrs) {
            return;
        }
        let outer = self.position().impl_type.clone();
        self.position().impl_type = impl_type(i);
        syn::visit::visit_item_impl(self, i);
        self.position().impl_type = outer;
    }
}

/// The `Visit` methods of a [`Positioned`] visitor: modules and `impl` blocks keep its
/// position, and every function outside test code goes to [`Positioned::function`].
macro_rules! positioned_visits {
    ($a:lifetime) => {
        fn visit_item_mod(&mut self, m: &$a syn::ItemMod) {
            self.enter_mod(m);
        }
        fn visit_item_impl(&mut self, i: &$a syn::ItemImpl) {
            self.enter_impl(i);
        }
        fn visit_item_fn(&mut self, f: &$a syn::ItemFn) {
            if !is_test_only(&f.attrs) {
                self.function(&f.sig, &f.block);
            }
        }
        fn visit_impl_item_fn(&mut self, f: &$a syn::ImplItemFn) {
            if !is_test_only(&f.attrs) {
                self.function(&f.sig, &f.block);
            }
        }
    };
}
pub(super) use positioned_visits;

/// The key functions are known by: a method (with `self`) as `.name`, matched by name only
/// since the receiver's type is unknown; an associated function as `module::Type::name`; any
/// other function as `module::name`.
pub fn key(module: &str, impl_type: Option<&str>, sig: &syn::Signature) -> String {
    let name = sig.ident.to_string();
    match (sig.receiver(), impl_type) {
        (Some(_), _) => format!(".{name}"),
        (None, Some(t)) => join(&join(module, t), &name),
        (None, None) => join(module, &name),
    }
}

impl Items {
    /// Reads the items of `file`, the module `module`.
    pub fn read(&mut self, module: &str, file: &syn::File) {
        self.modules.insert(module.to_owned());
        let mut reader = Reader {
            items: self,
            at: Position {
                module: module.to_owned(),
                impl_type: None,
            },
        };
        reader.visit_file(file);
    }

    /// The signatures of the function `key`.
    pub fn get(&self, key: &str) -> &[Signature] {
        self.signatures.get(key).map_or(&[], Vec::as_slice)
    }

    /// The only signature of `callee`, when there is exactly one.
    pub fn unique(&self, callee: &Callee) -> Option<&Signature> {
        match callee {
            Callee::Ours(key) => match self.get(key) {
                [only] => Some(only),
                _ => None,
            },
            _ => None,
        }
    }

    /// Every signature `callee` may be.
    pub fn candidates(&self, callee: &Callee) -> Vec<&Signature> {
        match callee {
            Callee::Ours(key) => self.get(key).iter().collect(),
            Callee::Ambiguous(keys) => keys.iter().flat_map(|k| self.get(k)).collect(),
            Callee::Other => Vec::new(),
        }
    }

    /// What the call path `segments`, written in `module` with `imports` in scope, names:
    /// `crate::`, `self::`, `super::` and imported names are resolved; a path that resolves to
    /// nothing known falls back to the functions of that name (one, or ambiguous).
    pub fn resolve(
        &self,
        segments: &[String],
        module: &str,
        imports: &HashMap<String, String>,
    ) -> Callee {
        let Some(name) = segments.last() else {
            return Callee::Other;
        };
        if let Some(full) = self.absolute(segments, module, imports) {
            if self.signatures.contains_key(&full) {
                return Callee::Ours(full);
            }
            if full.starts_with("extern::") {
                return Callee::Other;
            }
        }
        match self
            .by_name
            .get(name.as_str())
            .map(|k| k.iter().collect::<Vec<_>>())
        {
            Some(keys) if keys.len() == 1 => Callee::Ours(keys[0].clone()),
            Some(keys) if !keys.is_empty() => {
                Callee::Ambiguous(keys.into_iter().cloned().collect())
            }
            _ => Callee::Other,
        }
    }

    /// `segments` as a path from the crate root, `extern::...` for another crate.
    pub fn absolute(
        &self,
        segments: &[String],
        module: &str,
        imports: &HashMap<String, String>,
    ) -> Option<String> {
        let (first, rest) = segments.split_first()?;
        let mut base: Vec<&str> = module.split("::").filter(|s| !s.is_empty()).collect();
        let start = match first.as_str() {
            "crate" | "reconciler" => String::new(),
            "self" => module.to_owned(),
            "super" => {
                base.pop();
                let mut rest = rest;
                while let Some(("super", more)) = rest.split_first().map(|(a, b)| (a.as_str(), b)) {
                    base.pop();
                    rest = more;
                }
                return Some(rest.iter().fold(base.join("::"), |m, s| join(&m, s)));
            }
            other => match imports.get(other) {
                Some(full) => full.clone(),
                // A child module, a function of this module, or a type defined here.
                None if self.modules.contains(&join(module, other))
                    || rest.is_empty()
                    || other.starts_with(char::is_uppercase) =>
                {
                    join(module, other)
                }
                None if self.modules.contains(other) => other.to_owned(),
                None => format!("extern::{other}"),
            },
        };
        Some(rest.iter().fold(start, |m, s| join(&m, s)))
    }

    /// The names the `use` items of `file` (in `module`) bring in, each with its full path.
    pub fn imports(&self, module: &str, file: &syn::File) -> HashMap<String, String> {
        let mut collector = Imports {
            items: self,
            module,
            found: HashMap::new(),
        };
        collector.visit_file(file);
        collector.found
    }
}

/// Collects signatures, fields and inline modules.
struct Reader<'a> {
    items: &'a mut Items,
    at: Position,
}

impl<'ast> Positioned<'ast> for Reader<'_> {
    fn position(&mut self) -> &mut Position {
        &mut self.at
    }
    fn entered_module(&mut self) {
        self.items.modules.insert(self.at.module.clone());
    }
    fn function(&mut self, sig: &'ast syn::Signature, _: &'ast syn::Block) {
        let key = key(&self.at.module, self.at.impl_type.as_deref(), sig);
        self.items
            .by_name
            .entry(sig.ident.to_string())
            .or_default()
            .insert(key.clone());
        self.items
            .signatures
            .entry(key)
            .or_default()
            .push(Signature::of(sig));
    }
}

/// The name of the type an `impl` block is for.
fn impl_type(i: &syn::ItemImpl) -> Option<String> {
    match &*i.self_ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

impl<'ast> Visit<'ast> for Reader<'_> {
    positioned_visits!('ast);

    fn visit_field(&mut self, f: &'ast syn::Field) {
        if let (Some(name), Some(Target::Kind(k))) =
            (&f.ident, api_kind(&f.ty).and_then(|k| target(k, &[])))
        {
            self.items.fields.insert(name.to_string(), k);
        }
    }
}

/// Collects the names `use` items bring in (outside test code).
struct Imports<'a> {
    items: &'a Items,
    module: &'a str,
    found: HashMap<String, String>,
}

impl Imports<'_> {
    fn tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) if n.ident == "self" => self.bind(prefix, prefix.last()),
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.bind(prefix, Some(&n.ident.to_string()));
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.bind(prefix, Some(&r.rename.to_string()));
                prefix.pop();
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.tree(prefix, t);
                }
            }
            syn::UseTree::Glob(_) => {}
        }
    }

    fn bind(&mut self, path: &[String], name: Option<&String>) {
        let empty = HashMap::new();
        if let (Some(name), Some(full)) = (name, self.items.absolute(path, self.module, &empty)) {
            self.found.insert(name.clone(), full);
        }
    }
}

impl<'ast> Visit<'ast> for Imports<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_only(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if !is_test_only(&u.attrs) {
            self.tree(&mut Vec::new(), &u.tree);
        }
    }
}
