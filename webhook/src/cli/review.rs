//! `garage-webhook review`: what the API server would answer for a request, from a recorded
//! AdmissionReview or from manifests.
//!
//! The chain the API server runs is reproduced: the mutating webhook of the request's version
//! (its patch applied), then the validating webhook, and for a GarageCluster also the other
//! version's validator on the converted object (matchPolicy Equivalent, INV-7).
//! CRD schema defaults and CEL rules, which the API server applies itself, are not.

use std::path::{Path, PathBuf};

use kube::core::DynamicObject;
use kube::core::admission::{AdmissionRequest, AdmissionReview};
use kube::core::conversion::ConversionReview;
use kube::core::response::StatusSummary;
use serde_json::{Map, Value, json};

use super::request::{object_request, plural, scale_request, split_api_version, stored_namespace};
use super::state::StateDir;
use super::{CliError, EXIT_ALLOWED, EXIT_DENIED, EXIT_UNUSABLE, manifest};
use crate::convert::{KIND, V1BETA1, V1BETA2, convert_object};
use crate::server::dispatch::{self, Answer, Endpoint, Outcome, Settings};

pub use super::request::{ManifestOperation, Propagation};

/// What a manifest review writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Subresource {
    /// The object itself.
    #[default]
    None,
    /// The GarageCluster's `/scale`: `--old` is the live GarageCluster, NEW the Scale.
    Scale,
}

/// What to review.
#[derive(Clone, Debug)]
pub enum Input {
    /// A recorded AdmissionReview (JSON or YAML).
    Recorded(PathBuf),
    /// Manifests.
    Manifests {
        /// The operation.
        operation: ManifestOperation,
        /// The stored object (UPDATE, DELETE).
        old: Option<PathBuf>,
        /// The submitted object (CREATE, UPDATE).
        new: Option<PathBuf>,
        /// DeleteOptions.propagationPolicy of a DELETE.
        propagation: Option<Propagation>,
        /// The subresource written.
        subresource: Subresource,
    },
}

/// A review to run.
#[derive(Clone, Debug)]
pub struct ReviewCommand {
    /// The request.
    pub input: Input,
    /// Existing objects the cross-object rules read.
    pub state: Option<PathBuf>,
    /// `userInfo.username` of a manifest request.
    pub user: String,
    /// Rule settings (the controller's username for the PVC guard).
    pub settings: Settings,
}

/// The printed result and the exit code.
#[derive(Clone, Debug)]
pub struct ReviewResult {
    /// The AdmissionReview response to print.
    pub output: Value,
    /// 0 allowed, 1 denied, 2 unusable input.
    pub exit_code: i32,
}

fn decode_request(value: Value, path: &Path) -> Result<AdmissionRequest<DynamicObject>, CliError> {
    let parse = |reason: String| CliError::Parse {
        path: path.to_owned(),
        reason,
    };
    let review: AdmissionReview<DynamicObject> =
        serde_json::from_value(value).map_err(|e| parse(format!("not an AdmissionReview: {e}")))?;
    review
        .try_into()
        .map_err(|_| parse("the AdmissionReview carries no request".to_owned()))
}

fn wrap(request: Value) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

/// The request with `object` replaced by `patched` (the mutating webhook's output).
fn with_object(
    request: &AdmissionRequest<DynamicObject>,
    patched: Value,
) -> Result<AdmissionRequest<DynamicObject>, String> {
    let mut request = request.clone();
    request.object = Some(serde_json::from_value(patched).map_err(|e| e.to_string())?);
    Ok(request)
}

/// The same request seen by the other GarageCluster version's webhook: objects converted,
/// `kind`/`resource` moved to that version, `requestKind` left as the client sent it.
fn other_version(
    request: &AdmissionRequest<DynamicObject>,
    to: &str,
) -> Result<AdmissionRequest<DynamicObject>, String> {
    let convert = |object: &Option<DynamicObject>| -> Result<Option<DynamicObject>, String> {
        let Some(object) = object else {
            return Ok(None);
        };
        let value = serde_json::to_value(object).map_err(|e| e.to_string())?;
        let converted = convert_object(value, to).map_err(|e| e.to_string())?;
        serde_json::from_value(converted)
            .map(Some)
            .map_err(|e| e.to_string())
    };
    let mut other = request.clone();
    let version = split_api_version(to).1.to_owned();
    other.object = convert(&request.object)?;
    other.old_object = convert(&request.old_object)?;
    other.kind.version.clone_from(&version);
    other.resource.version = version;
    Ok(other)
}

/// `request` with the mutating webhook's JSON Patch `ops` applied to its object.
fn apply_patch(
    request: &AdmissionRequest<DynamicObject>,
    ops: &Value,
) -> Result<AdmissionRequest<DynamicObject>, CliError> {
    let mut object = serde_json::to_value(&request.object).unwrap_or(Value::Null);
    let parsed: Result<json_patch::Patch, _> = serde_json::from_value(ops.clone());
    parsed
        .map_err(|e| e.to_string())
        .and_then(|p| json_patch::patch(&mut object, &p).map_err(|e| e.to_string()))
        .and_then(|()| with_object(request, object))
        .map_err(|e| CliError::Input(format!("the defaulting patch does not apply: {e}")))
}

fn patch_ops(answer: &Answer) -> Option<Value> {
    let bytes = answer.response.patch.as_ref()?;
    serde_json::from_slice(bytes).ok()
}

fn output(
    uid: &str,
    allowed: bool,
    status: Value,
    warnings: &[String],
    patch: Option<Value>,
) -> Value {
    let mut response = Map::new();
    response.insert("uid".to_owned(), Value::String(uid.to_owned()));
    response.insert("allowed".to_owned(), Value::Bool(allowed));
    response.insert("status".to_owned(), status);
    if !warnings.is_empty() {
        response.insert("warnings".to_owned(), json!(warnings));
    }
    if let Some(patch) = patch {
        response.insert(
            "patchType".to_owned(),
            Value::String("JSONPatch".to_owned()),
        );
        response.insert("patch".to_owned(), patch);
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

fn status_of(answer: &Answer) -> Value {
    serde_json::to_value(&answer.response.result).unwrap_or(Value::Null)
}

fn exit_code(outcome: Outcome) -> i32 {
    match outcome {
        Outcome::Allowed | Outcome::Patched => EXIT_ALLOWED,
        Outcome::Denied => EXIT_DENIED,
        Outcome::Invalid | Outcome::Unavailable => EXIT_UNUSABLE,
    }
}

/// Runs the review. A CREATE whose file holds several documents reviews each object of a
/// kind the rules cover (the file's other objects join the state, as if applied together);
/// other operations take exactly one object per file.
pub async fn run(command: &ReviewCommand) -> Result<Vec<ReviewResult>, CliError> {
    let state = match &command.state {
        Some(dir) => StateDir::load(dir)?,
        None => StateDir::default(),
    };
    match &command.input {
        Input::Recorded(path) => {
            let document = manifest::load_one(path)?;
            if document["kind"] == "ConversionReview" {
                return Ok(vec![conversion(document, path)?]);
            }
            let request = decode_request(document, path)?;
            Ok(vec![
                review_request(request, &state, &command.settings).await?,
            ])
        }
        Input::Manifests {
            operation,
            old,
            new,
            propagation,
            subresource,
        } => {
            let path = command.input_path().unwrap_or_default();
            let old = old.as_deref().map(manifest::load_one).transpose()?;
            let news = match new.as_deref() {
                Some(p) if *operation == ManifestOperation::Create => manifest::load(p)?,
                Some(p) => vec![manifest::load_one(p)?],
                None => Vec::new(),
            };
            check_arguments(
                *operation,
                old.is_some(),
                news.len(),
                *propagation,
                *subresource,
            )?;
            if let (Subresource::Scale, Some(live), Some(scale)) =
                (subresource, old.as_ref(), news.first())
            {
                let live = stored_namespace(live.clone());
                let request = wrap(scale_request(&live, scale.clone(), &command.user)?);
                let request = decode_request(request, &path)?;
                let mut state = state;
                state.put_garage_cluster(live, &path)?;
                return Ok(vec![
                    review_request(request, &state, &command.settings).await?,
                ]);
            }
            let old = match old {
                Some(old) => Some(as_stored(old, &state, command, &path).await?),
                None => None,
            };
            if news.len() <= 1 {
                let request = wrap(object_request(
                    *operation,
                    old,
                    news.into_iter().next(),
                    &command.user,
                    *propagation,
                )?);
                let request = decode_request(request, &path)?;
                return Ok(vec![
                    review_request(request, &state, &command.settings).await?,
                ]);
            }
            let reviewable: Vec<bool> = news
                .iter()
                .map(|d| plural(d["kind"].as_str().unwrap_or_default()).is_some())
                .collect();
            if !reviewable.contains(&true) {
                return Err(CliError::Input(format!(
                    "{} holds no GarageCluster, GarageNode, GarageBucket, GarageKey, GarageAdminToken, GarageReferenceGrant or PersistentVolumeClaim",
                    path.display()
                )));
            }
            let mut results = Vec::new();
            for (index, document) in news.iter().enumerate() {
                if !reviewable[index] {
                    continue;
                }
                let mut with_others = state.clone();
                for (other_index, other) in news.iter().enumerate() {
                    if other_index != index {
                        with_others.add(other.clone(), &path)?;
                    }
                }
                let request = wrap(object_request(
                    *operation,
                    None,
                    Some(document.clone()),
                    &command.user,
                    None,
                )?);
                let request = decode_request(request, &path)?;
                results.push(review_request(request, &with_others, &command.settings).await?);
            }
            Ok(results)
        }
    }
}

/// Refuses argument combinations that make no request.
fn check_arguments(
    operation: ManifestOperation,
    has_old: bool,
    news: usize,
    propagation: Option<Propagation>,
    subresource: Subresource,
) -> Result<(), CliError> {
    let refuse = |why: &str| Err(CliError::Input(why.to_owned()));
    match operation {
        ManifestOperation::Create if has_old => return refuse("CREATE takes no --old"),
        ManifestOperation::Create if news == 0 => return refuse("CREATE needs the object as NEW"),
        ManifestOperation::Update if !has_old || news == 0 => {
            return refuse("UPDATE needs --old OLD and NEW");
        }
        ManifestOperation::Delete if news > 0 => {
            return refuse("DELETE takes the object as --old, not NEW");
        }
        _ => {}
    }
    if propagation.is_some() && operation != ManifestOperation::Delete {
        return refuse("--propagation sets the DeleteOptions of a DELETE");
    }
    if subresource == Subresource::Scale && operation != ManifestOperation::Update {
        return refuse(
            "--subresource scale reviews an UPDATE: --old the live GarageCluster, NEW the Scale",
        );
    }
    Ok(())
}

/// `old` as the API server stored it: the mutating webhook of its version applied, as it was
/// when the object was created or last written. A manifest taken from git lacks what the
/// defaulting webhook adds, and an UPDATE against it would look like a spec change.
async fn as_stored(
    old: Value,
    state: &StateDir,
    command: &ReviewCommand,
    path: &Path,
) -> Result<Value, CliError> {
    let kind = old["kind"].as_str().unwrap_or_default();
    if plural(kind).is_none() {
        return Ok(old);
    }
    let request = wrap(object_request(
        ManifestOperation::Create,
        None,
        Some(old.clone()),
        &command.user,
        None,
    )?);
    let request = decode_request(request, path)?;
    let r = &request.resource;
    let Some(mutating) = Endpoint::for_resource(&r.group, &r.version, &r.resource, None, true)
        .filter(|e| e.is_mutating())
    else {
        return Ok(old);
    };
    let answer = dispatch::review(mutating, &request, state, &command.settings).await;
    match patch_ops(&answer) {
        Some(ops) if answer.response.allowed => {
            let patched = apply_patch(&request, &ops)?;
            serde_json::to_value(&patched.object)
                .map_err(|e| CliError::Input(format!("the defaulted --old does not encode: {e}")))
        }
        _ => Ok(old),
    }
}

/// Answers a recorded ConversionReview as the `/convert` endpoint would: exit 0 when every
/// object converted, 1 when the conversion failed.
fn conversion(document: Value, path: &Path) -> Result<ReviewResult, CliError> {
    let review: ConversionReview =
        serde_json::from_value(document).map_err(|e| CliError::Parse {
            path: path.to_owned(),
            reason: format!("not a ConversionReview: {e}"),
        })?;
    let answered = crate::convert::convert_review(review);
    let success = answered
        .response
        .as_ref()
        .is_some_and(|r| r.result.status == Some(StatusSummary::Success));
    let output = serde_json::to_value(&answered).map_err(|e| CliError::Parse {
        path: path.to_owned(),
        reason: format!("the ConversionReview response does not encode: {e}"),
    })?;
    Ok(ReviewResult {
        output,
        exit_code: if success { EXIT_ALLOWED } else { EXIT_DENIED },
    })
}

/// Runs the mutating and validating rules the API server would call for `request`.
pub async fn review_request(
    request: AdmissionRequest<DynamicObject>,
    state: &StateDir,
    settings: &Settings,
) -> Result<ReviewResult, CliError> {
    let mut request = request;
    let r = request.resource.clone();
    let sub = request.sub_resource.clone();
    let Some(validating) =
        Endpoint::for_resource(&r.group, &r.version, &r.resource, sub.as_deref(), false)
    else {
        return Err(CliError::Input(format!(
            "no admission rules for {}/{} {}{}",
            r.group,
            r.version,
            r.resource,
            sub.map(|s| format!("/{s}")).unwrap_or_default()
        )));
    };
    let mutating = Endpoint::for_resource(&r.group, &r.version, &r.resource, sub.as_deref(), true)
        .filter(|e| e.is_mutating());
    let uid = request.uid.clone();
    let mut warnings = Vec::new();
    let mut patch = None;

    if let Some(mutating) = mutating {
        let answer = dispatch::review(mutating, &request, state, settings).await;
        warnings.extend(answer.response.warnings.clone().unwrap_or_default());
        if !answer.response.allowed {
            return Ok(ReviewResult {
                output: output(&uid, false, status_of(&answer), &warnings, None),
                exit_code: exit_code(answer.outcome),
            });
        }
        if let Some(ops) = patch_ops(&answer) {
            request = apply_patch(&request, &ops)?;
            patch = Some(ops);
        }
    }

    let answer = dispatch::review(validating, &request, state, settings).await;
    warnings.extend(answer.response.warnings.clone().unwrap_or_default());
    let mut outcome = answer.outcome;
    let mut status = status_of(&answer);
    let mut allowed = answer.response.allowed;

    let equivalent = match validating {
        Endpoint::ValidateClusterV1beta2 => Some((Endpoint::ValidateClusterV1beta1, V1BETA1)),
        Endpoint::ValidateClusterV1beta1 => Some((Endpoint::ValidateClusterV1beta2, V1BETA2)),
        _ => None,
    };
    if let Some((endpoint, to)) = equivalent
        && outcome != Outcome::Invalid
    {
        // The API server converts the object for the other version's webhook; when that
        // fails the write fails, so the failure is one more denial, not unusable input.
        let (second_allowed, second_outcome, second_status, second_warnings) = match other_version(
            &request, to,
        ) {
            Ok(other) => {
                let second = dispatch::review(endpoint, &other, state, settings).await;
                (
                    second.response.allowed,
                    second.outcome,
                    status_of(&second),
                    second.response.warnings.unwrap_or_default(),
                )
            }
            Err(e) => (
                false,
                Outcome::Denied,
                json!({
                    "status": "Failure",
                    "code": 500,
                    "reason": "InternalError",
                    "message": format!("the {KIND} does not convert to {to} for that version's validating webhook (matchPolicy Equivalent), so the API server cannot admit it: {e}"),
                }),
                Vec::new(),
            ),
        };
        for warning in second_warnings {
            if !warnings.contains(&warning) {
                warnings.push(warning);
            }
        }
        if !second_allowed {
            if allowed {
                status = second_status;
                outcome = second_outcome;
            } else if let Some(message) = status.get_mut("message") {
                let first = message.as_str().unwrap_or_default().to_owned();
                let extra = second_status["message"].as_str().unwrap_or_default();
                if !first.contains(extra) {
                    *message = Value::String(format!("{first}; {extra}"));
                }
            }
            allowed = false;
        }
    }
    Ok(ReviewResult {
        // A denied request is not stored, so the defaulting patch is moot.
        output: output(&uid, allowed, status, &warnings, patch.filter(|_| allowed)),
        exit_code: exit_code(outcome),
    })
}

impl ReviewCommand {
    fn input_path(&self) -> Option<PathBuf> {
        match &self.input {
            Input::Recorded(path) => Some(path.clone()),
            Input::Manifests { new, old, .. } => new.clone().or_else(|| old.clone()),
        }
    }
}
