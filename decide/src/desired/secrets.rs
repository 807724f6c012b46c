//! The RPC secret and the static admin token, and where pods find them.
//!
//! Both are generated once, stored in immutable Secrets controlled by the cluster, and mounted
//! as files of mode 0400: Garage refuses secret files with group or other permission bits, and
//! an immutable Secret means kubelet can never change bytes under a running process.
//! A Secret the user names is mounted from an immutable copy: the RPC secret's
//! (`C-rpc-secret-snapshot`, here) and the credentials copy of the admin and metrics tokens
//! ([`super::credentials`]).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation;

use super::config::{ADMIN_TOKEN_KEY, RPC_SECRET_KEY};
use super::{DesiredError, Settings, controller_ref, labels};
use crate::names;

/// File mode of every mounted secret file.
pub const SECRET_FILE_MODE: i32 = 0o400;

/// Where a pod reads one secret value from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretSource {
    /// Secret name.
    pub name: String,
    /// Key inside it.
    pub key: String,
    /// True when the operator generates and owns the Secret.
    pub generated: bool,
}

/// The RPC secret the pods mount.
pub fn rpc_secret_source(c: &GarageCluster, s: &Settings) -> SecretSource {
    match c
        .spec
        .network
        .as_ref()
        .and_then(|n| n.rpc_secret_ref.as_ref())
    {
        // The pods mount the immutable copy, never the user's Secret.
        Some(_) => SecretSource {
            name: names::rpc_secret_snapshot(&s.name),
            key: RPC_SECRET_KEY.into(),
            generated: false,
        },
        None => SecretSource {
            name: names::rpc_secret(&s.name),
            key: RPC_SECRET_KEY.into(),
            generated: true,
        },
    }
}

/// A user's Secret reference, with the key Garage's file is read from by default.
pub(super) fn user_source(
    r: Option<&k8s_openapi::api::core::v1::SecretKeySelector>,
    default_key: &str,
) -> Option<SecretSource> {
    let r = r?;
    Some(SecretSource {
        name: r.name.clone(),
        key: if r.key.is_empty() {
            default_key.into()
        } else {
            r.key.clone()
        },
        generated: false,
    })
}

/// The user's Secret `r` as an RPC secret source (key `rpc-secret` unless named).
pub fn user_rpc_source(
    r: Option<&k8s_openapi::api::core::v1::SecretKeySelector>,
) -> Option<SecretSource> {
    user_source(r, RPC_SECRET_KEY)
}

/// The Secret the user names for the RPC secret (`spec.network.rpcSecretRef`), if any.
pub fn rpc_secret_user_source(c: &GarageCluster) -> Option<SecretSource> {
    user_source(
        c.spec.network.as_ref()?.rpc_secret_ref.as_ref(),
        RPC_SECRET_KEY,
    )
}

/// The Secret the user names for the admin token (`spec.admin.adminTokenSecretRef`), if any.
pub fn admin_token_user_source(c: &GarageCluster) -> Option<SecretSource> {
    user_source(
        c.spec.admin.as_ref()?.admin_token_secret_ref.as_ref(),
        ADMIN_TOKEN_KEY,
    )
}

/// The static admin token the pods mount. A user-named token is mounted from its immutable
/// copy once the cluster controller has made it (the cluster's `static-credentials-secret`
/// annotation names it), so an edit of the user's Secret reaches pods only through a rollout.
pub fn admin_token_source(c: &GarageCluster, s: &Settings) -> SecretSource {
    if c.spec
        .admin
        .as_ref()
        .and_then(|a| a.admin_token_secret_ref.as_ref())
        .is_some()
        && let Some(copy) = super::credentials::pinned_copy(c, s)
    {
        return SecretSource {
            name: copy.to_owned(),
            key: ADMIN_TOKEN_KEY.into(),
            generated: false,
        };
    }
    admin_token_user_source(c).unwrap_or_else(|| SecretSource {
        name: names::admin_token_secret(&s.name),
        key: ADMIN_TOKEN_KEY.into(),
        generated: true,
    })
}

/// True for 64 hex digits (32 bytes), the only RPC secret Garage accepts.
pub fn is_valid_rpc_secret(value: &str) -> bool {
    let v = value.trim_end();
    v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The generated RPC secret Secret holding `value` (64 hex digits from a CSPRNG).
pub fn rpc_secret(c: &GarageCluster, s: &Settings, value: &str) -> Result<Secret, DesiredError> {
    if !is_valid_rpc_secret(value) {
        return Err(DesiredError::Invalid {
            field: "rpc secret",
            message: "must be 64 hex digits".into(),
        });
    }
    let canonical = value.trim_end().to_ascii_lowercase();
    let raw: Vec<u8> = (0..32)
        .filter_map(|i| u8::from_str_radix(&canonical[2 * i..2 * i + 2], 16).ok())
        .collect();
    let annotations = BTreeMap::from([(
        annotation::ANNOTATION_RPC_IDENTITY_SHA256.to_owned(),
        names::sha256_hex(&raw),
    )]);
    immutable_secret(
        c,
        names::rpc_secret(&s.name),
        RPC_SECRET_KEY,
        canonical,
        annotations,
    )
}

/// Data key of the key-derivation Secret.
pub const KEY_DERIVATION_SECRET_KEY: &str = "key-derivation-secret";

/// True for what the key-derivation Secret holds: 64 hex digits (32 bytes), like the RPC
/// secret.
pub fn is_valid_key_derivation_secret(value: &str) -> bool {
    is_valid_rpc_secret(value)
}

/// The key-derivation Secret `C-key-derivation` holding `value` (64 hex digits from a CSPRNG).
/// The GarageKey controller derives S3 key material from it and creates it when a key first
/// needs it; no pod mounts it, so reading a Garage pod's files reveals no key's secret.
pub fn key_derivation_secret(c: &GarageCluster, value: &str) -> Result<Secret, DesiredError> {
    if !is_valid_key_derivation_secret(value) {
        return Err(DesiredError::Invalid {
            field: "key-derivation secret",
            message: "must be 64 hex digits".into(),
        });
    }
    immutable_secret(
        c,
        names::key_derivation_secret(c.metadata.name.as_deref().unwrap_or_default()),
        KEY_DERIVATION_SECRET_KEY,
        value.trim_end().to_ascii_lowercase(),
        BTreeMap::new(),
    )
}

/// The generated static admin token Secret holding `value`.
pub fn admin_token_secret(
    c: &GarageCluster,
    s: &Settings,
    value: &str,
) -> Result<Secret, DesiredError> {
    // Garage reads a dotted bearer as a dynamic token id.secret; a static one must not be.
    if value.is_empty() || value.contains('.') || !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(DesiredError::Invalid {
            field: "admin token",
            message: "must be visible ASCII without '.'".into(),
        });
    }
    immutable_secret(
        c,
        names::admin_token_secret(&s.name),
        ADMIN_TOKEN_KEY,
        value.to_owned(),
        BTreeMap::new(),
    )
}

/// The immutable copy of a user-named RPC secret (`C-rpc-secret-snapshot`), recording where
/// it came from.
pub fn rpc_secret_snapshot(
    c: &GarageCluster,
    s: &Settings,
    value: &str,
    source: &SecretSource,
) -> Result<Secret, DesiredError> {
    let mut secret = rpc_secret(c, s, value).map_err(|_| DesiredError::Invalid {
        field: "spec.network.rpcSecretRef",
        message: format!(
            "Secret {} key {} must hold 64 hex digits (32 bytes)",
            source.name, source.key
        ),
    })?;
    secret.metadata.name = Some(names::rpc_secret_snapshot(&s.name));
    secret
        .metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(
            annotation::ANNOTATION_RPC_IDENTITY_SOURCE.into(),
            format!("{}/{}:{}", s.namespace, source.name, source.key),
        );
    Ok(secret)
}

/// Fingerprint of an RPC secret value: SHA-256 of its 32 bytes (never the value itself).
pub fn rpc_fingerprint(value: &str) -> Option<String> {
    if !is_valid_rpc_secret(value) {
        return None;
    }
    let canonical = value.trim_end().to_ascii_lowercase();
    let raw: Vec<u8> = (0..32)
        .filter_map(|i| u8::from_str_radix(&canonical[2 * i..2 * i + 2], 16).ok())
        .collect();
    Some(names::sha256_hex(&raw))
}

/// An immutable Secret controlled by the cluster, holding `value` under `key`.
pub(super) fn immutable_secret(
    c: &GarageCluster,
    name: String,
    key: &str,
    value: String,
    annotations: BTreeMap<String, String>,
) -> Result<Secret, DesiredError> {
    Ok(Secret {
        metadata: ObjectMeta {
            name: Some(name),
            namespace: c.metadata.namespace.clone(),
            labels: Some(labels::cluster_labels(
                c.metadata.name.as_deref().unwrap_or_default(),
            )),
            annotations: (!annotations.is_empty()).then_some(annotations),
            owner_references: Some(vec![controller_ref(c)?]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            key.to_owned(),
            ByteString(value.into_bytes()),
        )])),
        immutable: Some(true),
        type_: Some("Opaque".into()),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::test_support::cluster;

    const HEX: &str = "4425F5C26C5E11581D3223904324DCB5B5D5DFB14E5E7F35E38C595424F5F1E6\n";

    #[test]
    fn rpc_secret_is_canonical_immutable_and_fingerprinted() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let secret = rpc_secret(&c, &s, HEX).unwrap();
        assert_eq!(secret.metadata.name.as_deref(), Some("garage-rpc-secret"));
        assert_eq!(secret.immutable, Some(true));
        let value = &secret.data.as_ref().unwrap()["rpc-secret"].0;
        assert_eq!(value, HEX.trim_end().to_ascii_lowercase().as_bytes());
        let fp = &secret.metadata.annotations.as_ref().unwrap()
            [annotation::ANNOTATION_RPC_IDENTITY_SHA256];
        assert_eq!(fp.len(), 64);
        assert_ne!(
            fp.as_str(),
            HEX.trim_end().to_ascii_lowercase(),
            "fingerprint, not the secret"
        );
        assert!(rpc_secret(&c, &s, "abc").is_err());
    }

    #[test]
    fn admin_token_refuses_dotted_values() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        assert!(admin_token_secret(&c, &s, "id.secret").is_err());
        let secret = admin_token_secret(&c, &s, "abc123").unwrap();
        assert_eq!(secret.metadata.name.as_deref(), Some("garage-admin-token"));
        assert_eq!(secret.immutable, Some(true));
    }

    #[test]
    fn the_key_derivation_secret_is_labelled_owned_and_immutable_like_the_rpc_secret() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let secret = key_derivation_secret(&c, HEX).unwrap();
        let rpc = rpc_secret(&c, &s, HEX).unwrap();
        assert_eq!(
            secret.metadata.name.as_deref(),
            Some("garage-key-derivation")
        );
        assert_eq!(secret.metadata.namespace, rpc.metadata.namespace);
        assert_eq!(secret.metadata.labels, rpc.metadata.labels);
        assert_eq!(
            secret.metadata.owner_references,
            rpc.metadata.owner_references
        );
        assert_eq!(secret.immutable, Some(true));
        assert_eq!(secret.metadata.annotations, None);
        let data = secret.data.as_ref().unwrap();
        assert_eq!(data.len(), 1);
        assert_eq!(
            data[KEY_DERIVATION_SECRET_KEY].0,
            HEX.trim_end().to_ascii_lowercase().as_bytes()
        );
        assert!(key_derivation_secret(&c, "abc").is_err());
    }

    #[test]
    fn no_garage_pod_mounts_the_key_derivation_secret() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let mut node = crate::desired::nodes::auto_storage_node(&c, &s, 0).unwrap();
        node.metadata.uid = Some("node-uid".into());
        let sts =
            crate::desired::statefulset::statefulset(crate::desired::statefulset::NodeInputs {
                fenced: false,
                cluster: &c,
                settings: &s,
                node: &node,
                config: &super::super::config::revision(&c, &s).unwrap(),
                rpc_secret: &rpc_secret_source(&c, &s),
                admin_token: &admin_token_source(&c, &s),
            })
            .unwrap();
        let rendered = serde_json::to_string(&sts).unwrap();
        assert!(rendered.contains(&names::rpc_secret("garage")));
        assert!(!rendered.contains(&names::key_derivation_secret("garage")));
    }

    #[test]
    fn user_references_are_mounted_and_not_generated() {
        let mut c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        assert!(rpc_secret_source(&c, &s).generated);
        c.spec.admin = Some(shared_types::garage_cluster::common::AdminConfig {
            admin_token_secret_ref: Some(k8s_openapi::api::core::v1::SecretKeySelector {
                name: "mine".into(),
                key: String::new(),
                optional: None,
            }),
            ..Default::default()
        });
        let a = admin_token_source(&c, &s);
        assert_eq!(
            (a.name.as_str(), a.key.as_str(), a.generated),
            ("mine", "admin-token", false)
        );
    }

    #[test]
    fn user_named_secrets_are_mounted_from_their_copies() {
        let mut c = cluster(3);
        c.spec.network = Some(
            serde_json::from_value(
                serde_json::json!({"rpcSecretRef": {"name": "mine", "key": "k"}}),
            )
            .unwrap(),
        );
        c.spec.admin = Some(
            serde_json::from_value(serde_json::json!({"adminTokenSecretRef": {"name": "tok"}}))
                .unwrap(),
        );
        let s = Settings::from_cluster(&c).unwrap();
        let rpc = rpc_secret_source(&c, &s);
        assert_eq!(
            (rpc.name.as_str(), rpc.key.as_str()),
            ("garage-rpc-secret-snapshot", "rpc-secret")
        );
        let user = rpc_secret_user_source(&c).unwrap();
        assert_eq!((user.name.as_str(), user.key.as_str()), ("mine", "k"));
        // Before the copy is pinned the token is mounted as named; after, from the copy.
        assert_eq!(admin_token_source(&c, &s).name, "tok");
        c.metadata.annotations = Some(BTreeMap::from([(
            annotation::ANNOTATION_STATIC_CREDENTIALS_SECRET.to_owned(),
            "garage-credentials-0123456789abcdef".to_owned(),
        )]));
        let admin = admin_token_source(&c, &s);
        assert_eq!(
            (admin.name.as_str(), admin.key.as_str()),
            ("garage-credentials-0123456789abcdef", "admin-token")
        );
        // An annotation naming a Secret that is not one of this cluster's copies is ignored.
        c.metadata.annotations = Some(BTreeMap::from([(
            annotation::ANNOTATION_STATIC_CREDENTIALS_SECRET.to_owned(),
            "someone-else".to_owned(),
        )]));
        assert_eq!(admin_token_source(&c, &s).name, "tok");
    }

    #[test]
    fn a_token_copy_is_named_by_a_keyed_revision_of_its_value() {
        let c = cluster(3);
        let s = Settings::from_cluster(&c).unwrap();
        let source = SecretSource {
            name: "tok".into(),
            key: "admin-token".into(),
            generated: false,
        };
        let part = |value: &str| {
            vec![(
                super::super::credentials::Part {
                    key: "admin-token",
                    field: "spec.admin.adminTokenSecretRef",
                    source: source.clone(),
                },
                value.to_owned(),
            )]
        };
        let revision = super::super::credentials::revision;
        let a = revision(b"rpc", &part("one"));
        assert_eq!(a, revision(b"rpc", &part("one")));
        assert_ne!(a, revision(b"rpc", &part("two")));
        assert_ne!(a, revision(b"other", &part("one")));
        assert_ne!(
            a,
            names::sha256_hex(b"one"),
            "the name must not be a plain hash of the token"
        );
        let snapshot = super::super::credentials::snapshot;
        let copy = snapshot(&c, &s, &a, &part("one")).unwrap();
        assert_eq!(
            copy.metadata.name,
            Some(format!("garage-credentials-{}", &a[..16]))
        );
        assert_eq!(copy.immutable, Some(true));
        let e = snapshot(&c, &s, &a, &part("dotted.token")).unwrap_err();
        assert!(
            matches!(
                e,
                DesiredError::Invalid {
                    field: "spec.admin.adminTokenSecretRef",
                    ..
                }
            ),
            "{e:?}"
        );
        let e = rpc_secret_snapshot(&c, &s, "short", &source).unwrap_err();
        assert!(
            matches!(
                e,
                DesiredError::Invalid {
                    field: "spec.network.rpcSecretRef",
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            rpc_fingerprint(HEX),
            rpc_fingerprint(&HEX.to_ascii_lowercase())
        );
        assert_eq!(rpc_fingerprint("short"), None);
    }
}
