//! Why a GarageCluster could not be converted.
//!
//! Every message names the annotation, field or value at fault, because the API server shows it
//! verbatim to the client whose request failed.

use thiserror::Error;

/// A GarageCluster (or a ConversionReview object) that cannot be converted.
#[derive(Debug, Error)]
pub enum ConvertError {
    /// The node-local pool payload of a v1beta1 view is not a JSON list of pools.
    #[error(
        "restore node-local pools from annotation {key}: {}; the annotation is a reserved \
         conversion payload and must be sent back exactly as it was read",
        position(.source)
    )]
    PoolPayload {
        /// The annotation key.
        key: &'static str,
        /// Why the JSON did not decode.
        source: serde_json::Error,
    },
    /// A v1beta1 view carries node-local pools but no longer describes a storage tier.
    #[error(
        "annotation {key} carries v1beta2 spec.storage.nodeLocalPools, but the v1beta1 view no \
         longer contains a storage tier (it was changed to a gateway or a management handle); \
         remove the pools through the v1beta2 API first"
    )]
    PoolsWithoutStorage {
        /// The annotation key.
        key: &'static str,
    },
    /// The gateway payload of a v1beta1 view is not a JSON GatewaySpec.
    #[error(
        "restore the gateway tier from annotation {key}: {}; the annotation is a reserved \
         conversion payload and must be sent back exactly as it was read",
        position(.source)
    )]
    GatewayPayload {
        /// The annotation key.
        key: &'static str,
        /// Why the JSON did not decode.
        source: serde_json::Error,
    },
    /// A v1beta1 view carries a gateway tier but is neither an edge gateway nor a storage tier.
    #[error(
        "annotation {key} carries a v1beta2 gateway tier, but the v1beta1 view contains neither \
         an edge gateway (spec.gateway: true) nor a unified storage tier; change the gateway \
         through the v1beta2 API"
    )]
    GatewayWithoutTier {
        /// The annotation key.
        key: &'static str,
    },
    /// v1beta1 `spec.storage.layoutPolicy` holds a value v1beta2 cannot represent.
    #[error(
        "spec.storage.layoutPolicy {value:?} has no v1beta2 equivalent: use \"Auto\" or \"Manual\""
    )]
    UnknownLayoutPolicy {
        /// The value found.
        value: String,
    },
    /// The annotations of the v1beta1 view would exceed the Kubernetes total annotation size.
    #[error(
        "the v1beta1 view needs {size} bytes of annotations (keys and values, including the \
         v1beta2 conversion payloads), more than the Kubernetes limit of {limit} bytes; shrink the \
         gateway tier, the node-local pools or the other annotations"
    )]
    AnnotationBudget {
        /// Projected size in bytes.
        size: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// A payload could not be written as JSON (never expected for these types).
    #[error("encode the {what} conversion payload: {source}")]
    EncodePayload {
        /// Which payload.
        what: &'static str,
        /// The encoder's error.
        source: serde_json::Error,
    },
    /// A ConversionReview object is not a JSON object.
    #[error("is not a JSON object")]
    NotAnObject,
    /// A ConversionReview object names no usable apiVersion.
    #[error("has no apiVersion string")]
    MissingApiVersion,
    /// A ConversionReview object is of another kind.
    #[error("is a {kind:?}, but this webhook converts only GarageCluster")]
    WrongKind {
        /// The kind found.
        kind: String,
    },
    /// An apiVersion outside `garage.rajsingh.info/{v1alpha1,v1beta1,v1beta2}`.
    #[error(
        "apiVersion {api_version:?} is not served for GarageCluster (expected \
         garage.rajsingh.info/v1alpha1, v1beta1 or v1beta2)"
    )]
    UnknownApiVersion {
        /// The apiVersion found.
        api_version: String,
    },
    /// A ConversionReview object has no `metadata` object.
    #[error("has no metadata object")]
    MissingMetadata,
    /// The object does not decode as a GarageCluster of its apiVersion.
    #[error("does not decode as a {api_version} GarageCluster: {}", position(.source))]
    Decode {
        /// The apiVersion the object claims.
        api_version: String,
        /// The decoder's error.
        source: serde_json::Error,
    },
    /// The converted object could not be written as JSON (never expected).
    #[error("encode the converted object: {source}")]
    Encode {
        /// The encoder's error.
        source: serde_json::Error,
    },
}

/// Where and what kind of error a decoder met, without its own text: that text can quote the
/// offending value, and an env value may be a secret that must not reach a response or a log.
fn position(e: &serde_json::Error) -> String {
    format!(
        "{:?} error at line {}, column {}",
        e.classify(),
        e.line(),
        e.column()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decode_error_never_quotes_the_value() {
        let e = serde_json::from_str::<Vec<u32>>(r#"["hunter2-secret"]"#).unwrap_err();
        assert!(
            e.to_string().contains("hunter2"),
            "serde_json quotes it: {e}"
        );
        for error in [
            ConvertError::PoolPayload {
                key: "k",
                source: serde_json::from_str::<Vec<u32>>(r#"["hunter2-secret"]"#).unwrap_err(),
            },
            ConvertError::GatewayPayload {
                key: "k",
                source: serde_json::from_str::<Vec<u32>>(r#"["hunter2-secret"]"#).unwrap_err(),
            },
            ConvertError::Decode {
                api_version: "v".into(),
                source: e,
            },
        ] {
            let text = error.to_string();
            assert!(!text.contains("hunter2"), "{text}");
            assert!(text.contains("line 1, column"), "{text}");
        }
    }
}
