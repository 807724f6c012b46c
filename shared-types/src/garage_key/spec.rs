//! Desired-state types for the `GarageKey` custom resource (`v1beta1`): an S3 access key, the
//! buckets it may use, and the Secret its credentials are published in.

use super::GarageKeyStatus;
use crate::common::ClusterReference;
use crate::common::LocalObjectRef;
use crate::common::SecretReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Desired configuration of a Garage S3 access key.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "garage.rajsingh.info",
    version = "v1beta1",
    kind = "GarageKey",
    namespaced,
    status = "GarageKeyStatus",
    shortname = "gk",
    category = "garage",
    doc = "A Garage S3 access key, its bucket permissions and the Secret its credentials are written to.",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.clusterRef.name"}"#,
    printcolumn = r#"{"name":"KeyID","type":"string","jsonPath":".status.keyId"}"#,
    printcolumn = r#"{"name":"AccessKeyID","type":"string","jsonPath":".status.accessKeyId"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#,
    printcolumn = r#"{"name":"ClusterWide","type":"boolean","jsonPath":".status.clusterWide"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct GarageKeySpec {
    /// Default flags applied to every bucket in the cluster, including buckets the operator
    /// does not manage; a `false` flag is actively removed. `bucketPermissions` entries then
    /// override it per bucket. Intended for backup, admin or monitoring keys.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_buckets: Option<AllBucketsPermission>,
    /// Buckets this key may access and with which flags (at most 100 entries, no duplicates).
    /// Has the same effect as a GarageBucket's `keyPermissions`; grants from both sides are
    /// combined.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxItems" = 100))]
    pub bucket_permissions: Option<Vec<BucketPermission>>,
    /// The GarageCluster in which the key is created. Referencing another namespace needs a
    /// GarageReferenceGrant there. Cannot be changed after creation.
    pub cluster_ref: ClusterReference,
    /// Time (RFC 3339) after which Garage stops accepting the key. The resource is then shown
    /// as expired; the key is neither deleted nor replaced. Cannot be set with `neverExpires`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Time>,
    /// Use existing credentials for this key rather than generating new ones. Cannot be
    /// changed after creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import_key: Option<ImportKey>,
    /// Display name of the key inside Garage. Defaults to the object's `metadata.name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Set the key's expiry in Garage explicitly to "never". Cannot be combined with
    /// `expiresAt`. Defaults to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub never_expires: Option<bool>,
    /// Capabilities of the key that are not tied to a bucket. Keys never get Admin API access;
    /// use an admin token for that.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permissions: Option<KeyCapabilities>,
    /// Controls the name, metadata and data keys of the Secret that receives the key's
    /// credentials.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_template: Option<KeySecretTemplate>,
}

/// Permission flags enforced on every bucket in the cluster. At least one flag must be true.
/// Buckets created outside the operator are affected too.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllBucketsPermission {
    /// Give owner (administration) rights on every bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub owner: Option<bool>,
    /// Allow listing and downloading objects in every bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub read: Option<bool>,
    /// Allow uploading and deleting objects in every bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub write: Option<bool>,
}

/// Access for this key to one bucket. Identify the bucket with exactly one of `bucketRef`,
/// `bucketId` or `globalAlias`, and set at least one permission flag.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "exactly one of bucketRef, bucketId, or globalAlias must be set", "rule": "[has(self.bucketRef), has(self.bucketId), has(self.globalAlias)].filter(x, x).size() == 1"}]))]
pub struct BucketPermission {
    /// Garage's internal ID of the bucket; works for buckets not managed by a GarageBucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bucket_id: Option<String>,
    /// A GarageBucket object. Pointing at another namespace requires a GarageReferenceGrant
    /// there that explicitly allows GarageKey sources.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::legacy::bucket_ref"
    )]
    pub bucket_ref: Option<LocalObjectRef>,
    /// Global alias (cluster-wide name) of the bucket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global_alias: Option<String>,
    /// Give owner rights, e.g. deleting the bucket or changing its website, CORS and
    /// lifecycle settings.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub owner: Option<bool>,
    /// Allow listing and downloading objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub read: Option<bool>,
    /// Allow uploading and deleting objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub write: Option<bool>,
}

/// Existing access credentials to adopt. Provide either `secretRef` or both inline fields
/// `accessKeyId` and `secretAccessKey`, not both.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportKey {
    /// Inline access key ID, `GK` followed by alphanumerics. Prefer `secretRef` so that no
    /// credentials are stored in the resource itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_key_id: Option<String>,
    /// Data key in the `secretRef` Secret holding the access key ID (default
    /// `access-key-id`). Allowed only together with `secretRef`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access_key_id_key: Option<String>,
    /// Inline secret access key matching `accessKeyId`. Prefer `secretRef` for anything
    /// beyond testing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_access_key: Option<String>,
    /// Data key in the `secretRef` Secret holding the secret access key (default
    /// `secret-access-key`). Allowed only together with `secretRef`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_access_key_key: Option<String>,
    /// Secret that holds the credentials to import. Its namespace, if given, must be the
    /// GarageKey's own. Cannot be combined with the inline credential fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-map-type" = "atomic"))]
    pub secret_ref: Option<SecretReference>,
}

/// Key-wide capabilities that do not depend on a particular bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyCapabilities {
    /// Whether the key may create buckets itself over S3. Defaults to false.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub create_bucket: Option<bool>,
}

/// Layout of the generated credentials Secret. Every field is optional; the data key names
/// all have defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeySecretTemplate {
    /// Data key for the access key ID. Defaults to `access-key-id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "access-key-id"))]
    pub access_key_id_key: Option<String>,
    /// Extra entries copied verbatim into the Secret's data. Keys must not collide with the
    /// generated ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_data: Option<BTreeMap<String, String>>,
    /// Annotations set on the generated Secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Data key for the bucket name (default `bucket`); used only with `includeBucketName`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "bucket"))]
    pub bucket_name_key: Option<String>,
    /// Data key for the AWS-style credentials file (default `credentials`); used only with
    /// `includeCredentialsFile`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "credentials"))]
    pub credentials_file_key: Option<String>,
    /// Section name in the credentials file (default `default`). Up to 128 characters:
    /// letters, digits, `_`, `.` and `-`, beginning with a letter or digit.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "default", "maxLength" = 128, "pattern" = "^[A-Za-z0-9][A-Za-z0-9_.-]*$"))]
    pub credentials_file_profile: Option<String>,
    /// Data key for the full S3 endpoint URL including scheme. Defaults to `endpoint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "endpoint"))]
    pub endpoint_key: Option<String>,
    /// Data key for the S3 `host:port` without scheme. Defaults to `host`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "host"))]
    pub host_key: Option<String>,
    /// Add the bucket name to the Secret (default false). Only takes effect when the key
    /// names exactly one bucket through `bucketRef` or `globalAlias`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_bucket_name: Option<bool>,
    /// Add an AWS shared-credentials file containing the key pair under
    /// `credentialsFileProfile` (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_credentials_file: Option<bool>,
    /// Add the S3 endpoint, host and scheme entries. Treated as true when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_endpoint: Option<bool>,
    /// Add the S3 region entry. Treated as true when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_region: Option<bool>,
    /// Labels set on the generated Secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Name of the generated Secret. Defaults to the GarageKey's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Data key for the S3 region. Defaults to `region`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "region"))]
    pub region_key: Option<String>,
    /// Data key for the endpoint scheme (`http` or `https`). Defaults to `scheme`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "scheme"))]
    pub scheme_key: Option<String>,
    /// Data key for the secret access key. Defaults to `secret-access-key`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "secret-access-key"))]
    pub secret_access_key_key: Option<String>,
    /// Kubernetes Secret type. Defaults to `Opaque`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Opaque"))]
    pub type_: Option<String>,
}
