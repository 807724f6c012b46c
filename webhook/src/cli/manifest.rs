//! Reading manifests: YAML (one or more documents) or JSON, `kind: List` expanded.

use std::path::Path;

use serde_json::Value;

use super::CliError;

/// The documents of `text` (from `path`, for messages). Empty documents are skipped; a
/// `kind: List` (as `kubectl get -o yaml` prints) contributes its items.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Value>, CliError> {
    let documents: Vec<Value> = match serde_json::from_str::<Value>(text) {
        Ok(value) => vec![value],
        Err(_) => serde_saphyr::from_multiple::<Value>(text).map_err(|e| CliError::Parse {
            path: path.to_owned(),
            reason: format!("neither JSON nor YAML: {e}"),
        })?,
    };
    let mut out = Vec::new();
    for document in documents {
        match document {
            Value::Null => {}
            Value::Object(ref fields)
                if fields.get("kind").and_then(Value::as_str) == Some("List") =>
            {
                if let Some(Value::Array(items)) = fields.get("items") {
                    out.extend(items.iter().cloned());
                }
            }
            Value::Object(_) => out.push(document),
            other => {
                return Err(CliError::Parse {
                    path: path.to_owned(),
                    reason: format!("a document is not an object: {other}"),
                });
            }
        }
    }
    Ok(out)
}

/// The documents of the file at `path`.
pub fn load(path: &Path) -> Result<Vec<Value>, CliError> {
    let text = std::fs::read_to_string(path).map_err(|source| CliError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&text, path)
}

/// The single document of the file at `path`.
pub fn load_one(path: &Path) -> Result<Value, CliError> {
    let mut documents = load(path)?;
    match documents.len() {
        1 => Ok(documents.remove(0)),
        n => Err(CliError::Parse {
            path: path.to_owned(),
            reason: format!("expected exactly one object, found {n}"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_streams_json_and_lists() {
        let p = Path::new("x");
        let docs = parse("a: 1\n---\n---\nb: 2\n", p).unwrap();
        assert_eq!(docs.len(), 2);
        let docs = parse(r#"{"kind":"List","items":[{"a":1},{"b":2}]}"#, p).unwrap();
        assert_eq!(docs.len(), 2);
        assert!(parse("- 1\n- 2\n", p).is_err());
        assert!(parse("a: [unclosed\n", p).is_err());
    }
}
