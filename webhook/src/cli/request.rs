//! AdmissionRequests built from manifests: what the API server would send the webhook for a
//! write of those objects, a DELETE with its DeleteOptions, or a write of a GarageCluster's
//! `/scale` subresource.

use serde_json::{Value, json};

use super::CliError;
use crate::convert::GROUP;

/// The operation of a manifest review.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManifestOperation {
    /// A new object (`NEW`).
    Create,
    /// A change (`--old OLD NEW`).
    Update,
    /// A removal (`--old OLD`).
    Delete,
}

impl ManifestOperation {
    /// The AdmissionRequest operation.
    pub fn as_str(self) -> &'static str {
        match self {
            ManifestOperation::Create => "CREATE",
            ManifestOperation::Update => "UPDATE",
            ManifestOperation::Delete => "DELETE",
        }
    }
}

/// `DeleteOptions.propagationPolicy` of a DELETE (`kubectl delete --cascade=…`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are deleted before the owner (`--cascade=foreground`).
    Foreground,
    /// The owner goes first, the garbage collector removes dependents (`--cascade=background`).
    Background,
    /// Dependents are left in place (`--cascade=orphan`).
    Orphan,
}

impl Propagation {
    /// The API value.
    pub fn as_str(self) -> &'static str {
        match self {
            Propagation::Foreground => "Foreground",
            Propagation::Background => "Background",
            Propagation::Orphan => "Orphan",
        }
    }
}

/// The plural resource of a kind the webhook has rules for.
pub fn plural(kind: &str) -> Option<&'static str> {
    match kind {
        "GarageCluster" => Some("garageclusters"),
        "GarageNode" => Some("garagenodes"),
        "GarageBucket" => Some("garagebuckets"),
        "GarageKey" => Some("garagekeys"),
        "GarageAdminToken" => Some("garageadmintokens"),
        "GarageReferenceGrant" => Some("garagereferencegrants"),
        "PersistentVolumeClaim" => Some("persistentvolumeclaims"),
        _ => None,
    }
}

/// `(group, version)` of an apiVersion.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

/// The namespace the API server gives an object written without one.
fn namespace_of(object: &Value) -> String {
    object["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_owned()
}

/// `object` with the namespace the API server would give it filled in.
pub fn stored_namespace(object: Value) -> Value {
    let namespace = namespace_of(&object);
    with_namespace(object, &namespace)
}

/// `object` with its namespace filled in, as the API server does before any webhook sees it.
fn with_namespace(mut object: Value, namespace: &str) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.entry("namespace")
            .or_insert_with(|| Value::String(namespace.to_owned()));
    }
    object
}

/// The request fields every manifest review shares.
fn envelope(operation: ManifestOperation, name: &str, namespace: &str, user: &str) -> Value {
    json!({
        "uid": "garage-webhook-cli",
        "name": name,
        "namespace": namespace,
        "operation": operation.as_str(),
        "userInfo": {"username": user},
        "dryRun": true,
    })
}

fn insert(request: &mut Value, key: &str, value: Value) {
    if let Some(fields) = request.as_object_mut() {
        fields.insert(key.to_owned(), value);
    }
}

/// An AdmissionRequest (as JSON) for a write of `old`/`new` themselves; a DELETE carries
/// `propagation` in its DeleteOptions.
pub fn object_request(
    operation: ManifestOperation,
    old: Option<Value>,
    new: Option<Value>,
    user: &str,
    propagation: Option<Propagation>,
) -> Result<Value, CliError> {
    let Some(subject) = new.as_ref().or(old.as_ref()).cloned() else {
        return Err(CliError::Input(format!(
            "{} needs {}",
            operation.as_str(),
            if operation == ManifestOperation::Delete {
                "the object as --old"
            } else {
                "the object as NEW"
            }
        )));
    };
    let api_version = subject["apiVersion"].as_str().unwrap_or_default();
    let kind = subject["kind"].as_str().unwrap_or_default();
    let (group, version) = split_api_version(api_version);
    let Some(resource) = plural(kind) else {
        return Err(CliError::Input(format!(
            "no admission rules for {api_version:?} {kind:?}; garage-webhook reviews GarageCluster, GarageNode, GarageBucket, GarageKey, GarageAdminToken, GarageReferenceGrant and PersistentVolumeClaim"
        )));
    };
    if let (Some(o), Some(n)) = (&old, &new)
        && (o["apiVersion"] != n["apiVersion"] || o["kind"] != n["kind"])
    {
        return Err(CliError::Input(
            "--old and NEW must have the same apiVersion and kind".to_owned(),
        ));
    }
    let name = subject["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = namespace_of(&subject);
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let gvr = json!({"group": group, "version": version, "resource": resource});
    let mut request = envelope(operation, name, &namespace, user);
    for key in ["kind", "requestKind"] {
        insert(&mut request, key, gvk.clone());
    }
    for key in ["resource", "requestResource"] {
        insert(&mut request, key, gvr.clone());
    }
    if let Some(object) = new {
        insert(&mut request, "object", with_namespace(object, &namespace));
    }
    if let Some(object) = old {
        insert(
            &mut request,
            "oldObject",
            with_namespace(object, &namespace),
        );
    }
    if let Some(policy) = propagation {
        insert(
            &mut request,
            "options",
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "propagationPolicy": policy.as_str()}),
        );
    }
    Ok(request)
}

/// An AdmissionRequest (as JSON) for an UPDATE of the `/scale` subresource of `live` (a
/// GarageCluster as stored, its apiVersion the version the client addresses) to `scale` (an
/// `autoscaling/v1` Scale). A Scale without `metadata.resourceVersion` gets the live one, as
/// `kubectl scale` sends a patch that the API server applies to the current object.
pub fn scale_request(live: &Value, scale: Value, user: &str) -> Result<Value, CliError> {
    let api_version = live["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = split_api_version(api_version);
    if group != GROUP || live["kind"] != "GarageCluster" {
        return Err(CliError::Input(format!(
            "a /scale review takes the live GarageCluster as --old, not {api_version:?} {:?}",
            live["kind"]
        )));
    }
    if scale["apiVersion"] != "autoscaling/v1" || scale["kind"] != "Scale" {
        return Err(CliError::Input(format!(
            "a /scale review takes an autoscaling/v1 Scale as NEW, not {} {}",
            scale["apiVersion"], scale["kind"]
        )));
    }
    let name = live["metadata"]["name"].as_str().unwrap_or_default();
    let namespace = namespace_of(live);
    if scale["metadata"]["name"]
        .as_str()
        .is_some_and(|n| n != name)
    {
        return Err(CliError::Input(format!(
            "the Scale names {}, the GarageCluster is {name:?}",
            scale["metadata"]["name"]
        )));
    }
    let mut scale = with_namespace(scale, &namespace);
    if let Some(meta) = scale.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.entry("name")
            .or_insert_with(|| Value::String(name.to_owned()));
        if let Some(rv) = live["metadata"]["resourceVersion"].as_str() {
            meta.entry("resourceVersion")
                .or_insert_with(|| Value::String(rv.to_owned()));
        }
    }
    // The Scale the API server derives from the live object: its specReplicasPath per version.
    let replicas = match version {
        "v1beta1" => live.pointer("/spec/replicas"),
        _ => live.pointer("/spec/storage/replicas"),
    };
    let mut old_scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": scale["metadata"].clone(), "spec": {}});
    if let Some(replicas) = replicas {
        old_scale["spec"]["replicas"] = replicas.clone();
    }
    let gvk = json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
    let gvr = json!({"group": group, "version": version, "resource": "garageclusters"});
    let mut request = envelope(ManifestOperation::Update, name, &namespace, user);
    for key in ["kind", "requestKind"] {
        insert(&mut request, key, gvk.clone());
    }
    for key in ["resource", "requestResource"] {
        insert(&mut request, key, gvr.clone());
    }
    for key in ["subResource", "requestSubResource"] {
        insert(&mut request, key, json!("scale"));
    }
    insert(&mut request, "object", scale);
    insert(&mut request, "oldObject", old_scale);
    Ok(request)
}
