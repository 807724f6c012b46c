//! The CustomResourceDefinitions of this API, assembled from the Rust types.
//!
//! Each kind is one CRD holding all of its versions. Besides the versions the
//! types describe, two kinds of entries are added here:
//!
//! - unserved `v1alpha1` placeholders, so that clusters whose
//!   `status.storedVersions` still lists `v1alpha1` accept the CRD;
//! - the GarageCluster conversion stanza, which routes v1beta1 <-> v1beta2
//!   conversion to the webhook Service at [`CONVERSION_PATH`].

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, CustomResourceDefinitionVersion,
    CustomResourceValidation, JSON, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
    ServiceReference, WebhookClientConfig, WebhookConversion,
};
use kube::CustomResourceExt;
use kube::core::crd::{MergeError, merge_crds};

use crate::{
    garage_admin_token, garage_bucket, garage_cluster, garage_key, garage_node,
    garage_reference_grant,
};

/// Path on the webhook Service that answers ConversionReview requests.
pub const CONVERSION_PATH: &str = "/convert";
/// Default name of the webhook Service the conversion stanza points at; the
/// Helm chart rewrites it to the release's Service.
pub const WEBHOOK_SERVICE_NAME: &str = "garage-operator-webhook";
/// Default namespace of the webhook Service the conversion stanza points at.
pub const WEBHOOK_SERVICE_NAMESPACE: &str = "garage-operator";
/// Port of the webhook Service.
pub const WEBHOOK_SERVICE_PORT: i32 = 443;

/// Every CRD of the API, in a stable order.
pub fn all() -> Result<Vec<CustomResourceDefinition>, MergeError> {
    Ok(vec![
        garage_cluster()?,
        garage_node()?,
        garage_bucket()?,
        garage_key()?,
        garage_admin_token()?,
        garage_reference_grant()?,
    ])
}

/// GarageCluster: v1beta2 (storage), v1beta1 (served, deprecated, converted
/// by the webhook) and the unserved v1alpha1 placeholder.
pub fn garage_cluster() -> Result<CustomResourceDefinition, MergeError> {
    let mut crd = merge_crds(
        vec![
            garage_cluster::v1beta2::GarageCluster::crd(),
            garage_cluster::v1beta1::GarageCluster::crd(),
        ],
        "v1beta2",
    )?;
    crd.spec.versions.push(placeholder_version());
    crd.spec.conversion = Some(CustomResourceConversion {
        strategy: "Webhook".to_owned(),
        webhook: Some(WebhookConversion {
            conversion_review_versions: vec!["v1".to_owned()],
            client_config: Some(WebhookClientConfig {
                service: Some(ServiceReference {
                    name: WEBHOOK_SERVICE_NAME.to_owned(),
                    namespace: WEBHOOK_SERVICE_NAMESPACE.to_owned(),
                    path: Some(CONVERSION_PATH.to_owned()),
                    port: Some(WEBHOOK_SERVICE_PORT),
                }),
                ..Default::default()
            }),
        }),
    });
    Ok(finish(crd))
}

/// GarageNode: v1beta1 (storage) and the unserved v1alpha1 placeholder.
pub fn garage_node() -> Result<CustomResourceDefinition, MergeError> {
    let mut crd = garage_node::GarageNode::crd();
    crd.spec.versions.push(placeholder_version());
    Ok(finish(crd))
}

/// GarageBucket: v1beta1 (storage) and the served historical v1alpha1
/// schema. Both share one stored shape, so no conversion webhook is needed.
pub fn garage_bucket() -> Result<CustomResourceDefinition, MergeError> {
    let crd = merge_crds(
        vec![
            garage_bucket::GarageBucket::crd(),
            garage_bucket::v1alpha1::GarageBucket::crd(),
        ],
        "v1beta1",
    )?;
    Ok(finish(crd))
}

/// GarageKey: v1beta1 (storage) and the unserved v1alpha1 placeholder.
pub fn garage_key() -> Result<CustomResourceDefinition, MergeError> {
    let mut crd = garage_key::GarageKey::crd();
    crd.spec.versions.push(placeholder_version());
    Ok(finish(crd))
}

/// GarageAdminToken: v1beta1 (storage) and the unserved v1alpha1 placeholder.
pub fn garage_admin_token() -> Result<CustomResourceDefinition, MergeError> {
    let mut crd = garage_admin_token::GarageAdminToken::crd();
    crd.spec.versions.push(placeholder_version());
    Ok(finish(crd))
}

/// GarageReferenceGrant: v1beta1 only.
pub fn garage_reference_grant() -> Result<CustomResourceDefinition, MergeError> {
    Ok(finish(garage_reference_grant::GarageReferenceGrant::crd()))
}

/// An unserved, unstored `v1alpha1` entry that accepts any object. It keeps
/// CRD updates valid on clusters that once stored v1alpha1 objects.
fn placeholder_version() -> CustomResourceDefinitionVersion {
    CustomResourceDefinitionVersion {
        name: "v1alpha1".to_owned(),
        served: false,
        storage: false,
        schema: Some(CustomResourceValidation {
            open_api_v3_schema: Some(JSONSchemaProps {
                type_: Some("object".to_owned()),
                x_kubernetes_preserve_unknown_fields: Some(true),
                ..Default::default()
            }),
        }),
        ..Default::default()
    }
}

/// Normalises a CRD assembled from derived schemas so that it accepts and
/// stores exactly what the Go operator's CRDs do:
///
/// - versions in a stable order, so the rendered YAML does not churn;
/// - `apiVersion`, `kind` and `metadata` declared at the root, as every
///   Kubernetes object schema does (`kubectl explain` lists them);
/// - see [`normalise`] for the per-schema rules.
fn finish(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    crd.spec.versions.sort_by(|a, b| a.name.cmp(&b.name));
    for version in &mut crd.spec.versions {
        let Some(root) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        else {
            continue;
        };
        if root.x_kubernetes_preserve_unknown_fields == Some(true) {
            continue;
        }
        normalise(root);
        let props = root.properties.get_or_insert_with(Default::default);
        props.insert("apiVersion".to_owned(), string_prop(API_VERSION_DOC));
        props.insert("kind".to_owned(), string_prop(KIND_DOC));
        props.insert(
            "metadata".to_owned(),
            JSONSchemaProps {
                type_: Some("object".to_owned()),
                ..Default::default()
            },
        );
    }
    crd
}

const API_VERSION_DOC: &str = "Versioned schema of this object, such as garage.rajsingh.info/v1beta2. \
The API server converts between the versions it serves.";
const KIND_DOC: &str = "Kind of this object, in CamelCase.";

fn string_prop(description: &str) -> JSONSchemaProps {
    JSONSchemaProps {
        description: Some(description.to_owned()),
        type_: Some("string".to_owned()),
        ..Default::default()
    }
}

/// Rules applied to every schema node:
///
/// - no `nullable` and no `null` in `enum`: an optional field is omitted when
///   unset, and a `null` from a client is dropped by the API server as for
///   any non-nullable field;
/// - no `title` (schemars adds one per type; Kubernetes ignores it);
/// - int-or-string values accept an integer or a string (`anyOf`), as
///   Kubernetes' own CRD generators declare them;
/// - Secret and ConfigMap key selectors and local object references keep
///   `name` optional with an empty default, as in Kubernetes' published
///   schema, so a manifest that leaves it out is still accepted.
fn normalise(schema: &mut JSONSchemaProps) {
    schema.nullable = None;
    schema.title = None;
    if let Some(values) = schema.enum_.as_mut() {
        values.retain(|v| !v.0.is_null());
    }
    if schema.x_kubernetes_int_or_string == Some(true) && schema.any_of.is_none() {
        schema.any_of = Some(vec![typed("integer"), typed("string")]);
    }
    relax_reference_name(schema);
    for child in schema.properties.iter_mut().flat_map(|p| p.values_mut()) {
        normalise(child);
    }
    match schema.items.as_mut() {
        Some(JSONSchemaPropsOrArray::Schema(items)) => normalise(items),
        Some(JSONSchemaPropsOrArray::Schemas(items)) => items.iter_mut().for_each(normalise),
        None => {}
    }
    if let Some(JSONSchemaPropsOrBool::Schema(extra)) = schema.additional_properties.as_mut() {
        normalise(extra);
    }
}

fn typed(type_: &str) -> JSONSchemaProps {
    JSONSchemaProps {
        type_: Some(type_.to_owned()),
        ..Default::default()
    }
}

/// Key selectors (`key`, `name`, `optional`) and local object references
/// (`name` alone) default `name` to "" instead of requiring it.
fn relax_reference_name(schema: &mut JSONSchemaProps) {
    let Some(props) = schema.properties.as_mut() else {
        return;
    };
    let is_reference = props
        .keys()
        .all(|k| matches!(k.as_str(), "key" | "name" | "optional"))
        && props.contains_key("name");
    if !is_reference {
        return;
    }
    if let Some(name) = props.get_mut("name") {
        name.default = Some(JSON(serde_json::Value::String(String::new())));
    }
    if let Some(required) = schema.required.as_mut() {
        required.retain(|r| r != "name");
        if required.is_empty() {
            schema.required = None;
        }
    }
    schema.x_kubernetes_map_type = Some("atomic".to_owned());
}
