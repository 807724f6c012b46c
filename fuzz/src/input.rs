//! Reading the fuzz input: a JSON document (a manifest) and the bytes that drive the
//! structured part, separated by the first NUL byte, which JSON text never contains. Seeds are
//! the sample manifests alone; the fuzzer grows the structured part behind them.

use arbitrary::{Arbitrary, Unstructured};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The JSON part and the structured part of `data`; no NUL means no structured part.
pub fn split(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// The JSON part of `data` and the world `W` its structured part describes; `None` when the
/// bytes describe none.
pub fn manifest_and<'a, W: Arbitrary<'a>>(data: &'a [u8]) -> Option<(&'a [u8], W)> {
    let (json, rest) = split(data);
    let world = W::arbitrary(&mut Unstructured::new(rest)).ok()?;
    Some((json, world))
}

/// The object in `json`, with the metadata the API server always sets filled in where the
/// manifest lacks it (a manifest names no UID; the reconciler refuses an object without one,
/// and would never see one). `None` when the text is not such an object.
pub fn object<K: DeserializeOwned>(json: &[u8], name: &str) -> Option<K> {
    let mut value: Value = serde_json::from_slice(json).ok()?;
    let map = value.as_object_mut()?;
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    if let Some(meta) = meta.as_object_mut() {
        meta.entry("name").or_insert_with(|| name.into());
        meta.entry("namespace").or_insert_with(|| "ns".into());
        meta.entry("uid").or_insert_with(|| "uid-1".into());
        meta.entry("generation").or_insert_with(|| 1.into());
    }
    serde_json::from_value(value).ok()
}

/// Fields of a GarageCluster spec this reconciler version refuses as unsupported. Most sample
/// manifests use one of them; without them they reach the decision instead of the refusal.
pub const UNSUPPORTED_SPEC_FIELDS: &[&str] = &[
    "connectTo",
    "gateway",
    "remoteClusters",
    "discovery",
    "zoneFrom",
    "publicEndpoint",
];

/// `json` with [`UNSUPPORTED_SPEC_FIELDS`] and the storage fields this version refuses
/// removed; other text is returned as it is.
pub fn without_unsupported(json: &[u8]) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<Value>(json) else {
        return json.to_vec();
    };
    if let Some(spec) = value.get_mut("spec").and_then(Value::as_object_mut) {
        for field in UNSUPPORTED_SPEC_FIELDS {
            spec.remove(*field);
        }
        if let Some(data) = spec
            .get_mut("storage")
            .and_then(|s| s.get_mut("data"))
            .and_then(Value::as_object_mut)
        {
            data.remove("paths");
        }
        if let Some(pools) = spec
            .get_mut("storage")
            .and_then(|s| s.get_mut("nodeLocalPools"))
            .and_then(Value::as_array_mut)
        {
            for pool in pools.iter_mut().filter_map(Value::as_object_mut) {
                pool.remove("dataPaths");
                if let Some(network) = pool.get_mut("network").and_then(Value::as_object_mut) {
                    network.remove("rpcPublicAddrTemplate");
                }
            }
        }
    }
    serde_json::to_vec(&value).unwrap_or_else(|_| json.to_vec())
}
