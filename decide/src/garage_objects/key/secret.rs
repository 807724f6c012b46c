//! The credentials Secret of a GarageKey, rendered from `spec.secretTemplate`: the S3 key
//! pair, and unless switched off the endpoint, host, scheme and region, and
//! when asked the bucket name and an AWS shared credentials file. Pure.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use shared_types::garage_key::{GarageKey, KeySecretTemplate};
use shared_types::keys::{annotation, label};

use crate::desired::{DesiredError, controller_ref, rendered_hash};

/// Where clients reach the S3 API, and as what region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `http` or `https`.
    pub scheme: String,
    /// `host:port`; none when the operator cannot know it (a management handle reached
    /// through an Admin API URL).
    pub host: Option<String>,
    /// S3 region.
    pub region: String,
}

/// The name of the key's credentials Secret.
pub fn secret_name(key: &GarageKey) -> String {
    key.spec
        .secret_template
        .as_ref()
        .and_then(|t| t.name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| key.metadata.name.clone().unwrap_or_default())
}

fn key_or(value: Option<&String>, default: &str) -> String {
    value
        .filter(|v| !v.is_empty())
        .cloned()
        .unwrap_or_else(|| default.to_owned())
}

/// Why `key`'s Secret cannot be rendered with `endpoint`: it asks for the S3 endpoint
/// (`includeEndpoint`, true by default) and the operator does not know it.
pub fn endpoint_problem(key: &GarageKey, endpoint: &Endpoint) -> Option<DesiredError> {
    let include = key
        .spec
        .secret_template
        .as_ref()
        .and_then(|t| t.include_endpoint)
        .unwrap_or(true);
    (include && endpoint.host.is_none()).then(|| DesiredError::Invalid {
        field: "spec.secretTemplate.includeEndpoint",
        message: "the key's cluster is a management handle reached through spec.connectTo.adminApiEndpoint, whose S3 endpoint the operator cannot know; set spec.secretTemplate.includeEndpoint to false and give clients the endpoint yourself".into(),
    })
}

/// The Secret, controlled by `key`. `bucket` is the one bucket's name, when the key references
/// exactly one.
pub fn render(
    key: &GarageKey,
    access_key_id: &str,
    secret_access_key: &str,
    endpoint: &Endpoint,
    bucket: Option<&str>,
) -> Result<Secret, DesiredError> {
    let default = KeySecretTemplate::default();
    let t = key.spec.secret_template.as_ref().unwrap_or(&default);
    let mut data: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in t.additional_data.iter().flatten() {
        data.insert(k.clone(), v.clone());
    }
    data.insert(
        key_or(t.access_key_id_key.as_ref(), "access-key-id"),
        access_key_id.to_owned(),
    );
    data.insert(
        key_or(t.secret_access_key_key.as_ref(), "secret-access-key"),
        secret_access_key.to_owned(),
    );
    if let Some(e) = endpoint_problem(key, endpoint) {
        return Err(e);
    }
    if t.include_endpoint.unwrap_or(true)
        && let Some(host) = &endpoint.host
    {
        data.insert(
            key_or(t.endpoint_key.as_ref(), "endpoint"),
            format!("{}://{host}", endpoint.scheme),
        );
        data.insert(key_or(t.host_key.as_ref(), "host"), host.clone());
        data.insert(
            key_or(t.scheme_key.as_ref(), "scheme"),
            endpoint.scheme.clone(),
        );
    }
    if t.include_region.unwrap_or(true) {
        data.insert(
            key_or(t.region_key.as_ref(), "region"),
            endpoint.region.clone(),
        );
    }
    if t.include_bucket_name.unwrap_or(false)
        && let Some(bucket) = bucket
    {
        data.insert(
            key_or(t.bucket_name_key.as_ref(), "bucket"),
            bucket.to_owned(),
        );
    }
    if t.include_credentials_file.unwrap_or(false) {
        let profile = key_or(t.credentials_file_profile.as_ref(), "default");
        data.insert(
            key_or(t.credentials_file_key.as_ref(), "credentials"),
            format!(
                "[{profile}]\naws_access_key_id = {access_key_id}\naws_secret_access_key = {secret_access_key}\n"
            ),
        );
    }
    let mut labels = t.labels.clone().unwrap_or_default();
    labels.insert(
        label::LABEL_APP_MANAGED_BY.into(),
        label::value::MANAGED_BY_OPERATOR.into(),
    );
    labels.insert(
        label::LABEL_KEY.into(),
        key.metadata.name.clone().unwrap_or_default(),
    );
    let mut annotations = t.annotations.clone().unwrap_or_default();
    let secret_type = t
        .type_
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "Opaque".into());
    // The hash covers everything rendered, the credentials included, so any change rewrites
    // the Secret and an unchanged one is never written.
    annotations.insert(
        annotation::ANNOTATION_RENDERED_HASH.into(),
        rendered_hash(&(&data, &labels, &t.annotations, &secret_type)),
    );
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(secret_name(key)),
            namespace: key.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![controller_ref(key)?]),
            ..ObjectMeta::default()
        },
        type_: Some(secret_type),
        data: Some(
            data.into_iter()
                .map(|(k, v)| (k, ByteString(v.into_bytes())))
                .collect(),
        ),
        ..Secret::default()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn key(template: serde_json::Value) -> GarageKey {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "garage.rajsingh.info/v1beta1",
            "kind": "GarageKey",
            "metadata": {"name": "app-key", "namespace": "apps", "uid": "u-1"},
            "spec": {"clusterRef": {"name": "garage"}, "secretTemplate": template},
        }))
        .unwrap()
    }

    fn endpoint() -> Endpoint {
        Endpoint {
            scheme: "http".into(),
            host: Some("garage.storage.svc:3900".into()),
            region: "garage".into(),
        }
    }

    fn text(s: &Secret, k: &str) -> Option<String> {
        s.data
            .as_ref()?
            .get(k)
            .map(|b| String::from_utf8(b.0.clone()).unwrap())
    }

    #[test]
    fn defaults_give_the_key_pair_endpoint_and_region() {
        let s = render(
            &key(serde_json::json!({})),
            "GKabc",
            "sec",
            &endpoint(),
            Some("b"),
        )
        .unwrap();
        assert_eq!(s.metadata.name.as_deref(), Some("app-key"));
        assert_eq!(text(&s, "access-key-id").as_deref(), Some("GKabc"));
        assert_eq!(text(&s, "secret-access-key").as_deref(), Some("sec"));
        assert_eq!(
            text(&s, "endpoint").as_deref(),
            Some("http://garage.storage.svc:3900")
        );
        assert_eq!(text(&s, "host").as_deref(), Some("garage.storage.svc:3900"));
        assert_eq!(text(&s, "scheme").as_deref(), Some("http"));
        assert_eq!(text(&s, "region").as_deref(), Some("garage"));
        assert_eq!(text(&s, "bucket"), None);
        assert_eq!(text(&s, "credentials"), None);
        assert_eq!(s.type_.as_deref(), Some("Opaque"));
        let owner = &s.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.uid.as_str(), owner.controller), ("u-1", Some(true)));
    }

    #[test]
    fn the_sample_template_renders_every_option() {
        let s = render(
            &key(serde_json::json!({
                "name": "app-s3-credentials",
                "labels": {"app": "my-app"},
                "accessKeyIdKey": "AWS_ACCESS_KEY_ID",
                "secretAccessKeyKey": "AWS_SECRET_ACCESS_KEY",
                "endpointKey": "S3_ENDPOINT",
                "hostKey": "S3_HOST",
                "schemeKey": "S3_SCHEME",
                "regionKey": "AWS_REGION",
                "includeBucketName": true,
                "bucketNameKey": "bucket",
                "includeCredentialsFile": true,
                "credentialsFileKey": "credentials",
                "credentialsFileProfile": "default",
                "additionalData": {"extra": "x"},
            })),
            "GKabc",
            "sec",
            &endpoint(),
            Some("my-bucket"),
        )
        .unwrap();
        assert_eq!(s.metadata.name.as_deref(), Some("app-s3-credentials"));
        assert_eq!(s.metadata.labels.as_ref().unwrap()["app"], "my-app");
        assert_eq!(
            s.metadata.labels.as_ref().unwrap()[label::LABEL_KEY],
            "app-key"
        );
        assert_eq!(text(&s, "AWS_ACCESS_KEY_ID").as_deref(), Some("GKabc"));
        assert_eq!(text(&s, "AWS_SECRET_ACCESS_KEY").as_deref(), Some("sec"));
        assert_eq!(
            text(&s, "S3_ENDPOINT").as_deref(),
            Some("http://garage.storage.svc:3900")
        );
        assert_eq!(
            text(&s, "S3_HOST").as_deref(),
            Some("garage.storage.svc:3900")
        );
        assert_eq!(text(&s, "S3_SCHEME").as_deref(), Some("http"));
        assert_eq!(text(&s, "AWS_REGION").as_deref(), Some("garage"));
        assert_eq!(text(&s, "bucket").as_deref(), Some("my-bucket"));
        assert_eq!(text(&s, "extra").as_deref(), Some("x"));
        assert_eq!(
            text(&s, "credentials").as_deref(),
            Some("[default]\naws_access_key_id = GKabc\naws_secret_access_key = sec\n")
        );
    }

    #[test]
    fn endpoint_and_region_can_be_left_out_and_no_bucket_means_no_bucket_key() {
        let s = render(
            &key(serde_json::json!({"includeEndpoint": false, "includeRegion": false, "includeBucketName": true})),
            "GKabc",
            "sec",
            &endpoint(),
            None,
        )
        .unwrap();
        let keys: Vec<&String> = s.data.as_ref().unwrap().keys().collect();
        assert_eq!(keys, ["access-key-id", "secret-access-key"]);
    }

    #[test]
    fn the_hash_changes_with_the_credentials() {
        let k = key(serde_json::json!({}));
        let hash = |s: &Secret| {
            s.metadata.annotations.as_ref().unwrap()[annotation::ANNOTATION_RENDERED_HASH].clone()
        };
        let a = render(&k, "GKabc", "one", &endpoint(), None).unwrap();
        let b = render(&k, "GKabc", "two", &endpoint(), None).unwrap();
        assert_ne!(hash(&a), hash(&b));
        assert_eq!(
            hash(&a),
            hash(&render(&k, "GKabc", "one", &endpoint(), None).unwrap())
        );
    }
}
