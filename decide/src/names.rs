//! Names of the objects generated for a GarageCluster and the digests
//! that content-address them.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in digest.iter() {
        // Writing into a String cannot fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let inner_pad: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
    let outer_pad: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
    let inner = Sha256::new()
        .chain_update(&inner_pad)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(&outer_pad)
        .chain_update(inner)
        .finalize()
        .into()
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Immutable copy of a user-named RPC secret that the pods mount: `C-rpc-secret-snapshot`.
pub fn rpc_secret_snapshot(cluster: &str) -> String {
    format!("{cluster}-rpc-secret-snapshot")
}

/// Immutable copy of a user-named admin token that the pods mount:
/// `C-credentials-<16 hex of its revision>`.
pub fn credentials_snapshot(cluster: &str, revision: &str) -> String {
    format!(
        "{cluster}-credentials-{}",
        &revision[..revision.len().min(16)]
    )
}

/// Headless RPC Service `C-headless`; also the StatefulSets' `serviceName`.
pub fn headless_service(cluster: &str) -> String {
    format!("{cluster}-headless")
}

/// Primary API Service (S3, web): `C`.
pub fn api_service(cluster: &str) -> String {
    cluster.to_owned()
}

/// Admin API Service, always ClusterIP: `C-admin`. The admission webhook keeps cluster names
/// to 54 characters (for `C-headless`), so this is a valid Service name as it is. It cannot be
/// another cluster's headless Service nor a GarageNode's RPC Service (those end in
/// `-headless`, `-rpc` or 16 hex); like `C-headless`, it is the API Service of a cluster named
/// `C-admin` in the same namespace, which the controller then reports as a foreign object
/// rather than overwrite.
pub fn admin_service(cluster: &str) -> String {
    format!("{cluster}-admin")
}

/// Storage PodDisruptionBudget: `C`.
pub fn storage_pdb(cluster: &str) -> String {
    cluster.to_owned()
}

/// NetworkPolicy over the cluster's Garage pods (chart value `garageNetworkPolicy.enabled`):
/// `C-garage`. The only NetworkPolicy the operator writes for a cluster, so no other name of
/// this kind can collide with it; a policy of that name the cluster does not control is left
/// alone and reported as a foreign object.
pub fn garage_network_policy(cluster: &str) -> String {
    format!("{cluster}-garage")
}

/// Operator-generated RPC secret: `C-rpc-secret`.
pub fn rpc_secret(cluster: &str) -> String {
    format!("{cluster}-rpc-secret")
}

/// Operator-generated static admin token, used when `spec.admin.adminTokenSecretRef` is unset:
/// `C-admin-token`.
pub fn admin_token_secret(cluster: &str) -> String {
    format!("{cluster}-admin-token")
}

/// Operator-generated key-derivation secret: `C-key-derivation`. GarageKeys' S3 material is
/// derived from it; unlike the RPC secret, no Garage pod mounts it. No other generated Secret
/// of any cluster ends in `-key-derivation`: the others end in `-rpc-secret`, `-snapshot`,
/// `-admin-token` or hex digits.
pub fn key_derivation_secret(cluster: &str) -> String {
    format!("{cluster}-key-derivation")
}

/// Base name of the shared config revisions: `C-config`.
pub fn config_base(cluster: &str) -> String {
    format!("{cluster}-config")
}

/// Base name of the config revisions of member `node` of `cluster`, when it has its own
/// (`<cluster>-config-<node>`): under the shared base's prefix, so the same pruning covers it.
pub fn node_config_base(cluster: &str, node: &str) -> String {
    format!("{}-{node}", config_base(cluster))
}

/// Content-addressed revision name `<base>-<first 12 hex of revision>`; a base that would
/// push the name past 253 characters is cut and suffixed with 8 hex of its own digest, so
/// two long bases never collide.
pub fn config_revision(base: &str, revision: &str) -> String {
    let short = &revision[..revision.len().min(12)];
    if base.len() + 1 + short.len() <= 253 {
        return format!("{base}-{short}");
    }
    let digest = sha256_hex(base.as_bytes());
    let keep = 253 - 1 - short.len() - 9;
    format!("{}-{}-{short}", &base[..keep], &digest[..8])
}

/// Auto storage slot `N`: GarageNode and StatefulSet `C-storage-N` (bounded to 61 characters
/// so that the pod name `<gn>-0` still fits a label value).
pub fn auto_storage_node(cluster: &str, ordinal: u32) -> String {
    bounded(&format!("{cluster}-storage-{ordinal}"), 61)
}

/// Auto gateway slot `N` of a cluster with storage and gateway tiers: GarageNode and
/// StatefulSet `C-gateway-N`, bounded as [`auto_storage_node`].
pub fn auto_gateway_node(cluster: &str, ordinal: u32) -> String {
    bounded(&format!("{cluster}-gateway-{ordinal}"), 61)
}

/// The gateway tier's API Service and its PodDisruptionBudget: `C-gateway`. The webhook keeps
/// cluster names to 54 characters, so it is a valid name as it is.
pub fn gateway_service(cluster: &str) -> String {
    format!("{cluster}-gateway")
}

/// The single pod of a GarageNode's StatefulSet.
pub fn node_pod(node: &str) -> String {
    format!("{node}-0")
}

/// Per-GarageNode RPC Service: bounded(`<gn>-rpc`).
pub fn node_rpc_service(node: &str) -> String {
    bounded(&format!("{node}-rpc"), 63)
}

/// `x` itself when it is a DNS-1123 label of at most `limit` characters; otherwise a
/// sanitised prefix and 16 hex of sha256(x), cut to `limit`.
pub fn bounded(x: &str, limit: usize) -> String {
    if x.len() <= limit && is_dns_label(x) {
        return x.to_owned();
    }
    let digest = sha256_hex(x.as_bytes());
    let suffix = &digest[..16];
    let cleaned: String = x
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let room = limit.saturating_sub(suffix.len() + 1);
    let prefix = cleaned[..cleaned.len().min(room)].trim_matches('-');
    if prefix.is_empty() {
        suffix.to_owned()
    } else {
        format!("{prefix}-{suffix}")
    }
}

/// True for a DNS-1123 label: lowercase alphanumerics and `-`, not starting or ending with
/// `-`, 1 to 63 characters.
pub fn is_dns_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_conventions() {
        assert_eq!(headless_service("g"), "g-headless");
        assert_eq!(api_service("g"), "g");
        assert_eq!(admin_service("g"), "g-admin");
        assert_eq!(auto_storage_node("g", 2), "g-storage-2");
        assert_eq!(node_pod("g-storage-2"), "g-storage-2-0");
        assert_eq!(node_rpc_service("g-storage-2"), "g-storage-2-rpc");
        assert_eq!(rpc_secret("g"), "g-rpc-secret");
    }

    #[test]
    fn the_admin_service_is_no_other_generated_service() {
        let names = [
            "g",
            "g-admin",
            "g-rpc",
            "a",
            &"n".repeat(54),
            &"n".repeat(70),
        ];
        for c in names {
            for other in names {
                let admin = admin_service(c);
                assert_ne!(admin, headless_service(other), "{c} / {other}");
                assert_ne!(admin, node_rpc_service(other), "{c} / {other}");
                assert_ne!(admin, node_rpc_service(&auto_storage_node(other, 0)));
            }
        }
        assert!(is_dns_label(&admin_service(&"n".repeat(54))));
    }

    #[test]
    fn the_key_derivation_secret_is_no_other_generated_secret() {
        let rev = sha256_hex(b"revision");
        let names = [
            "g",
            "g-key",
            "g-key-derivation",
            "g-rpc",
            "g-credentials",
            "g-config",
            "a",
            &"n".repeat(54),
            &"n".repeat(300),
        ];
        for c in names {
            let ours = key_derivation_secret(c);
            for other in names {
                let generated = [
                    rpc_secret(other),
                    rpc_secret_snapshot(other),
                    admin_token_secret(other),
                    credentials_snapshot(other, &rev),
                    config_revision(&config_base(other), &rev),
                    shared_types::garage_key::import_snapshot_secret_name(other),
                ];
                for g in generated {
                    assert_ne!(ours, g, "{c} / {other}");
                }
                assert_eq!(ours == key_derivation_secret(other), c == other);
            }
        }
        assert_eq!(key_derivation_secret("g"), "g-key-derivation");
    }

    #[test]
    fn long_names_are_bounded_and_distinct() {
        let a = "a".repeat(70);
        let b = format!("{}b", "a".repeat(69));
        let (ba, bb) = (bounded(&a, 61), bounded(&b, 61));
        assert!(ba.len() <= 61 && bb.len() <= 61);
        assert!(is_dns_label(&ba) && is_dns_label(&bb));
        assert_ne!(ba, bb);
        assert_eq!(bounded("Upper.Case", 63).len(), "upper-case".len() + 17);
    }

    #[test]
    fn revision_names_are_short_and_stable() {
        let rev = sha256_hex(b"body");
        assert_eq!(
            config_revision("g-config", &rev),
            format!("g-config-{}", &rev[..12])
        );
        let long = "x".repeat(300);
        let name = config_revision(&long, &rev);
        assert_eq!(name.len(), 253);
        assert!(name.ends_with(&rev[..12]));
    }

    #[test]
    fn sha256_matches_a_known_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
