//! From an AdmissionReview to the rule set of its endpoint and back to an AdmissionResponse.
//!
//! Every problem with the request itself (wrong resource for the endpoint, an object that does
//! not decode, a context that cannot be read) becomes a denial naming the problem: admission
//! fails closed. Only a body that is not an AdmissionReview at all is refused at the HTTP level
//! (see the router).

use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, Operation as KubeOperation};
use kube::core::{DynamicObject, GroupVersionKind};
use serde::de::DeserializeOwned;
use serde_json::Value;
use shared_types::garage_admin_token::GarageAdminToken;
use shared_types::garage_bucket::GarageBucket;
use shared_types::garage_cluster::{v1beta1, v1beta2};
use shared_types::garage_key::GarageKey;
use shared_types::garage_node::GarageNode;
use shared_types::garage_reference_grant::GarageReferenceGrant;

use super::context_reader::{ContextSource, Needs};
pub use super::endpoint::{CONVERT_PATH, Endpoint};
use crate::admission::cluster::{
    ScaleRequest, node_queries, reads_context_lists, reads_context_lists_v1beta1, validate_cluster,
    validate_cluster_v1beta1,
};
use crate::admission::reference_grant::authorise::GrantReads;
use crate::admission::{
    Context, Operation, Review, Verdict, admin_token, bucket, defaults, key, node, pvc_guard,
    reference_grant,
};
use crate::convert::{GROUP, V1BETA1, V1BETA2};

/// Settings the rules need besides the request.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `system:serviceaccount:<ns>:<sa>` of the reconciler, the only user allowed to remove
    /// the PVC barrier finalizers.
    pub controller_username: String,
    /// What the install allows Garage pods on the Nodes (the chart's `garageSecurity`).
    pub host_access: crate::admission::host_access::HostAccessPolicy,
}

/// How a review ended, for metrics and logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Allowed with no patch.
    Allowed,
    /// Allowed with a defaulting patch.
    Patched,
    /// Denied by a rule.
    Denied,
    /// Denied because the request could not be understood (wrong resource, undecodable).
    Invalid,
    /// Denied because what the rules need could not be read (fail closed).
    Unavailable,
}

impl Outcome {
    /// Label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Allowed => "allowed",
            Outcome::Patched => "patched",
            Outcome::Denied => "denied",
            Outcome::Invalid => "invalid",
            Outcome::Unavailable => "unavailable",
        }
    }
}

/// The response to one review with its outcome.
#[derive(Debug)]
pub struct Answer {
    /// The AdmissionResponse.
    pub response: AdmissionResponse,
    /// How it ended.
    pub outcome: Outcome,
}

fn deny(
    request: &AdmissionRequest<DynamicObject>,
    code: u16,
    reason: &str,
    message: String,
) -> AdmissionResponse {
    let mut response = AdmissionResponse::from(request).deny(message);
    response.result.code = code;
    response.result.reason = reason.to_owned();
    response.result.status = Some(kube::core::response::StatusSummary::Failure);
    response
}

fn invalid(request: &AdmissionRequest<DynamicObject>, message: String) -> Answer {
    Answer {
        response: deny(request, 400, "BadRequest", message),
        outcome: Outcome::Invalid,
    }
}

fn operation(op: &KubeOperation) -> Option<Operation> {
    match op {
        KubeOperation::Create => Some(Operation::Create),
        KubeOperation::Update => Some(Operation::Update),
        KubeOperation::Delete => Some(Operation::Delete),
        KubeOperation::Connect => None,
    }
}

/// The object as JSON, the way it arrived.
fn raw(object: &DynamicObject) -> Result<Value, String> {
    serde_json::to_value(object).map_err(|e| e.to_string())
}

/// Decodes `object` (the request's `object` or `oldObject`, named `field`) into `T`, checking
/// its apiVersion and kind first when `kind` is given.
fn decode<T: DeserializeOwned>(
    object: Option<&DynamicObject>,
    field: &str,
    api_version: Option<&str>,
    kind: Option<&str>,
) -> Result<Option<T>, String> {
    let Some(object) = object else {
        return Ok(None);
    };
    if let (Some(api_version), Some(kind)) = (api_version, kind) {
        let (got_version, got_kind) = object
            .types
            .as_ref()
            .map(|t| (t.api_version.as_str(), t.kind.as_str()))
            .unwrap_or_default();
        if got_version != api_version || got_kind != kind {
            return Err(format!(
                "request.{field} is {got_version:?} {got_kind:?}, this endpoint reviews {api_version} {kind}"
            ));
        }
    }
    let value = raw(object).map_err(|e| format!("request.{field} does not encode: {e}"))?;
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| format!("request.{field} does not decode: {e}"))
}

fn check_target(
    endpoint: Endpoint,
    request: &AdmissionRequest<DynamicObject>,
) -> Result<(), String> {
    let target = endpoint.target();
    if target.resource.is_empty() {
        return Ok(());
    }
    let r = &request.resource;
    let sub = request.sub_resource.as_deref().unwrap_or_default();
    let version_ok = target.version.is_none_or(|v| v == r.version);
    if r.group != target.group
        || r.resource != target.resource
        || sub != target.sub_resource
        || !version_ok
    {
        let want = format!(
            "{}/{} {}{}{}",
            target.group,
            target.version.unwrap_or("*"),
            target.resource,
            if target.sub_resource.is_empty() {
                ""
            } else {
                "/"
            },
            target.sub_resource
        );
        return Err(format!(
            "{} reviews {want}, but the request is for {}/{} {}{}{}; fix the webhook configuration's rules",
            endpoint.path(),
            r.group,
            r.version,
            r.resource,
            if sub.is_empty() { "" } else { "/" },
            sub
        ));
    }
    Ok(())
}

/// The version the client addressed (INV-8): `requestKind` when it is ours, else `kind`.
fn requested_version(request: &AdmissionRequest<DynamicObject>) -> Option<String> {
    let ours = |gvk: &GroupVersionKind| (gvk.group == GROUP).then(|| gvk.version.clone());
    request
        .request_kind
        .as_ref()
        .and_then(ours)
        .or_else(|| ours(&request.kind))
}

fn delete_options(request: &AdmissionRequest<DynamicObject>) -> Option<DeleteOptions> {
    let options = request.options.as_ref()?;
    serde_json::from_value(options.0.clone()).ok()
}

fn verdict_answer(
    request: &AdmissionRequest<DynamicObject>,
    verdict: Verdict,
    code: u16,
) -> Answer {
    let warnings = (!verdict.warnings().is_empty()).then(|| verdict.warnings().to_vec());
    let (mut response, outcome) = if verdict.allowed() {
        (AdmissionResponse::from(request), Outcome::Allowed)
    } else {
        let reason = if code == 409 { "Conflict" } else { "Forbidden" };
        (
            deny(request, code, reason, verdict.message()),
            Outcome::Denied,
        )
    };
    response.warnings = warnings;
    Answer { response, outcome }
}

/// Reviews one admission request on `endpoint`, reading what the rules need from `source`.
pub async fn review<S: ContextSource>(
    endpoint: Endpoint,
    request: &AdmissionRequest<DynamicObject>,
    source: &S,
    settings: &Settings,
) -> Answer {
    if let Err(message) = check_target(endpoint, request) {
        return invalid(request, message);
    }
    let Some(op) = operation(&request.operation) else {
        return invalid(
            request,
            format!("{} does not review CONNECT requests", endpoint.path()),
        );
    };
    match endpoint {
        Endpoint::MutateClusterV1beta2 => mutate::<v1beta2::GarageCluster>(
            request,
            op,
            V1BETA2,
            "GarageCluster",
            defaults::default_cluster,
        ),
        Endpoint::MutateClusterV1beta1 => mutate::<v1beta1::GarageCluster>(
            request,
            op,
            V1BETA1,
            "GarageCluster",
            defaults::default_cluster_v1beta1,
        ),
        Endpoint::MutateNode => {
            mutate::<GarageNode>(request, op, V1BETA1, "GarageNode", defaults::default_node)
        }
        Endpoint::MutateBucket => mutate::<GarageBucket>(
            request,
            op,
            V1BETA1,
            "GarageBucket",
            defaults::default_bucket,
        ),
        Endpoint::MutateKey => {
            mutate::<GarageKey>(request, op, V1BETA1, "GarageKey", defaults::default_key)
        }
        Endpoint::ValidateClusterV1beta2 => {
            let rules: Rules<v1beta2::GarageCluster> = (validate_cluster, |review, all| {
                if reads_context_lists(review) {
                    Needs {
                        node_queries: node_queries(review),
                        ..all
                    }
                } else {
                    Needs::default()
                }
            });
            let kind = (V1BETA2, "GarageCluster");
            validate(endpoint, request, op, source, kind, rules).await
        }
        Endpoint::ValidateClusterV1beta1 => {
            let rules: Rules<v1beta1::GarageCluster> = (validate_cluster_v1beta1, |review, all| {
                if reads_context_lists_v1beta1(review) {
                    all
                } else {
                    Needs::default()
                }
            });
            let kind = (V1BETA1, "GarageCluster");
            validate(endpoint, request, op, source, kind, rules).await
        }
        Endpoint::ValidateNode => {
            let rules: Rules<GarageNode> = (node::validate_node, |_, all| all);
            let kind = (V1BETA1, "GarageNode");
            validate(endpoint, request, op, source, kind, rules).await
        }
        Endpoint::ValidateBucket => {
            let rules: Rules<GarageBucket> = (bucket::validate_bucket, |review, _| {
                grant_needs(bucket::grant_reads(review))
            });
            let kind = (V1BETA1, "GarageBucket");
            validate(endpoint, request, op, source, kind, rules).await
        }
        Endpoint::ValidateKey => {
            let rules: Rules<GarageKey> = (key::validate_key, |review, _| {
                grant_needs(key::grant_reads(review))
            });
            validate(endpoint, request, op, source, (V1BETA1, "GarageKey"), rules).await
        }
        Endpoint::ValidateAdminToken => {
            let rules: Rules<GarageAdminToken> =
                (admin_token::validate_admin_token, |review, _| Needs {
                    garage_cluster: admin_token::cluster_read(review),
                    ..Needs::default()
                });
            let kind = (V1BETA1, "GarageAdminToken");
            validate(endpoint, request, op, source, kind, rules).await
        }
        Endpoint::ValidateReferenceGrant => {
            let rules: Rules<GarageReferenceGrant> =
                (reference_grant::validate_reference_grant, |_, _| {
                    Needs::default()
                });
            let kind = (V1BETA1, "GarageReferenceGrant");
            validate(endpoint, request, op, source, kind, rules).await
        }
        Endpoint::ValidateClusterScale => scale(request, op, source).await,
        Endpoint::PvcFinalizerGuard => pvc(request, op, settings),
    }
}

fn mutate<T>(
    request: &AdmissionRequest<DynamicObject>,
    op: Operation,
    api_version: &str,
    kind: &str,
    default: fn(&T) -> T,
) -> Answer
where
    T: DeserializeOwned + serde::Serialize,
{
    if op == Operation::Delete {
        return Answer {
            response: AdmissionResponse::from(request),
            outcome: Outcome::Allowed,
        };
    }
    let object = match decode::<T>(
        request.object.as_ref(),
        "object",
        Some(api_version),
        Some(kind),
    ) {
        Ok(Some(object)) => object,
        Ok(None) => {
            return invalid(
                request,
                format!("a {op:?} review must carry request.object"),
            );
        }
        Err(message) => return invalid(request, message),
    };
    let original = match request.object.as_ref().map(raw) {
        Some(Ok(value)) => value,
        Some(Err(e)) => return invalid(request, format!("request.object does not encode: {e}")),
        None => return invalid(request, "request.object is missing".to_owned()),
    };
    let defaulted = match serde_json::to_value(default(&object)) {
        Ok(value) => value,
        Err(e) => {
            return Answer {
                response: deny(
                    request,
                    500,
                    "InternalError",
                    format!("the defaulted {kind} does not encode: {e}"),
                ),
                outcome: Outcome::Unavailable,
            };
        }
    };
    let patch = defaults::patch(&original, &defaulted);
    if patch.0.is_empty() {
        return Answer {
            response: AdmissionResponse::from(request),
            outcome: Outcome::Allowed,
        };
    }
    match AdmissionResponse::from(request).with_patch(patch) {
        Ok(response) => Answer {
            response,
            outcome: Outcome::Patched,
        },
        Err(e) => Answer {
            response: deny(
                request,
                500,
                "InternalError",
                format!("the defaulting patch does not encode: {e}"),
            ),
            outcome: Outcome::Unavailable,
        },
    }
}

/// The reads of a review whose references cross into other namespaces (RG-CHK).
fn grant_needs(reads: Option<GrantReads>) -> Needs {
    reads.map_or_else(Needs::default, |reads| Needs {
        reference_grants: reads.namespaces,
        namespace_labels: Some(reads.from_namespace),
        ..Needs::default()
    })
}

/// The context of a review: what `needs` names (nothing at all means no API call), plus what
/// the request itself carries.
async fn read_context<S: ContextSource>(
    endpoint: Endpoint,
    request: &AdmissionRequest<DynamicObject>,
    op: Operation,
    source: &S,
    needs: Needs,
) -> Result<Context, Answer> {
    let mut ctx = source
        .read(needs, request.namespace.as_deref())
        .await
        .map_err(|e| {
            let unproven = endpoint
                .unproven(op)
                .map(|what| format!("; {what}"))
                .unwrap_or_default();
            Answer {
                response: deny(
                    request,
                    500,
                    "InternalError",
                    format!("{e}{unproven}; the webhook refuses what it cannot check (fail closed), retry when the API server answers"),
                ),
                outcome: Outcome::Unavailable,
            }
        })?;
    ctx.requested_version = requested_version(request);
    if op == Operation::Delete {
        ctx.delete_options = delete_options(request);
    }
    Ok(ctx)
}

/// A rule set, and what it reads for a given review out of what its endpoint may read for the
/// operation: lists no rule of the review reads are not fetched, and the Node read is narrowed
/// to the Nodes the rules can count (see [`Needs`]).
type Rules<T> = (
    fn(Review<'_, T>, &Context) -> Verdict,
    fn(&Review<'_, T>, Needs) -> Needs,
);

async fn validate<T, S>(
    endpoint: Endpoint,
    request: &AdmissionRequest<DynamicObject>,
    op: Operation,
    source: &S,
    (api_version, kind): (&str, &str),
    (rules, needs): Rules<T>,
) -> Answer
where
    T: DeserializeOwned,
    S: ContextSource,
{
    let new = match decode::<T>(
        request.object.as_ref(),
        "object",
        Some(api_version),
        Some(kind),
    ) {
        Ok(v) => v,
        Err(message) => return invalid(request, message),
    };
    let old = match decode::<T>(
        request.old_object.as_ref(),
        "oldObject",
        Some(api_version),
        Some(kind),
    ) {
        Ok(v) => v,
        Err(message) => return invalid(request, message),
    };
    let review = match (op, old.as_ref(), new.as_ref()) {
        (Operation::Create, _, Some(new)) => Review::create(new),
        (Operation::Update, Some(old), Some(new)) => Review::update(old, new),
        (Operation::Delete, Some(old), _) => Review::delete(old),
        // DELETE without oldObject: the rules decide what an unknown victim means.
        (Operation::Delete, None, _) => Review {
            operation: Operation::Delete,
            old: None,
            new: None,
        },
        _ => {
            return invalid(
                request,
                format!("a {op:?} review of {kind} lacks request.object or request.oldObject"),
            );
        }
    };
    // Lists no rule of this review reads are not fetched: a read costs the API server three
    // LISTs, and a failed one would deny what the rules allow. Lists that are read are read
    // live and fail closed as before.
    let needs = needs(&review, endpoint.needs(op));
    let ctx = match read_context(endpoint, request, op, source, needs).await {
        Ok(ctx) => ctx,
        Err(answer) => return answer,
    };
    verdict_answer(request, rules(review, &ctx), 403)
}

async fn scale<S: ContextSource>(
    request: &AdmissionRequest<DynamicObject>,
    op: Operation,
    source: &S,
) -> Answer {
    // SC-2: the Scale must decode; its apiVersion is autoscaling/v1.
    let Some(object) = request.object.as_ref() else {
        return invalid(
            request,
            "a scale review must carry request.object (a Scale)".to_owned(),
        );
    };
    let value = match raw(object) {
        Ok(v) => v,
        Err(e) => return invalid(request, format!("request.object does not encode: {e}")),
    };
    let Some(replicas) = value
        .pointer("/spec/replicas")
        .map_or(Some(0), Value::as_i64)
        .and_then(|r| i32::try_from(r).ok())
    else {
        return invalid(
            request,
            "request.object.spec.replicas of the Scale must be a 32-bit integer".to_owned(),
        );
    };
    let resource_version = object.metadata.resource_version.clone();
    let namespace = request.namespace.clone().unwrap_or_default();
    let name = if request.name.is_empty() {
        object.metadata.name.clone().unwrap_or_default()
    } else {
        request.name.clone()
    };
    let version = request
        .request_resource
        .as_ref()
        .map_or(request.resource.version.clone(), |r| r.version.clone());
    // SC-3, SC-4: the live object, read uncached.
    let live = match source.garage_cluster(&namespace, &name).await {
        Ok(Some(live)) => live,
        Ok(None) => {
            return Answer {
                response: deny(
                    request,
                    404,
                    "NotFound",
                    format!(
                        "GarageCluster {namespace}/{name} does not exist; its Scale cannot change"
                    ),
                ),
                outcome: Outcome::Denied,
            };
        }
        Err(e) => {
            return Answer {
                response: deny(
                    request,
                    500,
                    "InternalError",
                    format!("{e}; the webhook refuses what it cannot check (fail closed)"),
                ),
                outcome: Outcome::Unavailable,
            };
        }
    };
    // Scale requests are rare and already read the live object: the lists are always read.
    // A Scale changes only the replica count, so the Nodes that can count are the live pools'.
    let needs = Needs {
        node_queries: node_queries(&Review::update(&live, &live)),
        ..Endpoint::ValidateClusterScale.needs(op)
    };
    let ctx = match read_context(Endpoint::ValidateClusterScale, request, op, source, needs).await {
        Ok(ctx) => ctx,
        Err(answer) => return answer,
    };
    let scale_request = ScaleRequest {
        operation: op,
        sub_resource: request.sub_resource.as_deref(),
        version: &version,
        replicas,
        resource_version: resource_version.as_deref(),
    };
    let verdict = crate::admission::cluster::validate_scale(&live, &scale_request, &ctx);
    let code = if verdict.broke("SC-5") { 409 } else { 403 };
    verdict_answer(request, verdict, code)
}

fn pvc(request: &AdmissionRequest<DynamicObject>, op: Operation, settings: &Settings) -> Answer {
    let r = &request.resource;
    let target = pvc_guard::check_target(
        &r.group,
        &r.version,
        &r.resource,
        request.sub_resource.as_deref().unwrap_or_default(),
    );
    if !target.allowed() {
        return verdict_answer(request, target, 403);
    }
    let decode_pvc = |object: Option<&DynamicObject>, field: &str| {
        decode::<PersistentVolumeClaim>(object, field, Some("v1"), Some("PersistentVolumeClaim"))
    };
    let new = match decode_pvc(request.object.as_ref(), "object") {
        Ok(v) => v,
        Err(message) => return invalid(request, message),
    };
    let old = match decode_pvc(request.old_object.as_ref(), "oldObject") {
        Ok(v) => v,
        Err(message) => return invalid(request, message),
    };
    let username = request.user_info.username.as_deref().unwrap_or_default();
    let verdict = pvc_guard::guard_pvc_finalizers(
        op,
        old.as_ref(),
        new.as_ref(),
        username,
        &settings.controller_username,
    );
    let mut answer = verdict_answer(request, verdict, 403);
    if answer.outcome == Outcome::Allowed {
        let removed = old.as_ref().is_some_and(|old| {
            let kept = new
                .as_ref()
                .and_then(|n| n.metadata.finalizers.clone())
                .unwrap_or_default();
            old.metadata
                .finalizers
                .iter()
                .flatten()
                .any(|f| pvc_guard::is_protected(f) && !kept.contains(f))
        });
        answer.response.result.message = if removed {
            pvc_guard::ALLOWED_CONTROLLER_REMOVED
        } else {
            pvc_guard::ALLOWED_NOT_REMOVED
        }
        .to_owned();
    }
    answer
}
