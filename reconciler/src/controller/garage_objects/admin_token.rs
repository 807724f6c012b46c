//! The GarageAdminToken controller: a static Admin API bearer in an
//! immutable Secret that the GarageCluster mounts through `spec.admin.adminTokenSecretRef`.
//! The token is generated once; an existing Secret is never regenerated or adopted, because
//! the bytes in it are what the running Garage processes trust.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use shared_types::common::{KeyPhase, SecretReference};
use shared_types::conditions::reason;
use shared_types::garage_admin_token::{GarageAdminToken, GarageAdminTokenStatus};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::{annotation, finalizer as finalizers, label};

use super::WAITING;
use crate::controller::garage_access::random_hex32;
use crate::controller::ownership::{self, Resolved};
use crate::controller::{Context, Error, finalizer, write};
use crate::desired::{Settings, controller_ref, is_controlled_by};

/// Controller name (metrics, logs).
pub const CONTROLLER: &str = "garageadmintoken";

/// `credential-kind` of the Secrets this controller writes.
pub const STATIC_BOOTSTRAP: &str = "static-bootstrap";

/// The Secret name and the data key of the token.
pub fn secret_location(t: &GarageAdminToken) -> (String, String) {
    let template = t.spec.secret_template.as_ref();
    let name = template
        .and_then(|s| s.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| t.name_any());
    let key = template
        .and_then(|s| s.token_key.clone())
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| "admin-token".into());
    (name, key)
}

/// What is wrong with the spec, if anything; these fields exist for compatibility only.
pub fn spec_problem(t: &GarageAdminToken) -> Option<String> {
    let ns = t.namespace().unwrap_or_default();
    if t.spec
        .cluster_ref
        .namespace
        .as_deref()
        .is_some_and(|n| !n.is_empty() && n != ns)
    {
        return Some(format!(
            "spec.clusterRef.namespace must be empty or {ns}: an admin token never serves a cluster in another namespace"
        ));
    }
    if t.spec.name.as_deref().is_some_and(|n| !n.is_empty()) {
        return Some("spec.name is not supported: the token is a static bearer with no Garage-side name; remove it".into());
    }
    if t.spec.expires_at.is_some() {
        return Some("spec.expiresAt is not supported: a static bearer cannot expire; remove it and delete the object to retire the token".into());
    }
    None
}

/// The first 12 hex digits of the digest: enough to tell tokens apart in `kubectl get`.
fn fingerprint(digest: &str) -> String {
    digest.chars().take(12).collect()
}

/// One pass over a GarageAdminToken.
pub async fn reconcile(t: Arc<GarageAdminToken>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ns = t.namespace().unwrap_or_default();
    let api: Api<GarageAdminToken> = Api::namespaced(ctx.client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let (secret_name, token_key) = secret_location(&t);
    let uid = t.uid().unwrap_or_default();
    // A token serves a cluster of its own namespace only (see `spec_problem`); one that
    // another install manages is that install's to serve, and to finalize.
    let cluster = match ownership::resolve(&ctx, &ns, &t.spec.cluster_ref.name).await? {
        Resolved::HandsOff(action) => return Ok(action),
        Resolved::Managed(cluster) => Some(*cluster),
        Resolved::Absent => None,
    };
    if t.metadata.deletion_timestamp.is_some() {
        return finalize(&t, &ctx, &api, &secrets).await;
    }
    finalizer::set(
        &api,
        &ctx.metrics,
        &*t,
        finalizers::FINALIZER_ADMIN_TOKEN,
        true,
    )
    .await?;
    if let Some(problem) = spec_problem(&t) {
        return report(
            &api,
            &ctx,
            &t,
            None,
            Err((reason::REASON_VALIDATION_FAILED, problem)),
        )
        .await;
    }
    let Some(cluster) = cluster else {
        return report(
            &api,
            &ctx,
            &t,
            None,
            Err((
                reason::REASON_WAITING_FOR_DEPENDENCY,
                format!(
                    "GarageCluster {ns}/{} does not exist yet; the Secret is written once it does (its admin endpoint comes from the cluster)",
                    t.spec.cluster_ref.name
                ),
            )),
        )
        .await;
    };
    let digest = match secrets.get_opt(&secret_name).await? {
        Some(live) => {
            if !is_controlled_by(&live, &uid) {
                return Err(Error::Foreign {
                    kind: "Secret",
                    name: secret_name,
                    owner: format!("GarageAdminToken {ns}/{}", t.name_any()),
                });
            }
            let value = live
                .data
                .as_ref()
                .and_then(|d| d.get(&token_key))
                .map(|b| b.0.clone())
                .filter(|b| !b.is_empty());
            let Some(value) = value else {
                return report(&api, &ctx, &t, None, Err((
                    reason::REASON_VALIDATION_FAILED,
                    format!("Secret {secret_name} has no value under {token_key}; a cluster credential is never regenerated silently: restore it, or delete the Secret to mint a new token (and restart the cluster's pods)"),
                )))
                .await;
            };
            let digest = crate::names::sha256_hex(&value);
            let recorded = live
                .annotations()
                .get(annotation::ANNOTATION_STATIC_BOOTSTRAP_TOKEN_SHA256)
                .cloned();
            if recorded.as_deref() != Some(digest.as_str()) {
                return report(&api, &ctx, &t, None, Err((
                    reason::REASON_VALIDATION_FAILED,
                    format!("Secret {secret_name} does not hold the token its digest annotation names; it is left untouched"),
                )))
                .await;
            }
            digest
        }
        None => {
            let settings = Settings::from_cluster(&cluster)?;
            let token = random_hex32()?;
            let digest = crate::names::sha256_hex(token.as_bytes());
            let secret = render(&t, &settings, &token, &digest)?;
            ctx.metrics.wrote();
            secrets.create(&PostParams::default(), &secret).await?;
            tracing::info!(token = %t.name_any(), secret = %secret_name, "admin token Secret created");
            digest
        }
    };
    let verdict = if mounts(&cluster, &secret_name, &token_key) {
        Ok(format!(
            "token {} in Secret {secret_name}",
            fingerprint(&digest)
        ))
    } else {
        Err((
            reason::REASON_WAITING_FOR_DEPENDENCY,
            format!(
                "GarageCluster {ns}/{} does not use this token: set its spec.admin.adminTokenSecretRef to name {secret_name}, key {token_key}",
                t.spec.cluster_ref.name
            ),
        ))
    };
    report(&api, &ctx, &t, Some(digest), verdict).await
}

/// True when `cluster` takes its admin token from key `token_key` of Secret `secret_name`.
fn mounts(cluster: &GarageCluster, secret_name: &str, token_key: &str) -> bool {
    cluster
        .spec
        .admin
        .as_ref()
        .and_then(|a| a.admin_token_secret_ref.as_ref())
        .is_some_and(|r| {
            r.name == secret_name
                && (if r.key.is_empty() {
                    "admin-token"
                } else {
                    r.key.as_str()
                }) == token_key
        })
}

/// Deletion: the token's own Secret goes, then the finalizer.
async fn finalize(
    t: &GarageAdminToken,
    ctx: &Context,
    api: &Api<GarageAdminToken>,
    secrets: &Api<Secret>,
) -> Result<Action, Error> {
    if !finalizer::has(t, finalizers::FINALIZER_ADMIN_TOKEN) {
        return Ok(Action::await_change());
    }
    let (secret_name, _) = secret_location(t);
    if let Some(live) = secrets.get_opt(&secret_name).await?
        && is_controlled_by(&live, &t.uid().unwrap_or_default())
    {
        write::delete_if_present(secrets, &ctx.metrics, &secret_name, &Default::default()).await?;
    }
    finalizer::set(
        api,
        &ctx.metrics,
        t,
        finalizers::FINALIZER_ADMIN_TOKEN,
        false,
    )
    .await?;
    Ok(Action::await_change())
}

/// The immutable Secret holding a new token.
fn render(t: &GarageAdminToken, s: &Settings, token: &str, digest: &str) -> Result<Secret, Error> {
    let (name, key) = secret_location(t);
    let template = t.spec.secret_template.as_ref();
    let mut data = BTreeMap::from([(key, ByteString(token.as_bytes().to_vec()))]);
    if template.and_then(|s| s.include_endpoint).unwrap_or(true) {
        let endpoint_key = template
            .and_then(|s| s.endpoint_key.clone())
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| "admin-endpoint".into());
        data.insert(
            endpoint_key,
            ByteString(
                format!(
                    "http://{}.{}.svc.cluster.local:{}",
                    crate::names::admin_service(&s.name),
                    s.namespace,
                    s.admin_port
                )
                .into_bytes(),
            ),
        );
    }
    let mut labels = template.and_then(|s| s.labels.clone()).unwrap_or_default();
    labels.insert(
        label::LABEL_APP_MANAGED_BY.into(),
        label::value::MANAGED_BY_OPERATOR.into(),
    );
    labels.insert(label::LABEL_ADMIN_TOKEN.into(), t.name_any());
    let mut annotations = template
        .and_then(|s| s.annotations.clone())
        .unwrap_or_default();
    annotations.insert(
        annotation::ANNOTATION_CREDENTIAL_KIND.into(),
        STATIC_BOOTSTRAP.into(),
    );
    annotations.insert(
        annotation::ANNOTATION_STATIC_BOOTSTRAP_TOKEN_SHA256.into(),
        digest.into(),
    );
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: t.namespace(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![controller_ref(t)?]),
            ..ObjectMeta::default()
        },
        immutable: Some(true),
        type_: Some("Opaque".into()),
        data: Some(data),
        ..Secret::default()
    })
}

async fn report(
    api: &Api<GarageAdminToken>,
    ctx: &Context,
    t: &GarageAdminToken,
    digest: Option<String>,
    verdict: Result<String, (&'static str, String)>,
) -> Result<Action, Error> {
    let (ready, why, message) = match verdict {
        Ok(m) => (true, reason::REASON_RECONCILE_SUCCESS, m),
        Err((why, m)) => (false, why, m),
    };
    let current: Option<&GarageAdminTokenStatus> = t.status.as_ref();
    super::report(api, ctx, t, current, ready, why, message, |status| {
        status.phase = Some(if ready {
            KeyPhase::Ready
        } else if why == reason::REASON_VALIDATION_FAILED {
            KeyPhase::Failed
        } else {
            KeyPhase::Pending
        });
        status.expires_at = None;
        if let Some(d) = digest {
            status.token_id = Some(fingerprint(&d));
            status.token_digest = Some(d);
            status.secret_ref = Some(SecretReference {
                name: Some(secret_location(t).0),
                namespace: t.namespace(),
            });
        }
    })
    .await?;
    Ok(if ready {
        Action::requeue(ctx.config.resync)
    } else {
        Action::requeue(WAITING)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn token(spec: serde_json::Value) -> GarageAdminToken {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "garage.rajsingh.info/v1beta1",
            "kind": "GarageAdminToken",
            "metadata": {"name": "ops", "namespace": "storage", "uid": "u-1"},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn the_secret_defaults_to_the_object_name_and_admin_token() {
        let t = token(serde_json::json!({"clusterRef": {"name": "garage"}}));
        assert_eq!(secret_location(&t), ("ops".into(), "admin-token".into()));
        let t = token(
            serde_json::json!({"clusterRef": {"name": "garage"}, "secretTemplate": {"name": "x", "tokenKey": "t"}}),
        );
        assert_eq!(secret_location(&t), ("x".into(), "t".into()));
    }

    #[test]
    fn compatibility_fields_and_other_namespaces_are_refused_by_field() {
        let ok =
            token(serde_json::json!({"clusterRef": {"name": "garage", "namespace": "storage"}}));
        assert_eq!(spec_problem(&ok), None);
        for (spec, field) in [
            (
                serde_json::json!({"clusterRef": {"name": "g", "namespace": "other"}}),
                "spec.clusterRef.namespace",
            ),
            (
                serde_json::json!({"clusterRef": {"name": "g"}, "name": "n"}),
                "spec.name",
            ),
            (
                serde_json::json!({"clusterRef": {"name": "g"}, "expiresAt": "2030-01-01T00:00:00Z"}),
                "spec.expiresAt",
            ),
        ] {
            let problem = spec_problem(&token(spec)).unwrap();
            assert!(problem.starts_with(field), "{problem}");
        }
    }

    #[test]
    fn a_new_secret_is_immutable_labelled_and_carries_the_digest() {
        let t = token(serde_json::json!({"clusterRef": {"name": "garage"}}));
        let cluster = crate::desired::test_support::cluster(1);
        let s = Settings::from_cluster(&cluster).unwrap();
        let secret = render(&t, &s, "tok", "abc").unwrap();
        assert_eq!(secret.immutable, Some(true));
        let data = secret.data.unwrap();
        assert_eq!(data["admin-token"].0, b"tok");
        assert_eq!(
            String::from_utf8(data["admin-endpoint"].0.clone()).unwrap(),
            "http://garage-admin.ns.svc.cluster.local:3903"
        );
        let a = secret.metadata.annotations.unwrap();
        assert_eq!(a[annotation::ANNOTATION_CREDENTIAL_KIND], STATIC_BOOTSTRAP);
        assert_eq!(
            a[annotation::ANNOTATION_STATIC_BOOTSTRAP_TOKEN_SHA256],
            "abc"
        );
        assert_eq!(
            secret.metadata.labels.unwrap()[label::LABEL_ADMIN_TOKEN],
            "ops"
        );
    }
}
