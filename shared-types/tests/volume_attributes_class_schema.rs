//! The VolumeAttributesClass field sits on every volume carrier that makes a
//! PVC, with the markers and cost-minimal CEL rules its design requires.

// A failed expectation in a test is the test failing; panics are the point.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray,
};
use shared_types::crds;

const PATTERN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
const PVC_ONLY_RULE: &str = "!has(self.volumeAttributesClassName) || !has(self.type) || self.type == 'PersistentVolumeClaim'";
const NODE_NOT_EMPTYDIR_RULE: &str =
    "!has(self.volumeAttributesClassName) || !has(self.type) || self.type != 'EmptyDir'";
const NODE_NO_EXISTING_CLAIM_RULE: &str = "!has(self.volumeAttributesClassName) || !has(self.existingClaim) || size(self.existingClaim) == 0";
const PVC_ONLY_MESSAGE: &str =
    "volumeAttributesClassName is only valid for PersistentVolumeClaim volumes";
const EXISTING_CLAIM_MESSAGE: &str = "volumeAttributesClassName cannot be combined with existingClaim: the referenced claim is user-managed";

fn version<'a>(crd: &'a CustomResourceDefinition, name: &str) -> &'a JSONSchemaProps {
    crd.spec
        .versions
        .iter()
        .find(|v| v.name == name)
        .and_then(|v| v.schema.as_ref())
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .unwrap_or_else(|| panic!("version {name} has a schema"))
}

/// Follows a dotted path; `[]` steps into array items.
fn at<'a>(root: &'a JSONSchemaProps, path: &str) -> &'a JSONSchemaProps {
    let mut node = root;
    for step in path.split('.') {
        let (name, items) = match step.strip_suffix("[]") {
            Some(name) => (name, true),
            None => (step, false),
        };
        node = node
            .properties
            .as_ref()
            .and_then(|p| p.get(name))
            .unwrap_or_else(|| panic!("{path}: no property {name}"));
        if items {
            node = match node.items.as_ref() {
                Some(JSONSchemaPropsOrArray::Schema(s)) => s,
                _ => panic!("{path}: {name} is not an array"),
            };
        }
    }
    node
}

fn rules(carrier: &JSONSchemaProps) -> Vec<(String, String)> {
    carrier
        .x_kubernetes_validations
        .iter()
        .flatten()
        .map(|r| (r.rule.clone(), r.message.clone().unwrap_or_default()))
        .collect()
}

fn assert_field(carrier: &JSONSchemaProps, path: &str) {
    let field = at(carrier, "volumeAttributesClassName");
    assert_eq!(field.type_.as_deref(), Some("string"), "{path}");
    assert_eq!(field.min_length, Some(1), "{path}: MinLength 1");
    assert_eq!(field.max_length, Some(253), "{path}: MaxLength 253");
    assert_eq!(
        field.pattern.as_deref(),
        Some(PATTERN),
        "{path}: DNS-1123 subdomain"
    );
    assert!(field.default.is_none(), "{path}: no default");
    let doc = field.description.as_deref().unwrap_or_default();
    assert!(
        doc.contains("VolumeAttributesClass"),
        "{path}: documented, got {doc:?}"
    );
}

#[test]
fn garage_cluster_volume_carriers_have_the_field_and_rule_in_both_versions() {
    let crd = crds::garage_cluster().expect("CRD assembles");
    let carriers = [
        ("v1beta2", "spec.storage.metadata"),
        ("v1beta2", "spec.storage.data"),
        ("v1beta2", "spec.storage.data.paths[].volume"),
        ("v1beta2", "spec.gateway.metadata"),
        ("v1beta1", "spec.storage.metadata"),
        ("v1beta1", "spec.storage.data"),
        ("v1beta1", "spec.storage.data.paths[].volume"),
    ];
    for (v, path) in carriers {
        let carrier = at(version(&crd, v), path);
        assert_field(carrier, path);
        assert!(
            rules(carrier).contains(&(PVC_ONLY_RULE.to_owned(), PVC_ONLY_MESSAGE.to_owned())),
            "{v} {path}: PVC-only rule present, got {:?}",
            rules(carrier)
        );
    }
}

#[test]
fn garage_node_volumes_have_the_field_and_both_cost_minimal_rules() {
    let crd = crds::garage_node().expect("CRD assembles");
    let spec = version(&crd, "v1beta1");
    for path in [
        "spec.storage.metadata",
        "spec.storage.data",
        "spec.storage.dataPaths[]",
    ] {
        let carrier = at(spec, path);
        assert_field(carrier, path);
        let found = rules(carrier);
        assert!(
            found.contains(&(
                NODE_NOT_EMPTYDIR_RULE.to_owned(),
                PVC_ONLY_MESSAGE.to_owned()
            )),
            "{path}: {found:?}"
        );
        assert!(
            found.contains(&(
                NODE_NO_EXISTING_CLAIM_RULE.to_owned(),
                EXISTING_CLAIM_MESSAGE.to_owned()
            )),
            "{path}: {found:?}"
        );
    }
    // The legacy list stays unbounded: a new bound could invalidate stored
    // objects, which is why the rules above are written to be cheap.
    assert_eq!(at(spec, "spec.storage.dataPaths").max_items, None);
}

#[test]
fn volume_attributes_class_has_no_default_anywhere() {
    let crd = crds::garage_cluster().expect("CRD assembles");
    let json = serde_json::to_string(&crd).expect("serialisable");
    // An absent class must keep meaning "not managed": no default may be
    // written into stored objects.
    let mut rest = json.as_str();
    while let Some(i) = rest.find("\"volumeAttributesClassName\":{") {
        let body = &rest[i..];
        let end = body.find('}').expect("object closes");
        assert!(!body[..end].contains("\"default\""), "{}", &body[..end]);
        rest = &body[end..];
    }
}
