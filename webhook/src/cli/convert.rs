//! `garage-webhook convert --to VERSION FILE`: a GarageCluster manifest in the other version,
//! converted exactly as the API server's conversion webhook call would.

use std::path::Path;

use super::{CliError, manifest};
use crate::convert::{V1BETA1, V1BETA2, convert_object};

/// Every document of `path` converted to `to`, as a YAML stream.
pub fn run(path: &Path, to: &str) -> Result<String, CliError> {
    if to != V1BETA1 && to != V1BETA2 {
        return Err(CliError::Input(format!(
            "--to must be {V1BETA1} or {V1BETA2}, not {to:?}"
        )));
    }
    let documents = manifest::load(path)?;
    if documents.is_empty() {
        return Err(CliError::Parse {
            path: path.to_owned(),
            reason: "no object to convert".to_owned(),
        });
    }
    let mut out = String::new();
    for (index, document) in documents.into_iter().enumerate() {
        let converted = convert_object(document, to).map_err(|e| CliError::Parse {
            path: path.to_owned(),
            reason: format!("document {}: {e}", index + 1),
        })?;
        let yaml = serde_saphyr::to_string(&converted).map_err(|e| CliError::Parse {
            path: path.to_owned(),
            reason: format!("document {} does not encode as YAML: {e}", index + 1),
        })?;
        if index > 0 {
            out.push_str("---\n");
        }
        out.push_str(&yaml);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}
