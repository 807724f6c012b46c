//! Which Rust field each JSON property name is, read from the type definitions in
//! `shared-types/src`: `#[serde(rename = "...")]` where a field has one, else the struct's
//! `rename_all = "camelCase"`, else the field's own name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use syn::ext::IdentExt;
use syn::visit::Visit;

use super::source::{parse, rust_files};

/// The Rust field names a JSON property name stands for, across every struct of the crate.
pub fn json_to_rust(root: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut fields = Fields::default();
    for file in rust_files(root) {
        fields.visit_file(&parse(&file));
    }
    fields.0
}

#[derive(Default)]
struct Fields(BTreeMap<String, BTreeSet<String>>);

impl<'ast> Visit<'ast> for Fields {
    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        let camel = serde_value(&s.attrs, "rename_all").as_deref() == Some("camelCase");
        for field in &s.fields {
            let Some(ident) = &field.ident else { continue };
            let rust = ident.unraw().to_string();
            let json = serde_value(&field.attrs, "rename").unwrap_or_else(|| {
                if camel {
                    camel_case(&rust)
                } else {
                    rust.clone()
                }
            });
            self.0.entry(json).or_default().insert(rust);
        }
    }
}

/// serde's `camelCase` of a snake_case field name.
fn camel_case(snake: &str) -> String {
    let mut out = String::new();
    for (i, word) in snake.split('_').enumerate() {
        let mut chars = word.chars();
        match chars.next() {
            Some(first) if i > 0 => {
                out.extend(first.to_uppercase());
                out.push_str(chars.as_str());
            }
            _ => out.push_str(word),
        }
    }
    out
}

/// The string value of `key = "..."` inside `#[serde(...)]`, if any.
fn serde_value(attrs: &[syn::Attribute], key: &str) -> Option<String> {
    let mut found = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        // Unknown keys are skipped whatever their form (flag, `= value`, `(...)`).
        let _ = attr.parse_nested_meta(|meta| {
            if meta.input.peek(syn::Token![=]) {
                let value: syn::Expr = meta.value()?.parse()?;
                if meta.path.is_ident(key)
                    && let syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) = value
                {
                    found = Some(s.value());
                }
            } else if meta.input.peek(syn::token::Paren) {
                meta.parse_nested_meta(|inner| {
                    if inner.input.peek(syn::Token![=]) {
                        inner.value()?.parse::<syn::Expr>()?;
                    }
                    Ok(())
                })?;
            }
            Ok(())
        });
    }
    found
}
