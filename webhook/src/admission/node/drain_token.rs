//! SH-20: the terminal storage-drain token that authorises a prepared
//! GarageNode deletion, including its SHA-256 target hash.
//!
//! The webhook crate has no hashing dependency and only the json-patch
//! dependency may be added here, so a small SHA-256 lives below; it is
//! checked against the FIPS 180-2 test vectors.

use super::grammar::canonical_id;
use shared_types::garage_cluster::common::{DrainActorKind, StorageDrainStatus};

/// The object a terminal drain must name as its actor.
pub struct ExpectedActor<'a> {
    /// apiVersion, e.g. `garage.rajsingh.info/v1beta1`.
    pub api_version: &'a str,
    /// Kind of the actor.
    pub kind: DrainActorKind,
    /// Namespace.
    pub namespace: &'a str,
    /// Name.
    pub name: &'a str,
    /// UID of the exact incarnation.
    pub uid: &'a str,
}

/// Node IDs the caller requires in the token's sets.
#[derive(Default)]
pub struct Required<'a> {
    /// Must be in roleRemovalNodeIds.
    pub role_removal: &'a [String],
    /// Must be in removedStorageNodeIds.
    pub removed_storage: &'a [String],
}

fn is_lower_hex_id(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn canonical_list(ids: &[String]) -> Vec<String> {
    let mut out: Vec<String> = ids
        .iter()
        .map(|s| canonical_id(s))
        .filter(|s| !s.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `"sha256:" + hex(SHA-256(P))` over the role, storage and (when non-empty)
/// unavailable sets, NUL-separated.
pub fn target_hash(roles: &[String], removed: &[String], unavailable: &[String]) -> String {
    let mut payload = format!(
        "roles\0{}\0storage\0{}",
        roles.join("\0"),
        removed.join("\0")
    );
    if !unavailable.is_empty() {
        payload.push_str("\0unavailable\0");
        payload.push_str(&unavailable.join("\0"));
    }
    format!("sha256:{}", hex(&sha256(payload.as_bytes())))
}

/// Why `drain` is not a valid terminal token for `expected`, or `Ok`.
pub fn verify(
    drain: Option<&StorageDrainStatus>,
    expected: &ExpectedActor<'_>,
    required: &Required<'_>,
) -> Result<(), String> {
    let drain = drain.ok_or("no terminal storage-drain token is recorded")?;
    if expected.uid.trim().is_empty() {
        return Err("the expected drain actor has no UID".into());
    }
    let actor = drain
        .actor
        .as_ref()
        .ok_or("terminal storage-drain token has no actor")?;
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let matches = text(&actor.api_version) == expected.api_version
        && actor.kind == Some(expected.kind)
        && text(&actor.namespace) == expected.namespace
        && text(&actor.name) == expected.name
        && text(&actor.uid) == expected.uid
        && !expected.api_version.is_empty()
        && !expected.namespace.is_empty()
        && !expected.name.is_empty();
    if !matches {
        return Err("terminal storage-drain actor does not match the expected Kubernetes object incarnation".into());
    }
    if drain
        .transaction_id
        .as_deref()
        .unwrap_or_default()
        .trim()
        .is_empty()
    {
        return Err("terminal storage-drain token has no transactionId".into());
    }
    // Go's zero time (year 1) is what an unset timestamp decodes to there.
    const GO_ZERO_SECONDS: i64 = -62_135_596_800;
    let started = drain
        .started_at
        .as_ref()
        .map(|t| t.0)
        .filter(|t| t.as_second() > GO_ZERO_SECONDS);
    let completed = drain
        .completed_at
        .as_ref()
        .map(|t| t.0)
        .filter(|t| t.as_second() > GO_ZERO_SECONDS);
    match (started, completed) {
        (Some(s), Some(c)) if c >= s => {}
        _ => return Err("terminal storage-drain timestamps are invalid (startedAt and completedAt must be set, completedAt not before startedAt)".into()),
    }
    let roles = drain.role_removal_node_ids.clone().unwrap_or_default();
    let removed = drain.removed_storage_node_ids.clone().unwrap_or_default();
    let unavailable = drain
        .unavailable_source_node_ids
        .clone()
        .unwrap_or_default();
    for (name, ids) in [
        ("roleRemovalNodeIds", &roles),
        ("removedStorageNodeIds", &removed),
        ("unavailableSourceNodeIds", &unavailable),
    ] {
        if canonical_list(ids) != *ids || !ids.iter().all(|i| is_lower_hex_id(i)) {
            return Err(format!(
                "terminal storage-drain {name} must be sorted, de-duplicated, lower-case 64-hex node IDs"
            ));
        }
    }
    if !removed.iter().all(|i| roles.contains(i)) {
        return Err(
            "terminal storage-drain removedStorageNodeIds must be a subset of roleRemovalNodeIds"
                .into(),
        );
    }
    if !unavailable.iter().all(|i| removed.contains(i)) {
        return Err("terminal storage-drain unavailableSourceNodeIds must be a subset of removedStorageNodeIds".into());
    }
    if drain.target_hash.as_deref() != Some(target_hash(&roles, &removed, &unavailable).as_str()) {
        return Err("terminal storage-drain targetHash does not match its node sets".into());
    }
    for id in required.role_removal {
        if !roles.contains(&canonical_id(id)) {
            return Err(format!(
                "terminal storage-drain roleRemovalNodeIds does not include {id}"
            ));
        }
    }
    for id in required.removed_storage {
        if !removed.contains(&canonical_id(id)) {
            return Err(format!(
                "terminal storage-drain removedStorageNodeIds does not include {id}"
            ));
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut message = data.to_vec();
    let bit_len = (data.len() as u64).wrapping_mul(8);
    message.push(0x80);
    while message.len() % 64 != 56 {
        message.push(0);
    }
    message.extend_from_slice(&bit_len.to_be_bytes());
    for block in message.chunks_exact(64) {
        let mut w = [0u32; 64];
        for (i, word) in block.chunks_exact(4).enumerate() {
            w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (slot, v) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *slot = slot.wrapping_add(v);
        }
    }
    let mut out = [0u8; 32];
    for (chunk, word) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&word.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_matches_the_fips_vectors() {
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    #[test]
    fn empty_sets_hash_the_bare_headers() {
        assert_eq!(
            target_hash(&[], &[], &[]),
            format!("sha256:{}", hex(&sha256(b"roles\0\0storage\0")))
        );
    }
}
