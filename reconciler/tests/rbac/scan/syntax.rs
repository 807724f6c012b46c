//! What the scan knows of kube's `Api` and of Rust syntax: the RBAC verbs of each `Api`
//! method, the constructors, kube-runtime's watchers, and helpers over `syn` trees.

use syn::{Expr, GenericArgument, PathArguments, Type};

use super::Target;

/// `Api` methods and the RBAC verbs and subresource each one needs.
pub fn verbs_of(method: &str) -> Option<Vec<(&'static str, Option<&'static str>)>> {
    let one = |verb, sub| Some(vec![(verb, sub)]);
    match method {
        "get"
        | "get_opt"
        | "get_with"
        | "get_metadata"
        | "get_metadata_opt"
        | "get_metadata_with"
        | "get_metadata_opt_with" => one("get", None),
        "list" | "list_metadata" => one("list", None),
        "watch" | "watch_metadata" => one("watch", None),
        "create" => one("create", None),
        "replace" => one("update", None),
        "patch" | "patch_metadata" => one("patch", None),
        "delete" => one("delete", None),
        "delete_collection" => one("deletecollection", None),
        "get_status" => one("get", Some("status")),
        "patch_status" => one("patch", Some("status")),
        "replace_status" => one("update", Some("status")),
        "get_scale" => one("get", Some("scale")),
        "patch_scale" => one("patch", Some("scale")),
        "replace_scale" => one("update", Some("scale")),
        "evict" => one("create", Some("eviction")),
        "entry" => Some(vec![("get", None), ("create", None), ("update", None)]),
        _ => None,
    }
}

/// `Api` methods that make no request.
pub const INERT: [&str; 4] = ["clone", "into_client", "resource_url", "namespace"];

/// `Api` constructors.
const CONSTRUCTORS: [&str; 6] = [
    "namespaced",
    "all",
    "default_namespaced",
    "namespaced_with",
    "all_with",
    "default_namespaced_with",
];

/// kube-runtime functions that list and watch the `Api` they are given as first argument
/// (besides `Controller::new`).
pub const WATCHING_FUNCTIONS: [&str; 2] = ["watcher", "metadata_watcher"];
/// kube-runtime `Controller` methods that do the same.
pub const WATCHING_METHODS: [&str; 2] = ["owns", "watches"];

/// Client calls that reach the API without an `Api` (and so without a kind the scan can see).
pub const UNTYPED_CLIENT_CALLS: [&str; 8] = [
    "request",
    "request_text",
    "request_status",
    "request_events",
    "list_api_groups",
    "list_api_group_resources",
    "list_core_api_versions",
    "list_core_api_resources",
];

/// True for items compiled only in tests (`#[cfg(test)]`).
pub fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// `K` of a type `Api<K>` or `&Api<K>`.
pub fn api_kind(ty: &Type) -> Option<&Type> {
    match ty {
        Type::Reference(r) => api_kind(&r.elem),
        Type::Paren(p) => api_kind(&p.elem),
        Type::Path(p) => {
            let last = p.path.segments.last()?;
            (last.ident == "Api").then(|| first_type_arg(&last.arguments))?
        }
        _ => None,
    }
}

/// The type arguments of a path segment.
pub fn type_args(args: &PathArguments) -> Vec<&Type> {
    match args {
        PathArguments::AngleBracketed(a) => bracket_types(a),
        _ => Vec::new(),
    }
}

/// The type arguments of `<..>`.
pub fn bracket_types(a: &syn::AngleBracketedGenericArguments) -> Vec<&Type> {
    a.args
        .iter()
        .filter_map(|g| match g {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect()
}

fn first_type_arg(args: &PathArguments) -> Option<&Type> {
    type_args(args).into_iter().next()
}

/// The kind a type names: a type parameter of `params`, or the last path segment's name
/// (`PartialObjectMeta<K>` is `K`: metadata requests need the same permissions).
pub fn target(ty: &Type, params: &[String]) -> Option<Target> {
    match ty {
        Type::Reference(r) => target(&r.elem, params),
        Type::Path(p) => {
            let last = p.path.segments.last()?;
            let name = last.ident.to_string();
            if name == "PartialObjectMeta" {
                return target(first_type_arg(&last.arguments)?, params);
            }
            Some(if params.contains(&name) {
                Target::Param(name)
            } else {
                Target::Kind(name)
            })
        }
        _ => None,
    }
}

/// The segments of a path, without generic arguments.
pub fn segments(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// `e` without `&`, parentheses and `.clone()`: the expression that holds the `Api`.
pub fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Reference(r) => strip(&r.expr),
        Expr::Paren(p) => strip(&p.expr),
        Expr::MethodCall(m) if m.method == "clone" && m.args.is_empty() => strip(&m.receiver),
        _ => e,
    }
}

/// The `Api` constructor a call is, with the kind its turbofish names.
pub fn constructor(c: &syn::ExprCall) -> Option<Option<&Type>> {
    let Expr::Path(p) = &*c.func else { return None };
    let segments: Vec<_> = p.path.segments.iter().collect();
    let [.., api, ctor] = segments.as_slice() else {
        return None;
    };
    (api.ident == "Api" && CONSTRUCTORS.contains(&ctor.ident.to_string().as_str()))
        .then(|| first_type_arg(&api.arguments))
}

/// True for an `Api` constructor without a turbofish.
pub fn is_untyped(e: &Expr) -> bool {
    matches!(e, Expr::Call(c) if matches!(constructor(c), Some(None)))
}

/// Identity of a node of the parsed tree, to mark what has been accounted for.
pub fn address(e: &Expr) -> usize {
    std::ptr::from_ref(e) as usize
}
