//! Key material derived from the cluster's RPC secret: the same GarageKey in the same
//! namespace always gets the same access key ID and secret. Creating the key is then an
//! `ImportKey` that a retried pass (or another operator sharing the RPC secret) repeats
//! harmlessly, with nothing to remember between the call and the status write.

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
}
