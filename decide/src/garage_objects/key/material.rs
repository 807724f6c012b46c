//! Key material derived from a cluster secret: the same GarageKey in the same namespace always
//! gets the same access key ID and secret. Creating the key is then an `ImportKey` that a
//! retried pass repeats harmlessly, with nothing to remember between the call and the status
//! write.
//!
//! New keys derive from the cluster's key-derivation Secret, which no Garage pod mounts. Keys
//! that existed before it keep deriving from the RPC secret, which every Garage pod mounts:
//! changing their material would break every client holding their credentials. Keys the Go
//! operator made derive from the RPC secret too, but keyed by the 32 bytes its hex encodes
//! rather than by the hex text: a cluster taken over from it keeps its keys through
//! [`Derivation::RpcSecretBytes`].

use kube::ResourceExt;
use shared_types::garage_key::GarageKey;

use crate::names::{hex, hmac_sha256};

/// An S3 access key ID and its secret. Never logged.
#[derive(Clone, PartialEq, Eq)]
pub struct Material {
    /// `GK` and 24 hex digits, the shape Garage's `ImportKey` accepts.
    pub access_key_id: String,
    /// 64 hex digits.
    pub secret_access_key: String,
}

impl std::fmt::Debug for Material {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Material")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"<redacted>")
            .finish()
    }
}

/// The secret a key's material is derived from, as recorded on the key in the
/// `key-derivation` annotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Derivation {
    /// The cluster's RPC secret: keys that existed in Garage before the key-derivation Secret.
    RpcSecret,
    /// The 32 bytes the cluster's RPC secret encodes in hex: keys the Go operator made, which
    /// keys its HMAC with those bytes.
    RpcSecretBytes,
    /// The cluster's key-derivation Secret (`<cluster>-key-derivation`).
    KeyDerivationSecret,
    /// [`Derivation::RpcSecretBytes`] keyed by the key's Garage display name (`spec.name`)
    /// instead of its object name: keys Go operator releases before 0.7.4 made, which a later
    /// rename of `spec.name` would otherwise have given other credentials. Only ever inferred
    /// from a key's access key ID, never chosen for a new key.
    RpcSecretBytesSpecName,
}

/// Every derivation, in the order a key with an access key ID and no record tries them.
pub const DERIVATIONS: [Derivation; 4] = [
    Derivation::RpcSecret,
    Derivation::RpcSecretBytes,
    Derivation::KeyDerivationSecret,
    Derivation::RpcSecretBytesSpecName,
];

impl Derivation {
    /// The annotation value that records this derivation.
    pub fn annotation_value(self) -> &'static str {
        match self {
            Derivation::RpcSecret => "rpc-secret",
            Derivation::RpcSecretBytes => "rpc-secret-bytes",
            Derivation::KeyDerivationSecret => "key-derivation-secret",
            Derivation::RpcSecretBytesSpecName => "rpc-secret-bytes-spec-name",
        }
    }

    /// Whether the secret it keys is the cluster's RPC secret (else the key-derivation Secret).
    pub fn uses_rpc_secret(self) -> bool {
        !matches!(self, Derivation::KeyDerivationSecret)
    }

    /// The name the material of `key` is derived for: its `spec.name` when it sets one under
    /// [`Derivation::RpcSecretBytesSpecName`], else its object name.
    pub fn identity_name(self, key: &GarageKey) -> String {
        match (self, key.spec.name.as_deref()) {
            (Derivation::RpcSecretBytesSpecName, Some(name)) if !name.is_empty() => name.to_owned(),
            _ => key.name_any(),
        }
    }

    /// The derivation an annotation value records; `None` for a value this operator never
    /// writes.
    pub fn from_annotation(value: &str) -> Option<Self> {
        DERIVATIONS
            .into_iter()
            .find(|d| d.annotation_value() == value)
    }
}

/// The material of `key` derived as `derivation` records, from the bytes of that secret: its
/// namespace, [`Derivation::identity_name`] and replacement nonce.
pub fn derive_for(derivation: Derivation, secret: &[u8], key: &GarageKey) -> Material {
    let nonce = key
        .annotations()
        .get(shared_types::keys::annotation::ANNOTATION_KEY_REPLACEMENT_NONCE)
        .map(String::as_str);
    derive_with(
        derivation,
        secret,
        &key.namespace().unwrap_or_default(),
        &derivation.identity_name(key),
        nonce,
    )
}

/// The material of the GarageKey `namespace/name` derived as `derivation` records, from the
/// bytes of that secret.
pub fn derive_with(
    derivation: Derivation,
    secret: &[u8],
    namespace: &str,
    name: &str,
    nonce: Option<&str>,
) -> Material {
    match derivation {
        Derivation::RpcSecret => derive(secret, namespace, name, nonce),
        // Text that is not hex keys nothing the Go operator made; its empty key gives an ID no
        // such key has, so inference never picks it.
        Derivation::RpcSecretBytes | Derivation::RpcSecretBytesSpecName => derive_as_go(
            &decode_hex(secret).unwrap_or_default(),
            namespace,
            name,
            nonce,
        ),
        Derivation::KeyDerivationSecret => {
            derive_from_key_derivation_secret(secret, namespace, name, nonce)
        }
    }
}

/// What the Go operator puts between a key's name and its replacement nonce.
const GO_REPLACEMENT_SEPARATOR: &str = "\0replacement:";

/// The material the Go operator derives for `namespace/name` under `key`: [`derive()`]'s
/// messages, with its own separator before a replacement nonce.
fn derive_as_go(key: &[u8], namespace: &str, name: &str, nonce: Option<&str>) -> Material {
    match nonce.filter(|n| !n.is_empty()) {
        Some(n) => derive(
            key,
            namespace,
            &format!("{name}{GO_REPLACEMENT_SEPARATOR}{n}"),
            None,
        ),
        None => derive(key, namespace, name, None),
    }
}

/// The bytes an even number of hex digits encode; `None` for anything else.
fn decode_hex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks(2)
        .map(|pair| {
            let digits = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(digits, 16).ok()
        })
        .collect()
}

/// Domain separation of [`derive_from_key_derivation_secret`]: its HMAC messages start with
/// this, those of [`derive`] with `ak:` or `sk:`, so even equal secret bytes never give equal
/// material under both.
const KEY_DERIVATION_DOMAIN: &str = "garage-operator/garage-key-material/v1";

/// The material of the GarageKey `namespace/name` under the key-derivation Secret's bytes.
/// The fields are separated by NUL, which no namespace or name contains, so two identities
/// never share a message; the nonce works as in [`derive()`].
pub fn derive_from_key_derivation_secret(
    secret: &[u8],
    namespace: &str,
    name: &str,
    nonce: Option<&str>,
) -> Material {
    let nonce = nonce.unwrap_or_default();
    let message =
        |part: &str| format!("{KEY_DERIVATION_DOMAIN}\0{part}\0{namespace}\0{name}\0{nonce}");
    let ak = hmac_sha256(secret, message("access-key-id").as_bytes());
    let sk = hmac_sha256(secret, message("secret-access-key").as_bytes());
    Material {
        access_key_id: format!("GK{}", hex(&ak[..12])),
        secret_access_key: hex(&sk),
    }
}

/// The material of the GarageKey `namespace/name` under `rpc_secret`. A replacement nonce
/// (the `key-replacement-nonce` annotation) gives a new identity after the old one was deleted
/// from Garage, which refuses to import a deleted key ID again.
pub fn derive(rpc_secret: &[u8], namespace: &str, name: &str, nonce: Option<&str>) -> Material {
    let identity = match nonce.filter(|n| !n.is_empty()) {
        Some(n) => format!("{namespace}/{name}#{n}"),
        None => format!("{namespace}/{name}"),
    };
    let ak = hmac_sha256(rpc_secret, format!("ak:{identity}").as_bytes());
    let sk = hmac_sha256(rpc_secret, format!("sk:{identity}").as_bytes());
    Material {
        access_key_id: format!("GK{}", hex(&ak[..12])),
        secret_access_key: hex(&sk),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test cases 2 and 6 (a key longer than the block).
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    #[test]
    fn material_is_stable_per_identity_and_garage_shaped() {
        let a = derive(b"secret", "apps", "web", None);
        assert_eq!(a, derive(b"secret", "apps", "web", None));
        assert_eq!(a.access_key_id.len(), 26);
        assert!(a.access_key_id.starts_with("GK"));
        assert!(a.access_key_id[2..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a.secret_access_key.len(), 64);
        assert_ne!(a, derive(b"secret", "apps", "api", None));
        assert_ne!(a, derive(b"secret", "other", "web", None));
        assert_ne!(a, derive(b"other", "apps", "web", None));
        assert_ne!(a, derive(b"secret", "apps", "web", Some("1")));
        assert_eq!(a, derive(b"secret", "apps", "web", Some("")));
    }

    #[test]
    fn the_key_derivation_secret_gives_its_own_stable_garage_shaped_material() {
        let d = derive_from_key_derivation_secret;
        let a = d(b"secret", "apps", "web", None);
        assert_eq!(a, d(b"secret", "apps", "web", None));
        assert_eq!(a.access_key_id.len(), 26);
        assert!(a.access_key_id.starts_with("GK"));
        assert!(a.access_key_id[2..].bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a.secret_access_key.len(), 64);
        assert!(a.secret_access_key.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, d(b"secret", "apps", "api", None));
        assert_ne!(a, d(b"secret", "other", "web", None));
        assert_ne!(a, d(b"other", "apps", "web", None));
        assert_ne!(a, d(b"secret", "apps", "web", Some("1")));
        assert_eq!(a, d(b"secret", "apps", "web", Some("")));
        // Separators keep identities apart that plain concatenation would merge.
        assert_ne!(d(b"secret", "ab", "c", None), d(b"secret", "a", "bc", None));
        assert_ne!(
            d(b"secret", "apps", "web", Some("1")),
            d(b"secret", "apps", "web-1", None)
        );
    }

    #[test]
    fn equal_secret_bytes_give_different_material_under_each_derivation() {
        for (secret, ns, name, nonce) in [
            (&b"secret"[..], "apps", "web", None),
            (&[0u8; 64][..], "default", "k", Some("2")),
            (b"", "a", "b", None),
        ] {
            let rpc = derive(secret, ns, name, nonce);
            let new = derive_from_key_derivation_secret(secret, ns, name, nonce);
            assert_ne!(rpc.access_key_id, new.access_key_id);
            assert_ne!(rpc.secret_access_key, new.secret_access_key);
            assert_eq!(
                derive_with(Derivation::RpcSecret, secret, ns, name, nonce),
                rpc
            );
            assert_eq!(
                derive_with(Derivation::KeyDerivationSecret, secret, ns, name, nonce),
                new
            );
        }
    }

    #[test]
    fn rpc_secret_bytes_gives_the_material_the_go_operator_made() {
        // A key the Go operator made for go-takeover/photos-rw under this RPC secret (the
        // e2e's recording of it, reconciler/tests/e2e/go_takeover/objects.json).
        let rpc = b"15686ee5b28eabcbdbf77978542fa2957bf934780577141636ef7fee7147fd27";
        let made = Material {
            access_key_id: "GK32bce43cc6e7eff668135df2".into(),
            secret_access_key: "5cc6c38c8bf697194debeba3bbf6cd0c2276058daa1ea311f9a923905893ec42"
                .into(),
        };
        let with = |d| derive_with(d, rpc, "go-takeover", "photos-rw", None);
        assert_eq!(with(Derivation::RpcSecretBytes), made);
        assert_ne!(
            with(Derivation::RpcSecret).access_key_id,
            made.access_key_id
        );
        assert_ne!(
            with(Derivation::KeyDerivationSecret).access_key_id,
            made.access_key_id
        );
        // Text that is not hex keys with nothing, never with the text itself.
        assert_eq!(
            derive_with(Derivation::RpcSecretBytes, b"xyz", "a", "b", None),
            derive(b"", "a", "b", None)
        );
        // A replacement nonce joins the name as the Go operator joins it.
        let bytes = decode_hex(rpc).unwrap();
        let replaced = derive_with(
            Derivation::RpcSecretBytes,
            rpc,
            "go-takeover",
            "photos-rw",
            Some("2"),
        );
        assert_eq!(
            replaced,
            derive(&bytes, "go-takeover", "photos-rw\0replacement:2", None)
        );
        assert_ne!(
            replaced,
            derive(&bytes, "go-takeover", "photos-rw", Some("2"))
        );
        assert_ne!(replaced, made);
        assert_eq!(decode_hex(b"0aFf"), Some(vec![0x0a, 0xff]));
        assert_eq!(decode_hex(b"0a0"), None);
        assert_eq!(decode_hex(b"zz"), None);
    }

    #[test]
    fn derivations_round_trip_through_their_annotation_values() {
        for d in DERIVATIONS {
            assert_eq!(Derivation::from_annotation(d.annotation_value()), Some(d));
        }
        assert_eq!(Derivation::RpcSecret.annotation_value(), "rpc-secret");
        assert_eq!(
            Derivation::RpcSecretBytes.annotation_value(),
            "rpc-secret-bytes"
        );
        assert_eq!(
            Derivation::KeyDerivationSecret.annotation_value(),
            "key-derivation-secret"
        );
        for other in ["", "RPC-secret", "rpc-secret ", "hmac"] {
            assert_eq!(Derivation::from_annotation(other), None);
        }
    }
}
