//! The JSON patch from the submitted object to the defaulted one.
//!
//! Only `add` and `replace` operations are produced: a field the
//! typed decode dropped (an unknown or pruned field) must never be removed
//! by a defaulter, and controller-runtime discards removals anyway.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, Patch, PatchOperation, ReplaceOperation};
use serde_json::Value;

/// Add/replace operations that turn `original` into `defaulted` wherever
/// `defaulted` has a value; values only `original` holds are left alone.
pub fn patch(original: &Value, defaulted: &Value) -> Patch {
    let mut ops = Vec::new();
    walk(&mut PointerBuf::root(), original, defaulted, &mut ops);
    Patch(ops)
}

fn walk(path: &mut PointerBuf, original: &Value, defaulted: &Value, ops: &mut Vec<PatchOperation>) {
    match (original, defaulted) {
        (Value::Object(before), Value::Object(after)) => {
            for (key, value) in after {
                path.push_back(key.as_str());
                match before.get(key) {
                    Some(old) => walk(path, old, value, ops),
                    None => ops.push(PatchOperation::Add(AddOperation {
                        path: path.clone(),
                        value: value.clone(),
                    })),
                }
                path.pop_back();
            }
        }
        (Value::Array(before), Value::Array(after)) if before.len() == after.len() => {
            for (i, (old, new)) in before.iter().zip(after).enumerate() {
                path.push_back(i);
                walk(path, old, new, ops);
                path.pop_back();
            }
        }
        (old, new) if old != new => ops.push(PatchOperation::Replace(ReplaceOperation {
            path: path.clone(),
            value: new.clone(),
        })),
        _ => {}
    }
}
