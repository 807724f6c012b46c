//! Answering a ConversionReview: every object of the batch converted to `desiredAPIVersion`, or
//! one failure naming the first object that could not be.
//!
//! Objects are handled as JSON so that a hostile or malformed batch (wrong kinds, unknown
//! versions, broken objects) produces a failure status and never a panic. Metadata leaves exactly
//! as it came, byte for byte, except for the reserved transport annotations: the API server
//! refuses a conversion that changes anything else in it.

use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde_json::{Map, Value};

use super::{ConvertError, decode_v1beta1, decode_v1beta2, to_v1beta1, to_v1beta2};

/// API group of GarageCluster.
pub const GROUP: &str = "garage.rajsingh.info";
/// The kind this webhook converts.
pub const KIND: &str = "GarageCluster";
/// apiVersion of the unserved placeholder version (CONV-1).
pub const V1ALPHA1: &str = "garage.rajsingh.info/v1alpha1";
/// apiVersion of the deprecated flat shape.
pub const V1BETA1: &str = "garage.rajsingh.info/v1beta1";
/// apiVersion of the hub and storage version.
pub const V1BETA2: &str = "garage.rajsingh.info/v1beta2";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1alpha1,
    V1beta1,
    V1beta2,
}

impl Version {
    fn parse(api_version: &str) -> Option<Self> {
        match api_version {
            V1ALPHA1 => Some(Version::V1alpha1),
            V1BETA1 => Some(Version::V1beta1),
            V1BETA2 => Some(Version::V1beta2),
            _ => None,
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Version::V1alpha1 => V1ALPHA1,
            Version::V1beta1 => V1BETA1,
            Version::V1beta2 => V1BETA2,
        }
    }
}

/// Answers a ConversionReview. The response carries the request's uid and either every object
/// converted, in order, or a failure whose message names the object and the problem (the API
/// server then fails the client's request with it).
pub fn convert_review(review: ConversionReview) -> ConversionReview {
    let Ok(mut request) = ConversionRequest::from_review(review) else {
        let status =
            Status::failure("the ConversionReview carries no request", "BadRequest").with_code(400);
        return ConversionResponse::invalid(status).into_review();
    };
    let objects = std::mem::take(&mut request.objects);
    let desired = request.desired_api_version.clone();
    let response = ConversionResponse::for_request(request);

    let Some(target) = Version::parse(&desired) else {
        let message = format!(
            "desiredAPIVersion {desired:?} is not a version of GarageCluster (expected {V1BETA2}, \
             {V1BETA1} or {V1ALPHA1})"
        );
        let status = Status::failure(&message, "BadRequest").with_code(400);
        return response.failure(status).into_review();
    };

    let total = objects.len();
    let mut converted = Vec::with_capacity(total);
    for (index, object) in objects.into_iter().enumerate() {
        let name = describe(&object);
        match convert_to(object, target) {
            Ok(object) => converted.push(object),
            Err(error) => {
                let message = format!(
                    "cannot convert {name} (object {} of {total}) to {desired}: {error}",
                    index + 1
                );
                let status = Status::failure(&message, "Invalid").with_code(422);
                return response.failure(status).into_review();
            }
        }
    }
    response.success(converted).into_review()
}

/// Converts one ConversionReview object to `desired_api_version`. An object already in that
/// version is returned unchanged.
pub fn convert_object(object: Value, desired_api_version: &str) -> Result<Value, ConvertError> {
    let target =
        Version::parse(desired_api_version).ok_or_else(|| ConvertError::UnknownApiVersion {
            api_version: desired_api_version.to_owned(),
        })?;
    convert_to(object, target)
}

fn convert_to(object: Value, target: Version) -> Result<Value, ConvertError> {
    let fields = object.as_object().ok_or(ConvertError::NotAnObject)?;
    let api_version = fields
        .get("apiVersion")
        .and_then(Value::as_str)
        .ok_or(ConvertError::MissingApiVersion)?;
    let kind = fields
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind != KIND {
        return Err(ConvertError::WrongKind {
            kind: kind.to_owned(),
        });
    }
    let source = Version::parse(api_version).ok_or_else(|| ConvertError::UnknownApiVersion {
        api_version: api_version.to_owned(),
    })?;
    let metadata = match fields.get("metadata") {
        Some(Value::Object(metadata)) => metadata.clone(),
        _ => return Err(ConvertError::MissingMetadata),
    };
    if source == target {
        return Ok(object);
    }

    let (mut converted, annotations_before) = match (source, target) {
        (Version::V1beta1, Version::V1beta2) => {
            let typed = decode_v1beta1(object)?;
            let before = typed.metadata.annotations.clone();
            (encode(&to_v1beta2(typed)?)?, before)
        }
        (Version::V1beta2, Version::V1beta1) => {
            let typed = decode_v1beta2(object)?;
            let before = typed.metadata.annotations.clone();
            (encode(&to_v1beta1(typed)?)?, before)
        }
        // CONV-1: v1alpha1 is an unserved placeholder that only lets storage-version migration
        // touch old objects; it keeps metadata and nothing else, in both directions.
        _ => {
            let placeholder = serde_json::json!({
                "apiVersion": target.api_version(),
                "kind": KIND,
                "metadata": {},
            });
            return Ok(with_metadata(placeholder, metadata, None));
        }
    };
    let annotations_after = converted
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("annotations"));
    let changed = annotations_before.map(|a| serde_json::to_value(a).unwrap_or_default())
        != annotations_after;
    converted = with_metadata(converted, metadata, changed.then_some(annotations_after));
    Ok(converted)
}

/// Puts the original metadata back, with the annotations replaced when conversion changed them
/// (`Some(None)` removes them).
fn with_metadata(
    mut object: Value,
    mut metadata: Map<String, Value>,
    annotations: Option<Option<Value>>,
) -> Value {
    match annotations {
        Some(Some(annotations)) => {
            metadata.insert("annotations".to_owned(), annotations);
        }
        Some(None) => {
            metadata.remove("annotations");
        }
        None => {}
    }
    if let Some(fields) = object.as_object_mut() {
        fields.insert("metadata".to_owned(), Value::Object(metadata));
    }
    object
}

fn encode<T: serde::Serialize>(object: &T) -> Result<Value, ConvertError> {
    serde_json::to_value(object).map_err(|source| ConvertError::Encode { source })
}

/// "GarageCluster namespace/name" as far as the object says, for error messages.
fn describe(object: &Value) -> String {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .unwrap_or("object");
    let metadata = object.get("metadata");
    let field = |key: &str| {
        metadata
            .and_then(|m| m.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    match (field("namespace"), field("name")) {
        (Some(namespace), Some(name)) => format!("{kind} {namespace}/{name}"),
        (None, Some(name)) => format!("{kind} {name}"),
        _ => format!("{kind} without a name"),
    }
}
