//! Redaction of secret-looking values in body text that an error keeps.
//!
//! Some answers carry secrets: `GetKeyInfo` with `showSecretKey`, `CreateKey` and `ImportKey`
//! hold `secretAccessKey`, `CreateAdminToken` holds `secretToken`. An error keeps an excerpt of
//! a body it could not use, and errors are logged and written into conditions, so the value of
//! every member whose name looks secret is replaced by `"<redacted>"` before the body is cut
//! to an excerpt.
//!
//! The bodies that reach an error are the unexpected ones: cut short, of another shape, or not
//! JSON at all (an HTML page quoting a JSON fragment). So this is a lexical pass, not a parse,
//! and it does not track whether it is inside a string: every `"` in the text is tried as the
//! start of a member name. A scan that tracked strings would be misled by one stray or escaped
//! quote in front of a secret member and take its name for the end of a string; trying every
//! quote finds the member wherever it stands, at the price of redacting, rarely, a value that
//! was not a member's value at all. Every step is bounded so the pass stays linear in the
//! length of the text, which an answer controls.

/// What a redacted value becomes: a JSON string, so that an excerpt of JSON still reads as JSON.
const REDACTED: &str = "\"<redacted>\"";

/// Longest member name looked at. Secret names are far shorter; the bound keeps the work per
/// quote constant.
const MAX_NAME: usize = 64;

/// Parts of a name that make its value secret. A name is compared in ASCII lower case with
/// everything but letters and digits dropped, so `secretAccessKey`, `secret_access_key` and
/// `Secret-Access-Key` all read `secretaccesskey`.
///
/// - `secret` and `token`: Garage's own secrets (`secretAccessKey`, `secretToken`, and the
///   `rpc_secret`, `admin_token` and `metrics_token` of its configuration);
/// - `password`, `passwd`, `privatekey`, `apikey`, `credential`: secrets under their other
///   usual names, from whatever may stand between the client and Garage;
/// - `authorization` and `cookie`: request headers that a proxy echoing a request would show,
///   with the bearer token in them.
///
/// `key` alone is not a part: in Garage's and S3's vocabulary most names holding it are
/// identifiers that a diagnosis needs (`accessKeyId`, `KeyPrefixEquals`, `keys`). See
/// [`SECRET_NAMES`] for the exact name `key`.
const SECRET_PARTS: &[&str] = &[
    "secret",
    "token",
    "password",
    "passwd",
    "privatekey",
    "apikey",
    "credential",
    "authorization",
    "cookie",
];

/// Whole names (compared as in [`SECRET_PARTS`]) whose value is secret. No answer the client
/// reads has a member named `key`; where one appears, it most often holds a bare key.
const SECRET_NAMES: &[&str] = &["key"];

/// `text` with the value of every member whose name looks secret replaced by `"<redacted>"`.
///
/// A member is a quoted name of at most [`MAX_NAME`] bytes, JSON blanks, `:`, JSON blanks and
/// a value. The value replaced is a string up to its closing quote (escapes honoured) or to the
/// end of the text when it is cut off; a bare scalar up to the next delimiter; and for an
/// object or array, everything to the end of the text, because where a container ends in text
/// that may not be JSON is a guess and a wrong guess would show the rest of it. `null`, `true`
/// and `false` are kept: they hold nothing and say whether the secret was there.
pub(super) fn redact_secrets(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    // `text[..copied]` is in `out`, or behind a redaction marker already written.
    let mut copied = 0;
    let mut from = 0;
    while let Some(offset) = bytes[from..].iter().position(|&b| b == b'"') {
        let quote = from + offset;
        from = quote + 1;
        let Some(value) = secret_value(bytes, quote) else {
            continue;
        };
        // Values found in order of their names start in order. One that starts inside the
        // previous redaction (a stray quote made two names out of one stretch) extends it.
        if value.start >= copied {
            out.push_str(&text[copied..value.start]);
            out.push_str(REDACTED);
        }
        copied = copied.max(value.end);
        if copied == bytes.len() {
            break;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// The byte range of the value to redact, when the quote at `quote` opens the name of a member
/// whose name looks secret and whose value is neither absent nor `null`, `true` or `false`.
/// Both ends of the range are next to an ASCII byte or at the end of the text, so they fall on
/// character boundaries.
fn secret_value(bytes: &[u8], quote: usize) -> Option<std::ops::Range<usize>> {
    let name_start = quote + 1;
    let name_len = bytes
        .get(name_start..)?
        .iter()
        .take(MAX_NAME + 1)
        .position(|&b| b == b'"')?;
    let name_end = name_start + name_len;
    if !is_secret_name(&bytes[name_start..name_end]) {
        return None;
    }
    let colon = skip_blanks(bytes, name_end + 1);
    if bytes.get(colon) != Some(&b':') {
        return None;
    }
    let start = skip_blanks(bytes, colon + 1);
    let end = match bytes.get(start)? {
        b'"' => string_end(bytes, start),
        b'{' | b'[' => bytes.len(),
        _ => scalar_end(bytes, start),
    };
    match &bytes[start..end] {
        b"" | b"null" | b"true" | b"false" => None,
        _ => Some(start..end),
    }
}

/// Whether a member of this name holds a secret (see [`SECRET_PARTS`]).
fn is_secret_name(name: &[u8]) -> bool {
    let folded: String = name
        .iter()
        .filter(|b| b.is_ascii_alphanumeric())
        .map(|b| char::from(b.to_ascii_lowercase()))
        .collect();
    SECRET_NAMES.contains(&folded.as_str()) || SECRET_PARTS.iter().any(|p| folded.contains(p))
}

/// The first index at or after `at` that is not a JSON blank.
fn skip_blanks(bytes: &[u8], at: usize) -> usize {
    let blanks = bytes
        .get(at..)
        .unwrap_or_default()
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        .count();
    at + blanks
}

/// The index just past the string that opens at `open`: past its first quote not escaped by a
/// backslash, or the end of the text when the string is cut off.
fn string_end(bytes: &[u8], open: usize) -> usize {
    let mut at = open + 1;
    while at < bytes.len() {
        match bytes[at] {
            // The escaped byte is skipped whatever it is; no byte of a multi-byte character
            // is a quote or a backslash, so landing inside one is harmless.
            b'\\' => at += 2,
            b'"' => return at + 1,
            _ => at += 1,
        }
    }
    bytes.len()
}

/// The end of a value that is not quoted (a number, a literal, or text that is not JSON): the
/// next delimiter or blank, or the end of the text.
fn scalar_end(bytes: &[u8], start: usize) -> usize {
    bytes[start..]
        .iter()
        .position(|b| matches!(b, b',' | b'}' | b']' | b'"' | b' ' | b'\t' | b'\n' | b'\r'))
        .map_or(bytes.len(), |n| start + n)
}

#[cfg(test)]
mod tests {
    use super::redact_secrets;

    /// What is redacted, as (case, text, redacted text).
    const CASES: &[(&str, &str, &str)] = &[
        (
            "a member",
            r#"{"secretAccessKey":"b892c0665f0a"}"#,
            r#"{"secretAccessKey":"<redacted>"}"#,
        ),
        (
            "the access key id is an identifier",
            r#"{"accessKeyId":"GK31c2","secretAccessKey":"b892"}"#,
            r#"{"accessKeyId":"GK31c2","secretAccessKey":"<redacted>"}"#,
        ),
        (
            "blanks around the colon",
            "{\"secretToken\" \t:\r\n  \"abc\" }",
            "{\"secretToken\" \t:\r\n  \"<redacted>\" }",
        ),
        (
            "escaped quotes and backslashes inside the value",
            r#"{"secretToken":"a\"b\\","id":"t1"}"#,
            r#"{"secretToken":"<redacted>","id":"t1"}"#,
        ),
        (
            "a value cut off at the end of the body",
            r#"{"name":"k","secretAccessKey":"b892c06"#,
            r#"{"name":"k","secretAccessKey":"<redacted>""#,
        ),
        (
            "a backslash as the last byte",
            r#"{"secretToken":"ab\"#,
            r#"{"secretToken":"<redacted>""#,
        ),
        (
            "a body cut before the value",
            r#"{"secretToken": "#,
            r#"{"secretToken": "#,
        ),
        (
            "a body cut before the colon",
            r#"{"secretToken""#,
            r#"{"secretToken""#,
        ),
        (
            "a JSON fragment inside HTML",
            r#"<pre>upstream: {"password": "hunter2"}</pre>"#,
            r#"<pre>upstream: {"password": "<redacted>"}</pre>"#,
        ),
        (
            "a stray quote in front of the member",
            r#"x" "secretToken": "abc", "id": "t1""#,
            r#"x" "secretToken": "<redacted>", "id": "t1""#,
        ),
        (
            "an escaped quote in front of the name",
            r#"{"note":"a\"secretToken": "abc"}"#,
            r#"{"note":"a\"secretToken": "<redacted>"}"#,
        ),
        (
            "a secret value that swallows the next member's name",
            r#""password": "a\"secretToken": "abc", "id": 1"#,
            r#""password": "<redacted>": "<redacted>", "id": 1"#,
        ),
        (
            "quoted text of another value before the member",
            r#"{"name":"say \"hi\"","secretToken":"x1"}"#,
            r#"{"name":"say \"hi\"","secretToken":"<redacted>"}"#,
        ),
        (
            "two secrets",
            r#"[{"secretToken":"a"},{"secretToken":"b"}]"#,
            r#"[{"secretToken":"<redacted>"},{"secretToken":"<redacted>"}]"#,
        ),
        (
            "numbers and unquoted text",
            r#"{"token": 12345, "password": hunter2 }"#,
            r#"{"token": "<redacted>", "password": "<redacted>" }"#,
        ),
        (
            "literals say whether a secret is there and are kept",
            r#"{"secretAccessKey":null,"token": true,"apiKey":false}"#,
            r#"{"secretAccessKey":null,"token": true,"apiKey":false}"#,
        ),
        (
            "a container under a secret name hides the rest",
            r#"{"credentials": ["a", "b"], "id": "x"}"#,
            r#"{"credentials": "<redacted>""#,
        ),
        (
            "other spellings",
            r#"{"SECRET_ACCESS_KEY":"a","admin-token":"b","Authorization":"Bearer c","private_key":"d","key":"e","Key":"f"}"#,
            r#"{"SECRET_ACCESS_KEY":"<redacted>","admin-token":"<redacted>","Authorization":"<redacted>","private_key":"<redacted>","key":"<redacted>","Key":"<redacted>"}"#,
        ),
        (
            "names with key in them are identifiers",
            r#"{"accessKeyId":"GK1","keys":["GK2"],"KeyPrefixEquals":"p/","keyId":"k"}"#,
            r#"{"accessKeyId":"GK1","keys":["GK2"],"KeyPrefixEquals":"p/","keyId":"k"}"#,
        ),
        (
            "a secret name that is not a member name",
            r#"["secretToken", "abc"]"#,
            r#"["secretToken", "abc"]"#,
        ),
        (
            "multi-byte text around and inside the value",
            r#"{"name":"日本","secretToken":"é🦀x","zone":"ü"}"#,
            r#"{"name":"日本","secretToken":"<redacted>","zone":"ü"}"#,
        ),
        (
            "escapes inside the value",
            r#"{"secretToken":"\u0041BC\n"}"#,
            r#"{"secretToken":"<redacted>"}"#,
        ),
        ("no quotes at all", "502 Bad Gateway", "502 Bad Gateway"),
        ("empty", "", ""),
    ];

    #[test]
    fn secret_values_are_redacted() {
        for (what, text, want) in CASES {
            assert_eq!(redact_secrets(text), *want, "{what}");
        }
    }

    #[test]
    fn over_long_names_are_not_looked_at() {
        // Longer than any secret name: the bound that keeps the pass linear.
        let name = format!("secret{}", "x".repeat(64));
        let text = format!(r#"{{"{name}":"v"}}"#);
        assert_eq!(redact_secrets(&text), text);
    }

    #[test]
    fn many_quotes_stay_linear() {
        // A body of nothing but escaped quotes, the worst case for a scan that restarts at
        // every quote; it must come back at once, unchanged.
        let text = r#"\""#.repeat(1 << 20);
        assert_eq!(redact_secrets(&text), text);
        // Every name is also the value of the one before it.
        let text = r#""token":"#.repeat(1 << 17);
        let redacted = redact_secrets(&text);
        assert!(redacted.starts_with(r#""token":"<redacted>":"<redacted>":"#));
        assert!(!redacted[8..].contains("token"), "{}", &redacted[..200]);
    }
}
