//! Listener settings for the Garage HTTP endpoints of a GarageCluster: S3, K2V, static
//! websites and the Admin API (including metrics and tracing).

use k8s_openapi::api::core::v1::SecretKeySelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Settings for the Garage Admin API listener, its `/metrics` endpoint and tracing export.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminConfig {
    /// Secret key holding the bearer token the operator presents to the Admin API (key defaults
    /// to `admin-token`). Bucket, key and layout management depend on it; it is mandatory when
    /// node-local pools are configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub admin_token_secret_ref: Option<SecretKeySelector>,
    /// Explicit listen address for the Admin API, written as a wildcard IP plus port:
    /// `0.0.0.0:<port>` or `[::]:<port>`. Specific hosts, loopback and Unix sockets are not
    /// accepted, since Services and probes must reach every pod. Its port takes precedence over
    /// `bindPort`; the resulting Admin port cannot be changed once the cluster exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind_address: Option<String>,
    /// TCP port of the Admin API (default 3903). Ignored when `bindAddress` is set. The
    /// effective Admin port is fixed at creation and cannot be changed afterwards.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3903, "minimum" = 1, "maximum" = 65535))]
    pub bind_port: Option<i32>,
    /// When true, scrapers must send a bearer token to read `/metrics`. Defaults to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_require_token: Option<bool>,
    /// Secret key holding the token that callers must present to read `/metrics`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub metrics_token_secret_ref: Option<SecretKeySelector>,
    /// Address of an OpenTelemetry (OTLP) collector that receives Garage traces; tracing is off
    /// when empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_sink: Option<String>,
}

/// Settings for the K2V key-value API listener. K2V is only served when this section is
/// present.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct K2vApiConfig {
    /// Explicit listen address for K2V as a wildcard IP plus port (`0.0.0.0:<port>` or
    /// `[::]:<port>`); its port takes precedence over `bindPort`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind_address: Option<String>,
    /// TCP port of the K2V API (default 3904). Must differ from the other listener ports.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3904, "minimum" = 1, "maximum" = 65535))]
    pub bind_port: Option<i32>,
}

/// Settings for the S3-compatible API listener.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct S3ApiConfig {
    /// Explicit listen address for S3 as a wildcard IP plus port (`0.0.0.0:<port>` or
    /// `[::]:<port>`); its port takes precedence over `bindPort`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind_address: Option<String>,
    /// TCP port of the S3 API (default 3900). Must differ from the other listener ports.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3900, "minimum" = 1, "maximum" = 65535))]
    pub bind_port: Option<i32>,
    /// Region name that S3 clients must sign requests for. Defaults to `garage`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(required)]
    #[schemars(extend("default" = "garage"))]
    pub region: Option<String>,
    /// Domain suffix, with a leading dot (for example `.s3.example.com`), under which buckets
    /// are addressed virtual-host style as `<bucket><rootDomain>`. Only path-style access works
    /// when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_domain: Option<String>,
}

/// Settings for the listener that serves buckets as static websites. When the section is
/// omitted the endpoint is still turned on, with root domain `.<name>.<namespace>.svc`; set
/// `enabled: false` to switch it off.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebApiConfig {
    /// When true, the requested host name is recorded as a label on website metrics so traffic
    /// can be broken down per domain. Defaults to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub add_host_to_metrics: Option<bool>,
    /// Explicit listen address for website serving as a wildcard IP plus port (`0.0.0.0:<port>`
    /// or `[::]:<port>`); its port takes precedence over `bindPort`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bind_address: Option<String>,
    /// TCP port of the website endpoint (default 3902). Must differ from the other listener
    /// ports.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3902, "minimum" = 1, "maximum" = 65535))]
    pub bind_port: Option<i32>,
    /// Turns the website endpoint on or off. Treated as true when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Domain suffix, with a leading dot, under which website-enabled buckets are served as
    /// `<bucket><rootDomain>`. When the endpoint is enabled and this is empty, it is set to
    /// `.<name>.<namespace>.svc`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_domain: Option<String>,
}
