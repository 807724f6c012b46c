//! The GarageReferenceGrant controller: reports which objects in
//! other namespaces rely on the grant. Enforcement is not here: the key and bucket controllers
//! and the webhook evaluate grants themselves at every pass and every write.

use std::sync::Arc;

use kube::api::ListParams;
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::conditions::common::CONDITION_READY;
use shared_types::conditions::{reason, reference_grant as grant_conditions};
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_key::GarageKey;
use shared_types::garage_reference_grant::{
    GarageReferenceGrant, GarageReferenceGrantStatus, GrantFromKind, GrantToKind, Reference,
    ReferenceGrantUse,
};

use super::patch_status_if_changed;
use crate::controller::conditions::{self, Desired};
use crate::controller::{Context, Error};
use decide::garage_objects::reach::target_namespace;

/// Controller name (metrics, logs).
pub const CONTROLLER: &str = "garagereferencegrant";

/// Every cross-namespace reference an object makes: (target kind, target namespace, name).
fn key_references(k: &GarageKey) -> Vec<(GrantToKind, String, String)> {
    let ns = k.namespace().unwrap_or_default();
    let mut out = vec![(
        GrantToKind::GarageCluster,
        target_namespace(&ns, k.spec.cluster_ref.namespace.as_deref()).to_owned(),
        k.spec.cluster_ref.name.clone(),
    )];
    for p in k.spec.bucket_permissions.iter().flatten() {
        if let Some(r) = &p.bucket_ref {
            out.push((
                GrantToKind::GarageBucket,
                target_namespace(&ns, r.namespace.as_deref()).to_owned(),
                r.name.clone(),
            ));
        }
    }
    out
}

fn bucket_references(b: &GarageBucket) -> Vec<(GrantToKind, String, String)> {
    let ns = b.namespace().unwrap_or_default();
    let mut out = vec![(
        GrantToKind::GarageCluster,
        target_namespace(&ns, b.spec.cluster_ref.namespace.as_deref()).to_owned(),
        b.spec.cluster_ref.name.clone(),
    )];
    for p in b.spec.key_permissions.iter().flatten() {
        out.push((
            GrantToKind::GarageKey,
            target_namespace(&ns, p.key_ref.namespace.as_deref()).to_owned(),
            p.key_ref.name.clone(),
        ));
    }
    out
}

/// The objects `grant` currently admits a reference for. Namespace labels are read only when
/// the grant has a selector.
pub fn uses(
    grant: &GarageReferenceGrant,
    keys: &[GarageKey],
    buckets: &[GarageBucket],
    labels: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, String>>,
) -> Vec<ReferenceGrantUse> {
    let grant_ns = grant.namespace().unwrap_or_default();
    let mut out = Vec::new();
    let objects = keys
        .iter()
        .map(|k| {
            (
                GrantFromKind::GarageKey,
                "GarageKey",
                k.namespace(),
                k.name_any(),
                key_references(k),
            )
        })
        .chain(buckets.iter().map(|b| {
            (
                GrantFromKind::GarageBucket,
                "GarageBucket",
                b.namespace(),
                b.name_any(),
                bucket_references(b),
            )
        }));
    for (from_kind, kind, ns, name, references) in objects {
        let ns = ns.unwrap_or_default();
        if ns == grant_ns {
            continue;
        }
        let relies = references.iter().any(|(to_kind, to_ns, to_name)| {
            *to_ns == grant_ns
                && grant.permits(
                    &Reference {
                        from_kind,
                        from_namespace: &ns,
                        to_kind: *to_kind,
                        to_name,
                    },
                    labels.get(&ns),
                )
        });
        if relies {
            out.push(ReferenceGrantUse {
                kind: Some(kind.into()),
                name: Some(name),
                namespace: Some(ns),
            });
        }
    }
    out.sort_by(|a, b| (&a.namespace, &a.kind, &a.name).cmp(&(&b.namespace, &b.kind, &b.name)));
    out
}

/// One pass over a GarageReferenceGrant.
pub async fn reconcile(g: Arc<GarageReferenceGrant>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ns = g.namespace().unwrap_or_default();
    let api: Api<GarageReferenceGrant> = Api::namespaced(ctx.client.clone(), &ns);
    let scope = (!ctx.config.namespaces.is_empty()).then(|| ctx.config.namespaces.clone());
    let (mut keys, mut buckets) = (Vec::new(), Vec::new());
    let namespaces: Vec<Option<String>> = match scope {
        None => vec![None],
        Some(list) => list.into_iter().map(Some).collect(),
    };
    for n in &namespaces {
        keys.extend(
            super::super::scoped::<GarageKey>(&ctx.client, n.as_deref())
                .list(&ListParams::default())
                .await?
                .items,
        );
        buckets.extend(
            super::super::scoped::<GarageBucket>(&ctx.client, n.as_deref())
                .list(&ListParams::default())
                .await?
                .items,
        );
    }
    let mut labels = std::collections::BTreeMap::new();
    if g.reads_namespace_labels()
        && let Ok(list) = Api::<k8s_openapi::api::core::v1::Namespace>::all(ctx.client.clone())
            .list(&ListParams::default())
            .await
    {
        for n in list.items {
            labels.insert(n.name_any(), n.labels().clone());
        }
    }
    let in_use = uses(&g, &keys, &buckets, &labels);
    let used = !in_use.is_empty();
    let status = GarageReferenceGrantStatus {
        conditions: Some(conditions::merge(
            g.status.as_ref().and_then(|s| s.conditions.as_deref()),
            &[
                Desired {
                    type_: CONDITION_READY,
                    status: true,
                    reason: reason::REASON_GRANT_PRESENT,
                    message: "the grant is in effect".into(),
                },
                Desired {
                    type_: grant_conditions::CONDITION_IN_USE,
                    status: used,
                    reason: if used {
                        reason::REASON_ACTIVE_REFERENCES
                    } else {
                        reason::REASON_NO_REFERENCES
                    },
                    message: if used {
                        format!(
                            "{} object(s) in other namespaces rely on this grant",
                            in_use.len()
                        )
                    } else {
                        "no object relies on this grant; removing it breaks nothing".into()
                    },
                },
            ],
            &[CONDITION_READY, grant_conditions::CONDITION_IN_USE],
            g.metadata.generation,
        )),
        in_use_by: Some(in_use),
    };
    patch_status_if_changed(&api, &ctx, &*g, g.status.as_ref(), &status).await?;
    Ok(Action::requeue(ctx.config.resync))
}
