//! The GarageAdminToken decision: a pure function of what a pass observed ([`Observed`])
//! giving the Secret to create (never to regenerate or adopt), the status to publish and the
//! [`Outcome`]; and for a deleted token, its own Secret removed before the finalizer.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use shared_types::common::{KeyPhase, SecretReference};
use shared_types::conditions::reason;
use shared_types::garage_admin_token::{GarageAdminToken, GarageAdminTokenStatus};
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::{annotation, finalizer as finalizers, label};

use super::{STATIC_BOOTSTRAP, secret_location, spec_problem};
use crate::desired::{DesiredError, Settings, controller_ref, is_controlled_by};
use crate::finalizers as finalizer;
use crate::garage_objects::outcome::{self, Outcome};

/// What a pass over a GarageAdminToken observed.
pub struct Observed {
    /// The token.
    pub token: GarageAdminToken,
    /// Its GarageCluster, when it exists (one this install manages).
    pub cluster: Option<GarageCluster>,
    /// The token's Secret, as it is.
    pub secret: Option<Secret>,
    /// A new random token, drawn when the Secret does not exist.
    pub fresh: Option<String>,
}

/// One operation of a pass, run in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Create the token's Secret.
    CreateSecret(Box<Secret>),
    /// A Secret of the token's name it does not control: never adopted; the pass fails.
    Foreign {
        /// Its name.
        name: String,
    },
    /// Delete the token's own Secret.
    DeleteSecret(String),
    /// Remove the finalizer.
    RemoveFinalizer,
}

/// Everything one pass does.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The operations, in order.
    pub steps: Vec<Step>,
    /// The status to publish after them.
    pub status: Option<GarageAdminTokenStatus>,
    /// How the pass ends.
    pub outcome: Outcome,
}

/// Why a pass over a live token cannot be planned; the pass fails, and the reconciler reports
/// each as its own error of the same kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The cluster's settings or the Secret cannot be rendered.
    #[error(transparent)]
    Desired(#[from] DesiredError),
    /// What was observed breaks a safety invariant (no new token for a missing Secret);
    /// nothing is written.
    #[error("{0}")]
    Unsafe(String),
}

/// The first 12 hex digits of the digest: enough to tell tokens apart in `kubectl get`.
fn fingerprint(digest: &str) -> String {
    digest.chars().take(12).collect()
}

/// The pass over a live token.
pub fn plan(o: &Observed) -> Result<Plan, PlanError> {
    let t = &o.token;
    let ns = t.namespace().unwrap_or_default();
    let (secret_name, token_key) = secret_location(t);
    if let Some(problem) = spec_problem(t) {
        return Ok(report(
            t,
            Vec::new(),
            None,
            Err((reason::REASON_VALIDATION_FAILED, problem)),
        ));
    }
    let Some(cluster) = &o.cluster else {
        return Ok(report(
            t,
            Vec::new(),
            None,
            Err((
                reason::REASON_WAITING_FOR_DEPENDENCY,
                format!(
                    "GarageCluster {ns}/{} does not exist yet; the Secret is written once it does (its admin endpoint comes from the cluster)",
                    t.spec.cluster_ref.name
                ),
            )),
        ));
    };
    let mut steps = Vec::new();
    let digest = match &o.secret {
        Some(live) => match held_digest(t, live, &secret_name, &token_key) {
            Held::Digest(digest) => digest,
            Held::Foreign => {
                let foreign = Step::Foreign { name: secret_name };
                return Ok(Plan {
                    steps: vec![foreign],
                    status: None,
                    outcome: Outcome::Finished,
                });
            }
            Held::Invalid(message) => {
                let why = reason::REASON_VALIDATION_FAILED;
                return Ok(report(t, steps, None, Err((why, message))));
            }
        },
        None => {
            let Some(token) = &o.fresh else {
                return Err(PlanError::Unsafe(format!(
                    "no new token was drawn for the missing Secret {ns}/{secret_name}"
                )));
            };
            let settings = Settings::from_cluster(cluster)?;
            let digest = crate::names::sha256_hex(token.as_bytes());
            let secret = render(t, &settings, token, &digest)?;
            steps.push(Step::CreateSecret(Box::new(secret)));
            digest
        }
    };
    let verdict = if mounts(cluster, &secret_name, &token_key) {
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
    Ok(report(t, steps, Some(digest), verdict))
}

/// What an existing Secret holds.
enum Held {
    /// The token whose digest its annotation names.
    Digest(String),
    /// It is not the token's own.
    Foreign,
    /// It is the token's own but not usable; the message says why and what to do.
    Invalid(String),
}

fn held_digest(t: &GarageAdminToken, live: &Secret, secret_name: &str, token_key: &str) -> Held {
    if !is_controlled_by(live, &t.uid().unwrap_or_default()) {
        return Held::Foreign;
    }
    let value = live
        .data
        .as_ref()
        .and_then(|d| d.get(token_key))
        .map(|b| b.0.clone())
        .filter(|b| !b.is_empty());
    let Some(value) = value else {
        return Held::Invalid(format!(
            "Secret {secret_name} has no value under {token_key}; a cluster credential is never regenerated silently: restore it, or delete the Secret to mint a new token (and restart the cluster's pods)"
        ));
    };
    let digest = crate::names::sha256_hex(&value);
    let recorded = live
        .annotations()
        .get(annotation::ANNOTATION_STATIC_BOOTSTRAP_TOKEN_SHA256)
        .cloned();
    if recorded.as_deref() != Some(digest.as_str()) {
        return Held::Invalid(format!(
            "Secret {secret_name} does not hold the token its digest annotation names; it is left untouched"
        ));
    }
    Held::Digest(digest)
}

/// True when `cluster` takes its admin token from key `token_key` of Secret `secret_name`.
pub fn mounts(cluster: &GarageCluster, secret_name: &str, token_key: &str) -> bool {
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

/// The plan that runs `steps` and publishes the verdict: ready with its message, or waiting
/// with a reason and message. `digest` is the token's, once known.
fn report(
    t: &GarageAdminToken,
    steps: Vec<Step>,
    digest: Option<String>,
    verdict: Result<String, (&'static str, String)>,
) -> Plan {
    let (ready, why, message) = match verdict {
        Ok(m) => (true, reason::REASON_RECONCILE_SUCCESS, m),
        Err((why, m)) => (false, why, m),
    };
    let outcome = if ready {
        Outcome::Converged
    } else {
        Outcome::waiting(why, message.clone())
    };
    let status = outcome::reported(
        t.status.as_ref(),
        t.metadata.generation,
        ready,
        why,
        message,
        |status: &mut GarageAdminTokenStatus| {
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
        },
    );
    Plan {
        steps,
        status: Some(status),
        outcome,
    }
}

/// Deletion: the token's own Secret (`secret`, as it is) goes, then the finalizer.
pub fn deletion(t: &GarageAdminToken, secret: Option<&Secret>) -> Plan {
    let mut steps = Vec::new();
    if finalizer::has(t, finalizers::FINALIZER_ADMIN_TOKEN) {
        if secret.is_some_and(|live| is_controlled_by(live, &t.uid().unwrap_or_default())) {
            steps.push(Step::DeleteSecret(secret_location(t).0));
        }
        steps.push(Step::RemoveFinalizer);
    }
    Plan {
        steps,
        status: None,
        outcome: Outcome::Finished,
    }
}

/// The immutable Secret holding a new token.
pub fn render(
    t: &GarageAdminToken,
    s: &Settings,
    token: &str,
    digest: &str,
) -> Result<Secret, DesiredError> {
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

#[cfg(test)]
mod tests;
