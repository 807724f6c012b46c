//! Observed-state types for the `GarageReferenceGrant` resource (`v1beta1`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Reports whether the grant is currently relied upon, and by which objects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GarageReferenceGrantStatus {
    /// Standard Kubernetes conditions; `InUse` is True while at least one object depends on
    /// this grant.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// Objects whose cross-namespace references are currently authorized by this grant,
    /// refreshed on each reconcile. When empty, removing the grant breaks nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_use_by: Option<Vec<ReferenceGrantUse>>,
}

/// An object that depends on this grant.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceGrantUse {
    /// Kind of the object relying on the grant, e.g. `GarageKey`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// That object's `metadata.name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// That object's namespace (the source side of the reference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
