//! Observed-state type for the `GarageAdminToken` resource (`v1beta1`).

use crate::common::KeyPhase;
use crate::common::SecretReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the operator last observed about the admin token and its Secret.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GarageAdminTokenStatus {
    /// Standard Kubernetes conditions (such as `Ready`) describing reconciliation progress.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// Deprecated; always empty because the token has no expiry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Time>,
    /// The `metadata.generation` that the reported status corresponds to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Coarse lifecycle state of the token resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<KeyPhase>,
    /// The Secret in which the token was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub secret_ref: Option<SecretReference>,
    /// SHA-256 hash of the token, recorded so that tampering with the Secret can be noticed
    /// without revealing the token itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_digest: Option<String>,
    /// Short fingerprint of the token, for display only; not an ID known to Garage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token_id: Option<String>,
}
