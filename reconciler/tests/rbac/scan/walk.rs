//! Walks every function body of one file, following each `Api` value to what is done with it.

use std::collections::{HashMap, HashSet};

use syn::visit::Visit;
use syn::{Expr, FnArg, Pat, PathArguments, ReturnType};

use super::items::{Callee, Items, Position, Positioned, key, positioned_visits};
use super::syntax::{
    INERT, UNTYPED_CLIENT_CALLS, WATCHING_FUNCTIONS, WATCHING_METHODS, address, api_kind,
    bracket_types, constructor, is_test_only, is_untyped, segments, strip, target, type_args,
    verbs_of,
};
use super::{Body, CallSite, Target};

/// The walk of one file.
pub struct Walker<'a> {
    file: &'a str,
    items: &'a Items,
    imports: HashMap<String, String>,
    problems: &'a mut Vec<String>,
    /// `(key, body)` of every function walked.
    pub bodies: Vec<(String, Body)>,
    at: Position,
    /// The function being walked: its key, type parameters and whether it returns an `Api`.
    function: String,
    type_params: Vec<String>,
    returns_api: bool,
    env: HashMap<String, Target>,
    body: Body,
    /// `Api` expressions a surrounding construct has accounted for.
    consumed: HashSet<usize>,
}

impl<'a> Walker<'a> {
    /// A walk of `file`, the module `module`, with `imports` in scope.
    pub fn new(
        file: &'a str,
        module: String,
        imports: HashMap<String, String>,
        items: &'a Items,
        problems: &'a mut Vec<String>,
    ) -> Self {
        Walker {
            file,
            items,
            imports,
            problems,
            bodies: Vec::new(),
            at: Position {
                module,
                impl_type: None,
            },
            function: String::new(),
            type_params: Vec::new(),
            returns_api: false,
            env: HashMap::new(),
            body: Body::default(),
            consumed: HashSet::new(),
        }
    }

    fn problem(&mut self, what: String) {
        self.problems
            .push(format!("{}: {}: {what}", self.file, self.function));
    }

    fn walk_function(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let outer = (
            std::mem::take(&mut self.function),
            std::mem::take(&mut self.type_params),
            std::mem::take(&mut self.env),
            std::mem::take(&mut self.body),
            self.returns_api,
        );
        self.function = key(&self.at.module, self.at.impl_type.as_deref(), sig);
        self.type_params = sig
            .generics
            .type_params()
            .map(|p| p.ident.to_string())
            .collect();
        self.returns_api = matches!(&sig.output, ReturnType::Type(_, ty) if api_kind(ty).is_some());
        for input in &sig.inputs {
            if let FnArg::Typed(t) = input
                && let (Pat::Ident(name), Some(k)) = (&*t.pat, api_kind(&t.ty))
                && let Some(target) = target(k, &self.type_params)
            {
                self.env.insert(name.ident.to_string(), target);
            }
        }
        self.visit_block(block);
        let body = std::mem::take(&mut self.body);
        self.bodies.push((self.function.clone(), body));
        (
            self.function,
            self.type_params,
            self.env,
            self.body,
            self.returns_api,
        ) = outer;
    }

    /// What a path written in this file calls (`Self` is the type of the enclosing `impl`).
    fn callee(&self, path: &syn::Path) -> Callee {
        let mut segments = segments(path);
        if segments.first().map(String::as_str) == Some("Self")
            && let Some(t) = &self.at.impl_type
        {
            segments[0] = t.clone();
        }
        self.items
            .resolve(&segments, &self.at.module, &self.imports)
    }

    /// The kind of the `Api` `e` holds, when it holds one the scan can name.
    fn target_of(&self, e: &Expr) -> Option<Target> {
        match strip(e) {
            Expr::Path(p) => p
                .path
                .get_ident()
                .and_then(|i| self.env.get(&i.to_string()).cloned()),
            Expr::Field(f) => match &f.member {
                syn::Member::Named(n) => self
                    .items
                    .fields
                    .get(&n.to_string())
                    .cloned()
                    .map(Target::Kind),
                syn::Member::Unnamed(_) => None,
            },
            Expr::Call(c) => {
                if let Some(kind) = constructor(c) {
                    return kind.and_then(|k| target(k, &self.type_params));
                }
                let Expr::Path(p) = &*c.func else { return None };
                let sig = self.items.unique(&self.callee(&p.path))?;
                match sig.returns_api.clone()? {
                    Target::Kind(k) => Some(Target::Kind(k)),
                    Target::Param(param) => {
                        let index = sig.type_params.iter().position(|t| *t == param)?;
                        let args = type_args(&p.path.segments.last()?.arguments);
                        target(args.get(index)?, &self.type_params)
                    }
                }
            }
            _ => None,
        }
    }

    /// Accounts for a call: the `Api` values it is given and the type arguments of its
    /// turbofish. `name` is the function's or method's own name; `watching` says that it is
    /// one of kube-runtime's watchers.
    fn call<'e>(
        &mut self,
        callee: &Callee,
        name: &str,
        watching: bool,
        turbofish: Option<&syn::AngleBracketedGenericArguments>,
        args: impl Iterator<Item = &'e Expr>,
    ) {
        let generic = self
            .items
            .candidates(callee)
            .iter()
            .any(|s| !s.type_params.is_empty());
        let mut bindings: Vec<(String, Target)> = Vec::new();
        if let (Some(sig), Some(t)) = (self.items.unique(callee), turbofish) {
            let types = bracket_types(t)
                .into_iter()
                .filter_map(|ty| target(ty, &self.type_params));
            bindings.extend(sig.type_params.iter().cloned().zip(types));
        }
        for (index, arg) in args.enumerate() {
            if let Some(binding) = self.pass(callee, name, watching, index, arg) {
                bindings.push(binding);
            }
        }
        if generic {
            self.body.calls.push(CallSite {
                callee: callee.clone(),
                bindings,
            });
        }
    }

    /// Accounts for `arg`, passed at `index`; returns the binding of the callee's type
    /// parameter when that parameter is a generic `Api`.
    fn pass(
        &mut self,
        callee: &Callee,
        name: &str,
        watching: bool,
        index: usize,
        arg: &Expr,
    ) -> Option<(String, Target)> {
        let held = strip(arg);
        let known = self.target_of(arg);
        let untyped = is_untyped(held);
        if known.is_none() && !untyped {
            return None;
        }
        if index == 0 && watching {
            if let Some(t) = known {
                self.body.uses.insert((t.clone(), "list", None));
                self.body.uses.insert((t, "watch", None));
                self.consumed.insert(address(held));
            }
            return None;
        }
        let params: Vec<Target> = self
            .items
            .candidates(callee)
            .iter()
            .filter_map(|s| s.api_params.get(index).cloned().flatten())
            .collect();
        if params.is_empty() {
            self.problem(format!(
                "an Api passed to {name}, which the scan does not follow"
            ));
            return None;
        }
        // A named kind: the callee's own calls are on that kind already.
        if params.iter().all(|p| matches!(p, Target::Kind(_))) {
            self.consumed.insert(address(held));
            return None;
        }
        // A generic parameter: the callee's verbs apply to the argument's kind.
        match (
            known,
            self.items
                .unique(callee)
                .and_then(|s| s.api_params.get(index)),
        ) {
            (Some(t), Some(Some(Target::Param(p)))) => {
                self.consumed.insert(address(held));
                Some((p.clone(), t))
            }
            _ => {
                self.problem(format!(
                    "an Api passed to {name}, whose generic Api parameter the scan cannot bind"
                ));
                None
            }
        }
    }
}

impl<'ast> Positioned<'ast> for Walker<'_> {
    fn position(&mut self) -> &mut Position {
        &mut self.at
    }
    fn function(&mut self, sig: &'ast syn::Signature, block: &'ast syn::Block) {
        self.walk_function(sig, block);
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    positioned_visits!('ast);

    fn visit_local(&mut self, local: &'ast syn::Local) {
        let (pat, annotated) = match &local.pat {
            Pat::Type(t) => (
                &*t.pat,
                api_kind(&t.ty).and_then(|k| target(k, &self.type_params)),
            ),
            other => (other, None),
        };
        if let (Pat::Ident(name), Some(init)) = (pat, &local.init) {
            let held = strip(&init.expr);
            match annotated.or_else(|| self.target_of(&init.expr)) {
                Some(t) => {
                    self.env.insert(name.ident.to_string(), t);
                    self.consumed.insert(address(held));
                }
                // A name that no longer holds an Api.
                None => {
                    self.env.remove(&name.ident.to_string());
                }
            }
        }
        syn::visit::visit_local(self, local);
    }

    fn visit_expr_struct(&mut self, s: &'ast syn::ExprStruct) {
        for field in &s.fields {
            if let syn::Member::Named(n) = &field.member
                && self.items.fields.contains_key(&n.to_string())
            {
                self.consumed.insert(address(strip(&field.expr)));
            }
        }
        syn::visit::visit_expr_struct(self, s);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let method = m.method.to_string();
        if UNTYPED_CLIENT_CALLS.contains(&method.as_str()) {
            self.problem(format!(
                ".{method}(..) reaches the API without an Api; the scan cannot tell what for"
            ));
        }
        if let Some(t) = self.target_of(&m.receiver) {
            self.consumed.insert(address(strip(&m.receiver)));
            match verbs_of(&method) {
                Some(verbs) => {
                    for (verb, sub) in verbs {
                        self.body.uses.insert((t.clone(), verb, sub));
                    }
                }
                None if INERT.contains(&method.as_str()) => {}
                None => self.problem(format!("Api::{method} is not mapped to RBAC verbs")),
            }
        } else {
            let callee = match self.items.get(&format!(".{method}")) {
                [] => Callee::Other,
                _ => Callee::Ours(format!(".{method}")),
            };
            let watching = callee == Callee::Other && WATCHING_METHODS.contains(&method.as_str());
            self.call(
                &callee,
                &method,
                watching,
                m.turbofish.as_ref(),
                m.args.iter(),
            );
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let Expr::Path(p) = &*c.func
            && constructor(c).is_none()
            && let Some(last) = p.path.segments.last()
        {
            let path = segments(&p.path).join("::");
            if path.ends_with("Recorder::new") {
                let event = Target::Kind("Event".into());
                self.body.uses.insert((event.clone(), "create", None));
                self.body.uses.insert((event, "patch", None));
            }
            if path.starts_with("Discovery") || path.ends_with("discovery::oneshot") {
                self.problem(format!(
                    "{path} reads API discovery, which the scan does not map"
                ));
            }
            let callee = self.callee(&p.path);
            let name = last.ident.to_string();
            let turbofish = match &last.arguments {
                PathArguments::AngleBracketed(a) => Some(a),
                _ => None,
            };
            let watching = callee == Callee::Other
                && (path.ends_with("Controller::new")
                    || WATCHING_FUNCTIONS.contains(&name.as_str()));
            self.call(&callee, &name, watching, turbofish, c.args.iter());
        }
        syn::visit::visit_expr_call(self, c);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Arguments of macros (`tokio::join!`, `matches!`) are expressions too, when they parse
        // as a list of expressions; the addresses of these temporaries are forgotten after.
        let parser = syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated;
        if let Ok(exprs) = m.parse_body_with(parser) {
            let outer = self.consumed.clone();
            for e in &exprs {
                self.visit_expr(e);
            }
            self.consumed = outer;
        }
    }

    fn visit_expr(&mut self, e: &'ast Expr) {
        let is_api = match e {
            Expr::Call(c) => constructor(c).is_some(),
            Expr::Path(_) | Expr::Field(_) => self.target_of(e).is_some(),
            _ => false,
        };
        if is_api && !self.consumed.contains(&address(e)) {
            let untyped = is_untyped(e);
            if !(untyped && self.returns_api) {
                self.problem(if untyped {
                    "an Api constructor whose kind the scan cannot tell (name it: Api::<K>::..)"
                        .to_owned()
                } else {
                    "an Api used in a way the scan does not follow".to_owned()
                });
            }
        }
        syn::visit::visit_expr(self, e);
    }
}
