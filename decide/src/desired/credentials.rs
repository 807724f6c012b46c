//! The static credentials a user names in `spec.admin` (the admin token, the metrics token)
//! and their immutable copy `C-credentials-<16 hex>`, the only thing pods mount.
//!
//! One copy holds every named credential, each under the key Garage's file is read from. It is
//! named by a revision keyed with the RPC secret, so a changed value gets a new copy and the
//! pods move to it through the storage rollout. The cluster's annotations name the current
//! copy (`static-credentials-secret`) and the references it was made from
//! (`static-credentials-sources`): a copy made from other references is not used, so adding
//! or changing a reference waits for its copy instead of mounting a key the copy lacks.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use shared_types::garage_cluster::v1beta2::GarageCluster;
use shared_types::keys::annotation;

use super::config::{ADMIN_TOKEN_KEY, METRICS_TOKEN_KEY};
use super::secrets::{self, SecretSource};
use super::{DesiredError, Settings};
use crate::names;

/// One credential the user names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The key it has in the copy (and Garage's file name).
    pub key: &'static str,
    /// The spec field that names it.
    pub field: &'static str,
    /// The user's Secret and key.
    pub source: SecretSource,
}

/// The credentials the cluster names, admin token first.
pub fn parts(c: &GarageCluster) -> Vec<Part> {
    let admin = c.spec.admin.as_ref();
    let mut out = Vec::new();
    if let Some(source) = secrets::admin_token_user_source(c) {
        out.push(Part {
            key: ADMIN_TOKEN_KEY,
            field: "spec.admin.adminTokenSecretRef",
            source,
        });
    }
    if let Some(source) = secrets::user_source(
        admin.and_then(|a| a.metrics_token_secret_ref.as_ref()),
        METRICS_TOKEN_KEY,
    ) {
        out.push(Part {
            key: METRICS_TOKEN_KEY,
            field: "spec.admin.metricsTokenSecretRef",
            source,
        });
    }
    out
}

/// The `static-credentials-sources` value for `parts`: `key=secret:secretKey`, comma
/// separated, in order.
pub fn sources_annotation(parts: &[Part]) -> String {
    parts
        .iter()
        .map(|p| format!("{}={}:{}", p.key, p.source.name, p.source.key))
        .collect::<Vec<_>>()
        .join(",")
}

/// The copy the cluster's annotations name, when it belongs to this cluster and was made from
/// exactly the references the spec names now. A copy annotated without its sources predates
/// them and held the admin token alone.
pub fn pinned_copy<'a>(c: &'a GarageCluster, s: &Settings) -> Option<&'a str> {
    let annotations = c.metadata.annotations.as_ref()?;
    let copy = annotations
        .get(annotation::ANNOTATION_STATIC_CREDENTIALS_SECRET)
        .filter(|n| n.starts_with(&format!("{}-credentials-", s.name)))?;
    let parts = parts(c);
    let matches = match annotations.get(annotation::ANNOTATION_STATIC_CREDENTIALS_SOURCES) {
        Some(recorded) => *recorded == sources_annotation(&parts),
        None => parts.len() == 1 && parts[0].key == ADMIN_TOKEN_KEY,
    };
    matches.then_some(copy.as_str())
}

/// False while a named credential has no copy yet: nothing that mounts the credentials may be
/// rendered before, or every pod would be replaced again as soon as the copy exists.
pub fn pinned(c: &GarageCluster, s: &Settings) -> bool {
    parts(c).is_empty() || pinned_copy(c, s).is_some()
}

/// `Ready=False` while the credentials are not copied yet: which Secrets the copy waits for.
pub fn waiting(c: &GarageCluster) -> crate::conditions::Desired {
    let named: Vec<String> = parts(c)
        .iter()
        .map(|p| {
            format!(
                "{} (Secret {}, key {})",
                p.field, p.source.name, p.source.key
            )
        })
        .collect();
    crate::conditions::Desired {
        type_: shared_types::conditions::common::CONDITION_READY,
        status: false,
        reason: shared_types::conditions::reason::REASON_WAITING_FOR_DEPENDENCY,
        message: format!(
            "waiting for {} to exist and hold a token (visible ASCII without '.') to copy; no workload is rendered or changed until then",
            named.join(" and ")
        ),
    }
}

/// Where pods read the metrics token: the copy's `metrics-token`, once it holds it.
pub fn metrics_token_source(c: &GarageCluster, s: &Settings) -> Option<SecretSource> {
    parts(c)
        .iter()
        .any(|p| p.key == METRICS_TOKEN_KEY)
        .then_some(())?;
    Some(SecretSource {
        name: pinned_copy(c, s)?.to_owned(),
        key: METRICS_TOKEN_KEY.into(),
        generated: false,
    })
}

/// Revision of the copy of `values` (each part with the value read from its Secret): keyed by
/// the RPC secret, so the copy's name reveals nothing about a weak token to someone who can
/// only list Secret names. An admin token alone keeps the revision it always had.
pub fn revision(rpc_secret: &[u8], values: &[(Part, String)]) -> String {
    let message = values
        .iter()
        .map(|(p, value)| {
            format!(
                "garage-operator/static-credentials/v1\0{}\0{}:{}\0{value}",
                p.key, p.source.name, p.source.key
            )
        })
        .collect::<Vec<_>>()
        .join("\0\0");
    names::hex(&names::hmac_sha256(rpc_secret, message.as_bytes()))
}

/// The immutable copy of `values`, named by `revision`. Each value must be visible ASCII
/// without `.`: Garage reads a dotted bearer as a dynamic token.
pub fn snapshot(
    c: &GarageCluster,
    s: &Settings,
    revision: &str,
    values: &[(Part, String)],
) -> Result<Secret, DesiredError> {
    let mut data = BTreeMap::new();
    for (p, value) in values {
        let v = value.trim();
        if v.is_empty() || v.contains('.') || !v.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(DesiredError::Invalid {
                field: p.field,
                message: format!(
                    "Secret {} key {} must hold visible ASCII without '.' (Garage reads a dotted bearer as a dynamic token)",
                    p.source.name, p.source.key
                ),
            });
        }
        data.insert(p.key.to_owned(), ByteString(v.as_bytes().to_vec()));
    }
    let mut secret = secrets::immutable_secret(
        c,
        names::credentials_snapshot(&s.name, revision),
        ADMIN_TOKEN_KEY,
        String::new(),
        BTreeMap::from([(
            annotation::ANNOTATION_STATIC_CREDENTIALS_REVISION.to_owned(),
            revision.to_owned(),
        )]),
    )?;
    // Every part's key, in place of the single one the builder writes.
    secret.data = Some(data);
    Ok(secret)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::desired::test_support::cluster;

    fn named(admin: bool, metrics: Option<&str>) -> GarageCluster {
        let mut c = cluster(3);
        let mut a = serde_json::json!({});
        if admin {
            a["adminTokenSecretRef"] = serde_json::json!({"name": "tok"});
        }
        if let Some(m) = metrics {
            a["metricsTokenSecretRef"] = serde_json::json!({"name": m, "key": "t"});
        }
        c.spec.admin = Some(serde_json::from_value(a).unwrap());
        c
    }

    fn annotate(c: &mut GarageCluster, copy: &str, sources: Option<&str>) {
        let a = c.metadata.annotations.get_or_insert_default();
        a.insert(
            annotation::ANNOTATION_STATIC_CREDENTIALS_SECRET.into(),
            copy.into(),
        );
        if let Some(v) = sources {
            a.insert(
                annotation::ANNOTATION_STATIC_CREDENTIALS_SOURCES.into(),
                v.into(),
            );
        }
    }

    #[test]
    fn a_copy_is_used_only_when_made_from_the_references_named_now() {
        let copy = "garage-credentials-0123456789abcdef";
        // Nothing named: nothing to pin.
        let c = named(false, None);
        let s = Settings::from_cluster(&c).unwrap();
        assert!(pinned(&c, &s) && metrics_token_source(&c, &s).is_none());
        // A copy annotated before sources were recorded held the admin token alone.
        let mut c = named(true, None);
        annotate(&mut c, copy, None);
        assert!(pinned(&c, &s));
        // The metrics token added: that copy lacks it, so nothing is pinned until a new one.
        let mut c = named(true, Some("m"));
        annotate(&mut c, copy, None);
        assert!(!pinned(&c, &s) && metrics_token_source(&c, &s).is_none());
        annotate(
            &mut c,
            copy,
            Some("admin-token=tok:admin-token,metrics-token=m:t"),
        );
        assert!(pinned(&c, &s));
        let m = metrics_token_source(&c, &s).unwrap();
        assert_eq!((m.name.as_str(), m.key.as_str()), (copy, "metrics-token"));
        // The reference moved to another Secret: the recorded copy is another's.
        let mut moved = named(true, Some("other"));
        moved.metadata.annotations = c.metadata.annotations.clone();
        assert!(!pinned(&moved, &s));
        // A copy that is not one of this cluster's is never used.
        let mut c = named(false, Some("m"));
        annotate(&mut c, "someone-else", Some("metrics-token=m:t"));
        assert!(!pinned(&c, &s));
    }

    #[test]
    fn waiting_names_every_secret_the_copy_needs() {
        let w = waiting(&named(true, Some("m")));
        assert_eq!((w.type_, w.status), ("Ready", false));
        assert!(
            w.message.contains("Secret tok, key admin-token")
                && w.message
                    .contains("spec.admin.metricsTokenSecretRef (Secret m, key t)"),
            "{}",
            w.message
        );
    }

    #[test]
    fn the_copy_holds_every_part_and_an_admin_token_alone_keeps_its_revision() {
        let c = named(true, Some("m"));
        let s = Settings::from_cluster(&c).unwrap();
        let ps = parts(&c);
        let admin_only = vec![(ps[0].clone(), "one".to_owned())];
        // The message an admin token alone was always revised with.
        let legacy = names::hex(&names::hmac_sha256(
            b"rpc",
            "garage-operator/static-credentials/v1\0admin-token\0tok:admin-token\0one".as_bytes(),
        ));
        assert_eq!(revision(b"rpc", &admin_only), legacy);
        let both = vec![
            (ps[0].clone(), "one".to_owned()),
            (ps[1].clone(), "two".to_owned()),
        ];
        let r = revision(b"rpc", &both);
        assert_ne!(r, legacy);
        let copy = snapshot(&c, &s, &r, &both).unwrap();
        let data = copy.data.unwrap();
        assert_eq!(data["admin-token"].0, b"one");
        assert_eq!(data["metrics-token"].0, b"two");
        assert_eq!(copy.immutable, Some(true));
        let bad = vec![(ps[1].clone(), "a.b".to_owned())];
        let e = snapshot(&c, &s, &r, &bad).unwrap_err();
        assert!(
            e.to_string().contains("spec.admin.metricsTokenSecretRef"),
            "{e}"
        );
    }
}
