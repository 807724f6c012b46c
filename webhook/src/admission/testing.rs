//! What the rule tables of every kind share: a case's expectation and its check, the JSON merge
//! patch cases are derived with, and a kind's rules run as the API server runs them.

use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use shared_types::garage_reference_grant::GarageReferenceGrant;

use super::{Context, Review, Verdict};

/// JSON merge patch (RFC 7386): `null` removes a key.
pub fn merge(mut base: Value, patch: Value) -> Value {
    json_patch::merge(&mut base, &patch);
    base
}

/// What a case expects.
pub enum Want {
    /// Allowed.
    Allow,
    /// Allowed with a warning containing the fragment.
    Warn(&'static str),
    /// Denied by the rule.
    Deny(&'static str),
    /// Denied by the rule with a message containing the fragment.
    DenyWith(&'static str, &'static str),
}

/// Asserts a verdict against the expectation of case `name`.
pub fn check(name: &str, verdict: &Verdict, want: &Want) {
    match want {
        Want::Allow => assert!(
            verdict.allowed(),
            "{name}: expected allowed, got {verdict:?}"
        ),
        Want::Warn(fragment) => {
            assert!(
                verdict.allowed(),
                "{name}: expected allowed, got {verdict:?}"
            );
            assert!(
                verdict.warnings().iter().any(|w| w.contains(fragment)),
                "{name}: expected warning {fragment:?}, got {:?}",
                verdict.warnings()
            );
        }
        Want::Deny(rule) => assert!(
            verdict.broke(rule),
            "{name}: expected {rule}, got {verdict:?}"
        ),
        Want::DenyWith(rule, fragment) => {
            assert!(
                verdict.broke(rule),
                "{name}: expected {rule}, got {verdict:?}"
            );
            assert!(
                verdict.message().contains(fragment),
                "{name}: expected message {fragment:?}, got {}",
                verdict.message()
            );
        }
    }
}

/// Whether `verdict` holds a warning that contains `fragment` and ends with rule `id` in
/// brackets, as every warning does.
pub fn warned(verdict: &Verdict, fragment: &str, id: &str) -> bool {
    let tag = format!("[{id}]");
    verdict
        .warnings()
        .iter()
        .any(|w| w.contains(fragment) && w.ends_with(&tag))
}

/// One kind's rules as the API server runs them: the mutating webhook's defaulter (`clone` for
/// a kind without one) applied to every submitted object, then the validator.
pub struct Subject<T> {
    /// The validator.
    pub validate: fn(Review<'_, T>, &Context) -> Verdict,
    /// The defaulter.
    pub default: fn(&T) -> T,
}

impl<T: DeserializeOwned> Subject<T> {
    /// The object of JSON `v`.
    pub fn decode(v: &Value) -> T {
        serde_json::from_value(v.clone()).expect("a test fixture decodes")
    }

    /// A CREATE of `v`.
    pub fn create(&self, v: &Value, ctx: &Context) -> Verdict {
        (self.validate)(Review::create(&(self.default)(&Self::decode(v))), ctx)
    }

    /// An UPDATE from the stored `old` (as written) to `new`.
    pub fn update(&self, old: &Value, new: &Value, ctx: &Context) -> Verdict {
        let (old, new) = (Self::decode(old), (self.default)(&Self::decode(new)));
        (self.validate)(Review::update(&old, &new), ctx)
    }

    /// A finalizer-only UPDATE of `old`: the spec is unchanged.
    pub fn cleanup(&self, old: &Value) -> Verdict {
        let new = merge(old.clone(), json!({"metadata": {"finalizers": null}}));
        self.update(old, &new, &Context::default())
    }

    /// A DELETE of `old`.
    pub fn delete(&self, old: &Value, ctx: &Context) -> Verdict {
        (self.validate)(Review::delete(&Self::decode(old)), ctx)
    }

    /// CREATE cases against an empty context.
    pub fn creates(&self, cases: Vec<(&str, Value, Want)>) {
        for (name, object, want) in cases {
            check(name, &self.create(&object, &Context::default()), &want);
        }
    }
}

/// A GarageReferenceGrant named `grant` in `namespace`.
pub fn grant_in(namespace: &str, spec: Value) -> GarageReferenceGrant {
    serde_json::from_value(json!({
        "apiVersion": "garage.rajsingh.info/v1beta1",
        "kind": "GarageReferenceGrant",
        "metadata": {"name": "grant", "namespace": namespace},
        "spec": spec,
    }))
    .expect("a grant fixture decodes")
}

/// A context holding grants of `namespace` with `specs`.
pub fn grants_in(namespace: &str, specs: Vec<Value>) -> Context {
    Context {
        reference_grants: specs.into_iter().map(|s| grant_in(namespace, s)).collect(),
        ..Context::default()
    }
}
