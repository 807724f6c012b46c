//! Desired-state types for the `GarageReferenceGrant` custom resource (`v1beta1`), which
//! opens a namespace to references from Garage objects in other namespaces.

use super::GarageReferenceGrantStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Authorization for objects in other namespaces to point at Garage objects in the namespace
/// where this grant lives. References within one namespace never need a grant.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "garage.rajsingh.info",
    version = "v1beta1",
    kind = "GarageReferenceGrant",
    namespaced,
    status = "GarageReferenceGrantStatus",
    shortname = "grg",
    category = "garage",
    doc = "Lets objects in other namespaces reference Garage objects in this namespace.",
    printcolumn = r#"{"name":"InUse","type":"string","jsonPath":".status.conditions[?(@.type=='InUse')].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct GarageReferenceGrantSpec {
    /// Who may reference into this namespace: each entry pairs a source kind with a namespace
    /// or namespace selector. At least one entry is required.
    #[schemars(extend("minItems" = 1))]
    pub from: Vec<ReferenceGrantFrom>,
    /// Which objects here may be referenced, by kind and optionally name. When omitted, every
    /// GarageCluster and GarageBucket is covered; GarageKey targets must always be listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<ReferenceGrantTo>>,
}

/// One allowed source of references. Set exactly one of `namespace` and `namespaceSelector`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "exactly one of namespace or namespaceSelector must be set", "rule": "has(self.__namespace__) != has(self.namespaceSelector)"}]))]
pub struct ReferenceGrantFrom {
    /// Which kind of object may hold the reference. `GarageAdminToken` is accepted, but
    /// never authorizes anything, because admin tokens must stay in their cluster's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub kind: Option<GrantFromKind>,
    /// Name of a single namespace whose objects are allowed. Non-empty; cannot be combined
    /// with `namespaceSelector`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1))]
    pub namespace: Option<String>,
    /// Label selector over Namespace objects; objects in any matching namespace are allowed.
    /// `{}` matches all namespaces. Cannot be combined with `namespace`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub namespace_selector: Option<LabelSelector>,
}

/// One kind of object in this namespace that may be referenced, optionally a single name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceGrantTo {
    /// Kind of the object being referenced.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    pub kind: Option<GrantToKind>,
    /// Limit the grant to the object with this name; when omitted, every object of `kind` in
    /// this namespace is covered.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minLength" = 1))]
    pub name: Option<String>,
}

/// Kinds that can be named as the source of a cross-namespace reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum GrantFromKind {
    /// GarageKey objects (to reach a cluster or a bucket).
    GarageKey,
    /// GarageBucket objects (to reach a cluster or a key).
    GarageBucket,
    /// GarageAdminToken objects; accepted but never honored.
    GarageAdminToken,
}

/// Kinds that can be the target of a cross-namespace reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum GrantToKind {
    /// GarageCluster objects, referenced via `clusterRef`.
    GarageCluster,
    /// GarageBucket objects, referenced by GarageKey bucket permissions.
    GarageBucket,
    /// GarageKey objects, referenced by GarageBucket key permissions.
    GarageKey,
}
