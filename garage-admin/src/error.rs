//! The error model of the Admin API client.
//!
//! Data safety drives it: only a 404 that Garage itself produced with a `NoSuch*` code means
//! "absent". Everything else (a 503 during a quorum loss, a timeout, a body that does not
//! parse, a 404 from something that is not Garage) is an unknown, and an unknown must never
//! lead to creating or deleting anything.
//!
//! Errors are logged and shown in conditions, and some answers carry secrets (a key's secret,
//! a new admin token). So no error holds raw body text: an excerpt of a body has the values of
//! secret-looking members redacted first ([`redact`]), and a parse error keeps only its kind
//! and position, never its message, which quotes the value it choked on.

mod redact;

use std::collections::BTreeMap;
use std::time::Duration;

use garage_api_types::short_id;
use serde_json::error::Category;

/// Body text kept in an error, at most: enough to diagnose, small enough for a condition.
const MAX_EXCERPT: usize = 500;

/// A failed Admin API call. Every variant names the endpoint (for example `GetBucketInfo`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GarageError {
    /// Garage answered 404 with a `NoSuch*` code: the thing is proven absent.
    #[error("{endpoint}: not found ({code}): {message}")]
    NotFound {
        /// The endpoint called.
        endpoint: &'static str,
        /// Garage's error code, such as `NoSuchBucket`.
        code: String,
        /// Garage's message.
        message: String,
    },
    /// 409 `BucketNotEmpty`: the bucket still holds objects or unfinished uploads.
    #[error("{endpoint}: the bucket is not empty: {message}")]
    BucketNotEmpty {
        /// The endpoint called.
        endpoint: &'static str,
        /// Garage's message.
        message: String,
    },
    /// 409 for something that already exists (`BucketAlreadyExists`, `KeyAlreadyExists`, ...).
    #[error("{endpoint}: already exists ({code}): {message}")]
    AlreadyExists {
        /// The endpoint called.
        endpoint: &'static str,
        /// Garage's error code.
        code: String,
        /// Garage's message.
        message: String,
    },
    /// 503: Garage lacks a quorum, timed out internally or a remote node failed. Retry later;
    /// this says nothing about whether the object exists.
    #[error("{endpoint}: Garage is unavailable, retry later ({code}): {message}")]
    Unavailable {
        /// The endpoint called.
        endpoint: &'static str,
        /// Garage's error code (usually `ServiceUnavailable`).
        code: String,
        /// Garage's message.
        message: String,
    },
    /// `ApplyClusterLayout` was given a version other than current + 1 (Garage reports it as a
    /// generic 500). Re-read the layout and decide again; never guess the version.
    #[error(
        "{endpoint}: layout version {requested} is not current + 1{}: {message}",
        current.map(|c| format!(" (current is {c})")).unwrap_or_default()
    )]
    LayoutVersionMismatch {
        /// The endpoint called.
        endpoint: &'static str,
        /// The version the caller asked to apply.
        requested: u64,
        /// The current version, when it could be read back.
        current: Option<u64>,
        /// Garage's message.
        message: String,
    },
    /// 400: Garage refused the request as invalid (also "nothing to skip" and layout
    /// computation errors such as an unsatisfiable replication factor).
    #[error("{endpoint}: bad request ({code}): {message}")]
    BadRequest {
        /// The endpoint called.
        endpoint: &'static str,
        /// Garage's error code.
        code: String,
        /// Garage's message.
        message: String,
    },
    /// 401 or 403: the token is wrong, expired or lacks this endpoint in its scope.
    #[error("{endpoint}: access denied (HTTP {status}, {code}): {message}")]
    Forbidden {
        /// The endpoint called.
        endpoint: &'static str,
        /// The HTTP status.
        status: u16,
        /// Garage's error code.
        code: String,
        /// Garage's message.
        message: String,
    },
    /// Any other non-success status, including a 404 that did not come from Garage's error
    /// model (a proxy, a wrong path): not proof of absence.
    #[error("{endpoint}: HTTP {status} ({code}): {message}")]
    Http {
        /// The endpoint called.
        endpoint: &'static str,
        /// The HTTP status.
        status: u16,
        /// Garage's error code, or empty when the body was not Garage's error JSON.
        code: String,
        /// Garage's message, or an excerpt of the body with secret-looking values redacted.
        message: String,
    },
    /// A 2xx answer whose body does not match the expected shape.
    ///
    /// serde_json's error is not kept, not even as the error's source: its text quotes the
    /// value it stopped at (`invalid type: string "…"`), which can be a secret. Its kind and
    /// position, with the excerpt, locate the problem.
    #[error(
        "{endpoint}: the response body does not parse ({}); body starts with: {excerpt}",
        describe_parse_error(*category, *line, *column)
    )]
    Decode {
        /// The endpoint called.
        endpoint: &'static str,
        /// What went wrong: not JSON (`Syntax`), cut short (`Eof`), or JSON of another shape
        /// (`Data`).
        category: Category,
        /// The line of the body where parsing stopped, from 1; 0 when the body was parsed in
        /// two steps and the second one has no position.
        line: usize,
        /// The column where parsing stopped, from 1; 0 when unknown, as `line`.
        column: usize,
        /// The beginning of the body, with secret-looking values redacted.
        excerpt: String,
    },
    /// A node-local call (`?node=`) that some nodes could not complete. The successes are
    /// not dropped: callers that can use partial results get them from
    /// [`crate::NodeResults`] before asking for completeness.
    #[error("{endpoint}: {} node(s) failed ({}), {succeeded} succeeded", failures.len(), summarize(failures))]
    PartialFailure {
        /// The endpoint called.
        endpoint: &'static str,
        /// Node id to Garage's error message, for every node that failed.
        failures: BTreeMap<String, String>,
        /// How many nodes answered successfully.
        succeeded: usize,
    },
    /// A 2xx answer that parses but contradicts the API contract (for example a node-local
    /// answer about a node that was not asked for).
    #[error("{endpoint}: invalid response: {reason}")]
    InvalidResponse {
        /// The endpoint called.
        endpoint: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The call did not complete within the client's timeout.
    #[error("{endpoint}: no answer within {after:?}")]
    Timeout {
        /// The endpoint called.
        endpoint: &'static str,
        /// The timeout that expired.
        after: Duration,
    },
    /// The request could not be sent or the answer not read (connection refused, reset, ...).
    #[error("{endpoint}: transport error: {source}")]
    Transport {
        /// The endpoint called.
        endpoint: &'static str,
        /// The underlying error; it holds the URL but never the token.
        source: reqwest::Error,
    },
    /// The answer was larger than the client accepts.
    #[error("{endpoint}: response larger than {limit} bytes")]
    TooLarge {
        /// The endpoint called.
        endpoint: &'static str,
        /// The limit, in bytes.
        limit: usize,
    },
    /// The client was given an argument it cannot send (bad base URL, malformed node id, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// A malformed node id is an argument the client cannot send.
impl From<garage_api_types::InvalidNodeId> for GarageError {
    fn from(e: garage_api_types::InvalidNodeId) -> Self {
        Self::InvalidArgument(e.to_string())
    }
}

impl GarageError {
    /// True only when Garage proved the object absent (404 with a `NoSuch*` code).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// True when the same call may succeed later without any change: 503, a timeout, or a
    /// connection that could not be made or was cut. Callers report these as "waiting", not
    /// "failed".
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Unavailable { .. } | Self::Timeout { .. } => true,
            Self::Transport { source, .. } => {
                source.is_connect() || source.is_timeout() || source.is_request()
            }
            // Per-node failures of node-local calls are almost always nodes being down.
            Self::PartialFailure { .. } => true,
            _ => false,
        }
    }

    /// True when the call got no answer in time: the client's own timeout, or a transport
    /// timeout under it. A bucket whose reads time out again and again is reported as stuck.
    pub fn is_timeout(&self) -> bool {
        match self {
            Self::Timeout { .. } => true,
            Self::Transport { source, .. } => source.is_timeout(),
            _ => false,
        }
    }

    /// True when Garage answered 500 because it could not decode an entry of one of its
    /// metadata tables: what a table entry written by another Garage version, or damaged,
    /// gives. Garage words it "Unable to decode entry of <table>" in some versions and passes
    /// the MessagePack decoder's own error in others.
    pub fn is_metadata_decode(&self) -> bool {
        match self {
            Self::Http {
                status: 500,
                message,
                ..
            } => METADATA_DECODE_MARKERS.iter().any(|m| message.contains(m)),
            _ => false,
        }
    }

    /// The endpoint the failed call was made to, when there was one.
    pub fn endpoint(&self) -> Option<&'static str> {
        match self {
            Self::NotFound { endpoint, .. }
            | Self::BucketNotEmpty { endpoint, .. }
            | Self::AlreadyExists { endpoint, .. }
            | Self::Unavailable { endpoint, .. }
            | Self::LayoutVersionMismatch { endpoint, .. }
            | Self::BadRequest { endpoint, .. }
            | Self::Forbidden { endpoint, .. }
            | Self::Http { endpoint, .. }
            | Self::Decode { endpoint, .. }
            | Self::PartialFailure { endpoint, .. }
            | Self::InvalidResponse { endpoint, .. }
            | Self::Timeout { endpoint, .. }
            | Self::Transport { endpoint, .. }
            | Self::TooLarge { endpoint, .. } => Some(endpoint),
            Self::InvalidArgument(_) => None,
        }
    }

    /// Maps a non-success answer to its variant. `body` is the raw response body. Public so
    /// that a recorded error answer can be classified exactly as a live one is.
    pub fn from_status(endpoint: &'static str, status: u16, body: &[u8]) -> Self {
        let parsed = serde_json::from_slice::<ErrorBody>(body).ok();
        let garage_json = parsed.is_some();
        let (code, message) = match parsed {
            Some(b) => (b.code, excerpt(b.message.as_bytes())),
            None => (String::new(), excerpt(body)),
        };
        match status {
            // A 404 proves absence only when Garage's own error model says so.
            404 if garage_json && code.starts_with("NoSuch") => Self::NotFound {
                endpoint,
                code,
                message,
            },
            409 if code == "BucketNotEmpty" => Self::BucketNotEmpty { endpoint, message },
            409 if code.ends_with("AlreadyExists") || code == "BucketAlreadyOwnedByYou" => {
                Self::AlreadyExists {
                    endpoint,
                    code,
                    message,
                }
            }
            503 => Self::Unavailable {
                endpoint,
                code,
                message,
            },
            400 => Self::BadRequest {
                endpoint,
                code,
                message,
            },
            401 | 403 => Self::Forbidden {
                endpoint,
                status,
                code,
                message,
            },
            _ => Self::Http {
                endpoint,
                status,
                code,
                message,
            },
        }
    }

    /// A [`GarageError::Decode`] for `body`, which failed to parse with `source`. Only the
    /// kind and position of `source` are kept (see the variant).
    pub(crate) fn decode(endpoint: &'static str, source: serde_json::Error, body: &[u8]) -> Self {
        Self::Decode {
            endpoint,
            category: source.classify(),
            line: source.line(),
            column: source.column(),
            excerpt: excerpt(body),
        }
    }

    pub(crate) fn invalid(endpoint: &'static str, reason: impl Into<String>) -> Self {
        Self::InvalidResponse {
            endpoint,
            reason: reason.into(),
        }
    }
}

/// Garage's error body: `{code, message, region, path}`.
#[derive(Debug, serde::Deserialize)]
struct ErrorBody {
    code: String,
    #[serde(default)]
    message: String,
}

/// The first [`MAX_EXCERPT`] characters of `body`, with secret-looking values redacted. Every
/// piece of body text an error keeps goes through here.
/// The words of a Garage 500 answer that say a metadata table entry could not be decoded.
const METADATA_DECODE_MARKERS: [&str; 2] =
    ["Unable to decode entry of", "Messagepack decode error"];

fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    // Redacted before the cut: a cut value is still redacted whole, and the characters kept
    // are characters that may be shown.
    let text = redact::redact_secrets(&text);
    let text = text.trim();
    match text.char_indices().nth(MAX_EXCERPT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The text of a [`GarageError::Decode`] between parentheses: the kind of the parse error and,
/// when known, where it happened.
fn describe_parse_error(category: Category, line: usize, column: usize) -> String {
    let what = match category {
        Category::Syntax => "not JSON",
        Category::Eof => "the body ends early",
        Category::Data => "JSON of another shape",
        Category::Io => "a read error",
    };
    if line == 0 {
        what.to_string()
    } else {
        format!("{what} at line {line}, column {column}")
    }
}

fn summarize(failures: &BTreeMap<String, String>) -> String {
    failures
        .iter()
        .map(|(node, message)| format!("{}: {message}", short_id(node)))
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(code: &str, message: &str) -> Vec<u8> {
        serde_json::json!({"code": code, "message": message, "region": "garage", "path": "/v2/X"})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn only_garage_404_means_absent() {
        let e = GarageError::from_status("GetBucketInfo", 404, &body("NoSuchBucket", "gone"));
        assert!(e.is_not_found());
        // A 404 from a proxy or a wrong path proves nothing.
        let e = GarageError::from_status("GetBucketInfo", 404, b"<html>404</html>");
        assert!(!e.is_not_found());
        assert!(matches!(e, GarageError::Http { status: 404, .. }));
        let e = GarageError::from_status("GetBucketInfo", 503, &body("ServiceUnavailable", "q"));
        assert!(!e.is_not_found());
        assert!(e.is_retryable());
        let e = GarageError::from_status("GetBucketInfo", 500, &body("InternalError", "x"));
        assert!(!e.is_not_found() && !e.is_retryable());
    }

    #[test]
    fn timeouts_and_metadata_decode_failures_are_told_apart() {
        let timeout = GarageError::Timeout {
            endpoint: "GetBucketInfo",
            after: std::time::Duration::from_secs(10),
        };
        assert!(timeout.is_timeout() && !timeout.is_metadata_decode());
        for message in [
            "Internal error: Remote error: Unable to decode entry of bucket_v2",
            "Internal error: Messagepack decode error: invalid type",
        ] {
            let e = GarageError::from_status("GetBucketInfo", 500, &body("InternalError", message));
            assert!(e.is_metadata_decode() && !e.is_timeout(), "{message}");
        }
        // Another 500, or the same words under another status, is neither.
        let other = GarageError::from_status("GetBucketInfo", 500, &body("InternalError", "x"));
        assert!(!other.is_metadata_decode() && !other.is_timeout());
        let words = "Unable to decode entry of key";
        let e = GarageError::from_status("GetBucketInfo", 400, &body("InvalidRequest", words));
        assert!(!e.is_metadata_decode());
    }

    #[test]
    fn conflicts_are_typed() {
        let e = GarageError::from_status("DeleteBucket", 409, &body("BucketNotEmpty", "m"));
        assert!(matches!(e, GarageError::BucketNotEmpty { .. }));
        for code in [
            "BucketAlreadyExists",
            "KeyAlreadyExists",
            "BucketAlreadyOwnedByYou",
        ] {
            let e = GarageError::from_status("ImportKey", 409, &body(code, "m"));
            assert!(matches!(e, GarageError::AlreadyExists { .. }), "{code}");
        }
    }

    #[test]
    fn long_bodies_are_cut() {
        let long = "x".repeat(5000);
        let e = GarageError::from_status("GetClusterStatus", 502, long.as_bytes());
        assert!(e.to_string().len() < 700);
    }

    #[test]
    fn excerpts_are_redacted_before_the_cut() {
        let secret = "0123456789abcdef".repeat(4);
        // Unredacted, the secret would straddle the cut at 500 characters.
        let body = format!("{}\"secretToken\":\"{secret}\"}}", "x".repeat(470));
        let kept = excerpt(body.as_bytes());
        assert!(kept.ends_with(r#""secretToken":"<redacted>"}"#), "{kept}");
        // Cut inside the secret: what arrived of it is redacted too.
        let kept = excerpt(&body.as_bytes()[..body.len() - 20]);
        assert!(kept.ends_with(r#""secretToken":"<redacted>""#), "{kept}");
    }

    #[test]
    fn parse_errors_keep_their_kind_and_position() {
        let parse = |body: &str| serde_json::from_str::<Vec<u32>>(body).unwrap_err();
        let cases = [
            ("<html>", Category::Syntax, "not JSON at line 1, column 1"),
            (
                "[1,",
                Category::Eof,
                "the body ends early at line 1, column 3",
            ),
            (
                "[1,\n\"two\"]",
                Category::Data,
                "JSON of another shape at line 2, column 5",
            ),
        ];
        for (body, category, text) in cases {
            let e = GarageError::decode("ListBuckets", parse(body), body.as_bytes());
            assert!(
                matches!(&e, GarageError::Decode { category: c, .. } if *c == category),
                "{e:?}"
            );
            assert_eq!(
                e.to_string(),
                format!(
                    "ListBuckets: the response body does not parse ({text}); body starts with: {body}"
                )
            );
        }
        // Parsed from a Value, the error has no position.
        let source = serde_json::from_value::<Vec<u32>>(serde_json::json!({})).unwrap_err();
        let e = GarageError::decode("ListBuckets", source, b"{}");
        assert_eq!(
            e.to_string(),
            "ListBuckets: the response body does not parse (JSON of another shape); body starts with: {}"
        );
    }
}

#[cfg(test)]
mod leak_tests {
    //! Secrets in answer bodies never reach an error's text.

    use super::GarageError;
    use crate::transport::decode;
    use crate::{CreatedAdminToken, KeyInfo, NodeInfo, NodeResults, NodeTarget};

    const KEY_SECRET: &str = "b892c0665f0ada8a4755dae98baa3b133590e11dae3bcc1f9d431d0e37e5e1c4";
    const TOKEN_SECRET: &str = "mr4kq9TZ7vJxW2pLs0eN8hYc3uBdGf6a";

    /// Neither the Display nor the Debug of `e` holds `secret`.
    fn assert_hidden(e: &GarageError, secret: &str) {
        let shown = format!("{e}\n{e:?}");
        assert!(!shown.contains(secret), "the secret shows:\n{shown}");
    }

    #[test]
    fn truncated_create_key_answer() {
        let body = format!(
            r#"{{"accessKeyId":"GK31c2f218a2e44f485b94239e","name":"app","created":"2026-01-01T00:00:00Z","expiration":null,"expired":false,"secretAccessKey":"{KEY_SECRET}","permissions":{{"createBucket":fal"#
        );
        let e = decode::<KeyInfo>("CreateKey", body.as_bytes()).unwrap_err();
        assert!(matches!(e, GarageError::Decode { .. }), "{e:?}");
        assert_hidden(&e, KEY_SECRET);
        // What is not secret stays readable for diagnosis.
        assert!(e.to_string().contains("GK31c2f218a2e44f485b94239e"), "{e}");

        // Cut inside the secret: the part that arrived is still a secret.
        let cut = &body[..body.find(KEY_SECRET).unwrap() + 40];
        let e = decode::<KeyInfo>("CreateKey", cut.as_bytes()).unwrap_err();
        assert_hidden(&e, &KEY_SECRET[..40]);
    }

    #[test]
    fn wrong_shape_get_key_info_with_secret() {
        // Pretty-printed, blanks around the colon, and `buckets` of the wrong type.
        let body = format!(
            "{{\n  \"accessKeyId\" : \"GK31c2f218a2e44f485b94239e\",\n  \"name\" : \"app\",\n  \
             \"expired\" : false,\n  \"secretAccessKey\"\t:\n  \"{KEY_SECRET}\",\n  \
             \"permissions\" : {{}},\n  \"buckets\" : {{}}\n}}"
        );
        let e = decode::<KeyInfo>("GetKeyInfo", body.as_bytes()).unwrap_err();
        assert!(matches!(e, GarageError::Decode { .. }), "{e:?}");
        assert_hidden(&e, KEY_SECRET);
    }

    #[test]
    fn wrong_shape_created_token_with_escaped_quote() {
        let secret = r#"tok\"en-9f8e7d6c5b4a39281706"#;
        let body = format!(
            r#"{{"id":"a1b2c3","name":"ops","expired":false,"scope":"*","secretToken": "{secret}"}}"#
        );
        let e = decode::<CreatedAdminToken>("CreateAdminToken", body.as_bytes()).unwrap_err();
        assert!(matches!(e, GarageError::Decode { .. }), "{e:?}");
        assert_hidden(&e, "en-9f8e7d6c5b4a39281706");
    }

    #[test]
    fn node_local_envelope_of_the_wrong_shape() {
        // The envelope is read as a Value first; the excerpt is that Value written back.
        let body = format!(
            r#"{{"success":{{"aa00000000000000000000000000000000000000000000000000000000000000":{{"secretToken":"{TOKEN_SECRET}"}}}},"error":[]}}"#
        );
        let e = NodeResults::<NodeInfo>::decode("GetNodeInfo", &NodeTarget::All, body.as_bytes())
            .unwrap_err();
        assert!(matches!(e, GarageError::Decode { .. }), "{e:?}");
        assert_hidden(&e, TOKEN_SECRET);
    }

    #[test]
    fn parse_errors_do_not_quote_values() {
        // serde_json quotes the offending string; the error must not carry that text.
        let source = serde_json::from_str::<bool>(&format!("\"{TOKEN_SECRET}\"")).unwrap_err();
        assert!(source.to_string().contains(TOKEN_SECRET), "{source}");
        let e = GarageError::decode("CreateAdminToken", source, br#"{"secretToken": 1}"#);
        assert_hidden(&e, TOKEN_SECRET);
    }

    #[test]
    fn non_json_error_answers() {
        let body = format!(
            "<html><body><h1>500 Internal Server Error</h1><pre>upstream answered \
             {{\"secretToken\": \"{TOKEN_SECRET}\", \"id\": \"a1b2c3\"}}</pre></body></html>"
        );
        for status in [404, 500, 502] {
            let e = GarageError::from_status("CreateAdminToken", status, body.as_bytes());
            assert!(matches!(e, GarageError::Http { .. }), "{e:?}");
            assert_hidden(&e, TOKEN_SECRET);
            assert!(e.to_string().contains("a1b2c3"), "{e}");
        }
    }
}
