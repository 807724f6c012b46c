//! Bucket settings carried in S3's own vocabulary: website, CORS and lifecycle rules.
//!
//! Garage reuses its S3 XML structures for these, so their JSON field names are PascalCase.

use serde::{Deserialize, Serialize};

/// A bucket's website configuration, as `GetBucketInfo` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebsiteConfig {
    /// Index document suffix.
    pub index_document: String,
    /// Error document key.
    #[serde(default)]
    pub error_document: Option<String>,
    /// Routing rules (newer Garage only).
    #[serde(default)]
    pub routing_rules: Option<Vec<RoutingRule>>,
}

/// Website access to set with [`super::BucketUpdate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebsiteAccess {
    /// Serve the bucket as a website.
    pub enabled: bool,
    /// Index document; required when enabling, forbidden when disabling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index_document: Option<String>,
    /// Error document; forbidden when disabling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_document: Option<String>,
    /// Routing rules; `None` keeps the current ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing_rules: Option<Vec<RoutingRule>>,
}

/// A website routing rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutingRule {
    /// When the rule applies.
    #[serde(rename = "Condition", default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<RoutingCondition>,
    /// Where to redirect.
    #[serde(rename = "Redirect")]
    pub redirect: Redirect,
}

/// The condition of a routing rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutingCondition {
    /// HTTP error code to match.
    #[serde(
        rename = "HttpErrorCodeReturnedEquals",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub http_error_code_returned_equals: Option<i64>,
    /// Key prefix to match.
    #[serde(
        rename = "KeyPrefixEquals",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub key_prefix_equals: Option<String>,
}

/// The redirect of a routing rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redirect {
    /// Host to redirect to.
    #[serde(rename = "HostName", default, skip_serializing_if = "Option::is_none")]
    pub host_name: Option<String>,
    /// `http` or `https`.
    #[serde(rename = "Protocol", default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// HTTP status of the redirect.
    #[serde(
        rename = "HttpRedirectCode",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub http_redirect_code: Option<i64>,
    /// Replace the matched prefix with this.
    #[serde(
        rename = "ReplaceKeyPrefixWith",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub replace_key_prefix_with: Option<String>,
    /// Replace the whole key with this.
    #[serde(
        rename = "ReplaceKeyWith",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub replace_key_with: Option<String>,
}

/// A CORS rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorsRule {
    /// Rule id.
    #[serde(rename = "ID", default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// How long browsers may cache the preflight answer.
    #[serde(
        rename = "MaxAgeSeconds",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub max_age_seconds: Option<i64>,
    /// Allowed origins.
    #[serde(rename = "AllowedOrigin")]
    pub allowed_origins: Vec<String>,
    /// Allowed methods.
    #[serde(rename = "AllowedMethod")]
    pub allowed_methods: Vec<String>,
    /// Allowed request headers.
    #[serde(rename = "AllowedHeader", default)]
    pub allowed_headers: Vec<String>,
    /// Response headers exposed to the browser.
    #[serde(rename = "ExposeHeader", default)]
    pub expose_headers: Vec<String>,
}

/// A lifecycle rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleRule {
    /// Rule id.
    #[serde(rename = "ID", default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `Enabled` or `Disabled`.
    #[serde(rename = "Status")]
    pub status: String,
    /// Which objects it applies to.
    #[serde(rename = "Filter", default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<LifecycleFilter>,
    /// When objects expire.
    #[serde(
        rename = "Expiration",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub expiration: Option<LifecycleExpiration>,
    /// When unfinished multipart uploads are aborted.
    #[serde(
        rename = "AbortIncompleteMultipartUpload",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub abort_incomplete_multipart_upload: Option<AbortIncompleteMultipartUpload>,
}

/// The filter of a lifecycle rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleFilter {
    /// A conjunction of filters.
    #[serde(rename = "And", default, skip_serializing_if = "Option::is_none")]
    pub and: Option<Box<LifecycleFilter>>,
    /// Key prefix.
    #[serde(rename = "Prefix", default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Minimum object size.
    #[serde(
        rename = "ObjectSizeGreaterThan",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub object_size_greater_than: Option<i64>,
    /// Maximum object size.
    #[serde(
        rename = "ObjectSizeLessThan",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub object_size_less_than: Option<i64>,
}

/// The expiration of a lifecycle rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleExpiration {
    /// Days after creation.
    #[serde(rename = "Days", default, skip_serializing_if = "Option::is_none")]
    pub days: Option<i64>,
    /// A fixed date (ISO 8601, midnight UTC).
    #[serde(rename = "Date", default, skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
}

/// When to abort unfinished multipart uploads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AbortIncompleteMultipartUpload {
    /// Days after the upload started.
    #[serde(rename = "DaysAfterInitiation")]
    pub days_after_initiation: i64,
}
