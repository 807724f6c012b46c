//! RG-CHK: whether a cross-namespace reference of a GarageBucket or GarageKey is authorised by
//! a GarageReferenceGrant in the namespace it points into (GB-X1, GB-X2, GK-X1, GK-X2).
//!
//! The algorithm runs the steps below in order; which grant entry admits which reference is
//! [`GarageReferenceGrant::permits`], the one evaluation the reconciler applies too.
//!
//! 1. A reference into the object's own namespace is always permitted.
//! 2. The grants of the target namespace are read (complete: the adapter fails closed).
//! 3. A grant that admits it without namespace labels permits it.
//! 4. Without a grant that selects namespaces by label, it is denied.
//! 5. The referring Namespace's labels are read; a Namespace that does not exist denies.
//! 6. A grant that admits it with those labels permits it; otherwise it is denied.

use shared_types::garage_reference_grant::{
    GarageReferenceGrant, GrantFromKind, GrantToKind, Reference,
};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use shared_types::common::ClusterReference;

use crate::admission::shared::names::is_dns1123_label;
use crate::admission::shared::remote::{check_reference, effective_namespace};
use crate::admission::{Context, Operation, Review, Verdict};

/// The API's spelling of a referring kind.
pub fn from_kind_name(kind: GrantFromKind) -> &'static str {
    match kind {
        GrantFromKind::GarageKey => "GarageKey",
        GrantFromKind::GarageBucket => "GarageBucket",
        GrantFromKind::GarageAdminToken => "GarageAdminToken",
    }
}

/// The API's spelling of a referenced kind.
pub fn to_kind_name(kind: GrantToKind) -> &'static str {
    match kind {
        GrantToKind::GarageCluster => "GarageCluster",
        GrantToKind::GarageBucket => "GarageBucket",
        GrantToKind::GarageKey => "GarageKey",
    }
}

/// The object that holds the references.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    /// Its kind.
    pub kind: GrantFromKind,
    /// Its namespace.
    pub namespace: &'a str,
    /// Its name, for messages.
    pub name: &'a str,
}

impl<'a> Source<'a> {
    /// The object described by `metadata`, of `kind`.
    pub fn of(kind: GrantFromKind, metadata: &'a ObjectMeta) -> Self {
        Source {
            kind,
            namespace: metadata.namespace.as_deref().unwrap_or_default(),
            name: metadata.name.as_deref().unwrap_or_default(),
        }
    }

    /// This object's reference at `field` to the `kind` named `name` in `namespace` (empty:
    /// this object's own), checked under `rule`. `None` when the name is empty or the
    /// reference is not valid syntax: the shape rules refuse it, and no grant can name it.
    pub fn reference(
        &self,
        rule: &'static str,
        field: String,
        kind: GrantToKind,
        name: &'a str,
        namespace: Option<&'a str>,
    ) -> Option<Checked<'a>> {
        if name.is_empty() || check_reference(&field, name, namespace).is_some() {
            return None;
        }
        Some(Checked {
            rule,
            field,
            kind,
            namespace: effective_namespace(namespace, self.namespace),
            name,
        })
    }
}

impl<'a> Source<'a> {
    /// This object's `spec.clusterRef`, `cluster`, checked under `rule`.
    pub fn cluster(
        &self,
        rule: &'static str,
        cluster: &'a ClusterReference,
    ) -> Option<Checked<'a>> {
        self.reference(
            rule,
            "spec.clusterRef".to_owned(),
            GrantToKind::GarageCluster,
            &cluster.name,
            cluster.namespace.as_deref(),
        )
    }
}

/// What a review reads for the RG-CHK rules of an object whose cross-namespace references
/// `references` lists: a CREATE, and an UPDATE whose spec `unchanged` does not call unchanged
/// (the legacy flag), read what [`GrantReads::of`] names; every other review reads nothing.
pub fn review_reads<T>(
    review: &Review<'_, T>,
    unchanged: fn(&T, &T) -> bool,
    references: for<'b> fn(&'b T) -> (Source<'b>, Vec<Checked<'b>>),
) -> Option<GrantReads> {
    let new = match (review.operation, review.old, review.new) {
        (Operation::Create, _, Some(new)) => new,
        (Operation::Update, Some(old), Some(new)) if !unchanged(old, new) => new,
        _ => return None,
    };
    let (source, refs) = references(new);
    GrantReads::of(&source, &refs)
}

/// One reference to authorise, and the rule and field a denial is reported under.
#[derive(Clone, Debug)]
pub struct Checked<'a> {
    /// Rule id of the denial.
    pub rule: &'static str,
    /// Field path of the reference.
    pub field: String,
    /// Kind of the referenced object.
    pub kind: GrantToKind,
    /// Effective namespace of the referenced object.
    pub namespace: &'a str,
    /// Name of the referenced object.
    pub name: &'a str,
}

/// What RG-CHK reads for one review: the grants of every namespace its references cross into,
/// and the referring namespace, whose labels are read only when one of those grants selects
/// namespaces by label.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrantReads {
    /// Namespaces whose GarageReferenceGrants are read; sorted, no duplicates.
    pub namespaces: Vec<String>,
    /// The referring namespace.
    pub from_namespace: String,
}

impl GrantReads {
    /// The reads for `references` from `source`; `None` when none crosses a namespace, so the
    /// review reads nothing. A namespace that is not a valid name is never read: the shape
    /// rules refuse it, and no grant can live there.
    pub fn of(source: &Source<'_>, references: &[Checked<'_>]) -> Option<Self> {
        let mut namespaces: Vec<String> = references
            .iter()
            .map(|r| r.namespace)
            .filter(|ns| *ns != source.namespace && is_dns1123_label(ns))
            .map(str::to_owned)
            .collect();
        namespaces.sort();
        namespaces.dedup();
        (!namespaces.is_empty()).then(|| GrantReads {
            namespaces,
            from_namespace: source.namespace.to_owned(),
        })
    }
}

fn grants_in<'a>(
    ctx: &'a Context,
    namespace: &'a str,
) -> impl Iterator<Item = &'a GarageReferenceGrant> + Clone {
    ctx.reference_grants
        .iter()
        .filter(move |g| g.metadata.namespace.as_deref() == Some(namespace))
}

fn denied(source: &Source<'_>, target: &Checked<'_>) -> String {
    let (from, to) = (from_kind_name(source.kind), to_kind_name(target.kind));
    let key_note = if target.kind == GrantToKind::GarageKey {
        " listing GarageKey in its spec.to (a grant without spec.to covers only GarageClusters and GarageBuckets)"
    } else {
        ""
    };
    format!(
        "cross-namespace reference from {from} {:?}/{:?} to {to} {:?}/{:?} is not permitted: create a GarageReferenceGrant in namespace {:?} granting {from}/{:?} access{key_note}",
        source.namespace,
        source.name,
        target.namespace,
        target.name,
        target.namespace,
        source.namespace,
    )
}

/// RG-CHK for one reference: `Ok` when permitted, else the denial message.
pub fn authorise(ctx: &Context, source: &Source<'_>, target: &Checked<'_>) -> Result<(), String> {
    if source.namespace == target.namespace {
        return Ok(());
    }
    let reference = Reference {
        from_kind: source.kind,
        from_namespace: source.namespace,
        to_kind: target.kind,
        to_name: target.name,
    };
    let grants = grants_in(ctx, target.namespace);
    if grants.clone().any(|g| g.permits(&reference, None)) {
        return Ok(());
    }
    if !grants
        .clone()
        .any(GarageReferenceGrant::reads_namespace_labels)
    {
        return Err(denied(source, target));
    }
    let labels = ctx
        .namespaces
        .iter()
        .find(|n| n.metadata.name.as_deref() == Some(source.namespace))
        .map(|n| n.metadata.labels.clone().unwrap_or_default());
    let Some(labels) = labels else {
        return Err(denied(source, target));
    };
    if grants
        .into_iter()
        .any(|g| g.permits(&reference, Some(&labels)))
    {
        Ok(())
    } else {
        Err(denied(source, target))
    }
}

/// Applies RG-CHK to every reference, recording each one denied under its rule and field.
pub fn deny_unauthorised(
    ctx: &Context,
    source: &Source<'_>,
    references: &[Checked<'_>],
    verdict: &mut Verdict,
) {
    for target in references {
        if let Err(message) = authorise(ctx, source, target) {
            verdict.deny(target.rule, target.field.clone(), message);
        }
    }
}
